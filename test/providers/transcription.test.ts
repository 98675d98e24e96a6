/** Speech-to-text adapters against a loopback fake of each provider's HTTP API: request shape, auth, parsing, errors. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  endpoint,
  findTranscriptionProvider,
  type TranscriptionProviderSpec,
  transcribe,
} from '../../src/providers/transcription.js';
import { type FakeVoiceApi, startFakeVoiceApi } from '../helpers/fake-voice-api.js';

let api: FakeVoiceApi;
beforeAll(async () => {
  api = await startFakeVoiceApi({ transcript: 'turn on the lights', key: 'sk-test' });
});
afterAll(() => api.close());

const audio = { bytes: Buffer.from('OggS-fake-voice'), name: 'voice.ogg', mimeType: 'audio/ogg' };
const spec = (name: string) => findTranscriptionProvider(name) as TranscriptionProviderSpec;
const fast = { retryDelaysMs: [0, 0, 0], pollIntervalMs: 0 };

function run(name: string, extra: { language?: string; model?: string; apiKey?: string; base?: string } = {}) {
  const s = spec(name);
  return transcribe(
    {
      spec: s,
      apiKey: extra.apiKey ?? 'sk-test',
      apiBase: `${api.url}${extra.base ?? (s.wire === 'assemblyai' ? '/v2' : '/v1')}`,
      model: extra.model ?? s.defaultModel,
      ...(extra.language ? { language: extra.language } : {}),
      audio,
    },
    fast,
  );
}

describe('transcription providers', () => {
  it('knows upstream’s names, aliases and default models', () => {
    expect(spec('groq').defaultModel).toBe('whisper-large-v3');
    expect(spec('openai').defaultModel).toBe('whisper-1');
    expect(spec('openrouter').defaultModel).toBe('openai/whisper-1');
    expect(spec('mimo').name).toBe('xiaomi_mimo');
    expect(spec('xiaomiMimo').defaultModel).toBe('mimo-v2.5-asr');
    expect(spec('stepfun').defaultModel).toBe('stepaudio-2.5-asr');
    expect(spec('assemblyai').defaultModel).toBe('universal-3-pro,universal-2');
    expect(spec('silicon').defaultModel).toBe('FunAudioLLM/SenseVoiceSmall');
    expect(findTranscriptionProvider('nope')).toBeUndefined();
    expect(endpoint('https://x/v1/', 'audio/transcriptions')).toBe('https://x/v1/audio/transcriptions');
    expect(endpoint('https://x/v1/audio/transcriptions', 'audio/transcriptions')).toBe(
      'https://x/v1/audio/transcriptions',
    );
  });

  it('groq / openai / siliconflow: multipart upload with Bearer auth, model and language', async () => {
    for (const name of ['groq', 'openai', 'siliconflow']) {
      const before = api.requests.length;
      expect(await run(name, { language: 'en' })).toEqual({ ok: true, text: 'turn on the lights' });
      const request = api.requests.at(-1);
      expect(api.requests.length).toBe(before + 1);
      expect(request?.path).toBe('/v1/audio/transcriptions');
      expect(request?.headers.authorization).toBe('Bearer sk-test');
      expect(request?.fields.model).toBe(spec(name).defaultModel);
      expect(request?.fields.language).toBe('en');
      expect(request?.fields.file).toEqual({ filename: 'voice.ogg', size: audio.bytes.length, type: 'audio/ogg' });
    }
  });

  it('openrouter: JSON with base64 input_audio and its format name', async () => {
    expect(await run('openrouter')).toEqual({ ok: true, text: 'turn on the lights' });
    const body = api.requests.at(-1)?.fields as { model: string; input_audio: { data: string; format: string } };
    expect(api.requests.at(-1)?.headers['content-type']).toMatch(/^application\/json/);
    expect(body.model).toBe('openai/whisper-1');
    expect(body.input_audio).toEqual({ data: audio.bytes.toString('base64'), format: 'ogg' });
  });

  it('xiaomi mimo: chat completions with an input_audio data URL, language in asr_options', async () => {
    expect(await run('xiaomi_mimo', { language: 'zh' })).toEqual({ ok: true, text: 'turn on the lights' });
    const request = api.requests.at(-1);
    expect(request?.path).toBe('/v1/chat/completions');
    const body = request?.fields as {
      messages: { content: { input_audio: { data: string } }[] }[];
      asr_options: unknown;
    };
    expect(body.messages[0]?.content[0]?.input_audio.data).toBe(
      `data:audio/ogg;base64,${audio.bytes.toString('base64')}`,
    );
    expect(body.asr_options).toEqual({ language: 'zh' });
  });

  it('stepfun: base64 JSON to the SSE endpoint, the final event’s text', async () => {
    expect(await run('stepfun', { language: 'zh' })).toEqual({ ok: true, text: 'turn on the lights' });
    const request = api.requests.at(-1);
    expect(request?.path).toBe('/v1/audio/asr/sse');
    expect(request?.headers.accept).toBe('text/event-stream');
    const body = request?.fields as { audio: { data: string; input: Record<string, Record<string, unknown>> } };
    expect(body.audio.input.transcription).toEqual({ model: 'stepaudio-2.5-asr', enable_itn: true, language: 'zh' });
    expect(body.audio.input.format).toEqual({ type: 'ogg' });
  });

  it('assemblyai: raw upload, transcript request with speech_models, polling until completed; raw key auth', async () => {
    const before = api.requests.length;
    expect(await run('assemblyai', { language: 'en' })).toEqual({ ok: true, text: 'turn on the lights' });
    const calls = api.requests.slice(before);
    expect(calls.map((r) => `${r.method} ${r.path}`)).toEqual([
      'POST /v2/upload',
      'POST /v2/transcript',
      'GET /v2/transcript/tr-1',
      'GET /v2/transcript/tr-1',
    ]);
    expect(calls[0]?.headers.authorization).toBe('sk-test');
    expect(calls[0]?.headers['content-type']).toBe('application/octet-stream');
    expect(calls[0]?.body.equals(audio.bytes)).toBe(true);
    expect(calls[1]?.fields).toEqual({
      audio_url: 'https://cdn.assemblyai.test/upload/abc',
      speech_models: ['universal-3-pro', 'universal-2'],
      language_code: 'en',
    });
  });

  it('retries 5xx and 429, not 401; errors are data naming the provider and status', async () => {
    api.failNext('/v1/audio/transcriptions', 503);
    api.failNext('/v1/audio/transcriptions', 429);
    const before = api.requests.length;
    expect(await run('groq')).toEqual({ ok: true, text: 'turn on the lights' });
    expect(api.requests.length - before).toBe(3);

    const wrongKey = await run('groq', { apiKey: 'sk-wrong' });
    expect(wrongKey.ok).toBe(false);
    expect(!wrongKey.ok && wrongKey.error).toMatch(/^groq answered HTTP 401: .*bad key/);

    for (let i = 0; i < 4; i++) api.failNext('/v1/audio/transcriptions', 502);
    const down = await run('openai');
    expect(!down.ok && down.error).toMatch(/openai answered HTTP 502/);
  });

  it('malformed answers and unreachable servers are errors, not throws', async () => {
    api.failNext('/v1/audio/transcriptions', 200, 'not json');
    const bad = await run('groq');
    expect(!bad.ok && bad.error).toMatch(/malformed JSON/);
    api.failNext('/v1/audio/transcriptions', 200, '{"nothing":1}');
    const noText = await run('groq');
    expect(!noText.ok && noText.error).toMatch(/no text/);
    const closed = await transcribe(
      { spec: spec('groq'), apiKey: 'k', apiBase: 'http://127.0.0.1:9/v1', model: 'm', audio },
      fast,
    );
    expect(!closed.ok && closed.error).toMatch(/groq request failed/);
    api.failNext('/v2/transcript', 200, '{"status":"queued"}');
    const noId = await run('assemblyai');
    expect(!noId.ok && noId.error).toMatch(/no id/);
  });
});
