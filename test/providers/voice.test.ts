/** The voice service: nanobot's config resolution, format conversion only where needed, and spoken replies. */
import { chmodSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigSchema } from '../../src/config/schema.js';
import { createVoiceService, resolveSpeech, resolveTranscription } from '../../src/providers/voice.js';
import { type FakeVoiceApi, OGG_BYTES, startFakeVoiceApi } from '../helpers/fake-voice-api.js';

let api: FakeVoiceApi;
beforeAll(async () => {
  api = await startFakeVoiceApi({ transcript: 'spoken words' });
});
afterAll(() => api.close());

const config = (raw: Record<string, unknown>) => ConfigSchema.parse(raw);
const fast = { retryDelaysMs: [0, 0, 0], pollIntervalMs: 0 };

describe('resolveTranscription', () => {
  it('defaults to groq (enabled, no key: not configured), as nanobot does', () => {
    const t = resolveTranscription(config({}));
    expect(t).toMatchObject({ enabled: true, provider: 'groq', model: 'whisper-large-v3', configured: false });
    expect(t.apiBase).toBe('https://api.groq.com/openai/v1');
  });

  it('takes the key and base from providers.<name>, else the provider’s variable', () => {
    const fromConfig = resolveTranscription(
      config({
        transcription: { provider: 'openai' },
        providers: { openai: { apiKey: 'sk-1', apiBase: 'http://h/v1' } },
      }),
    );
    expect(fromConfig).toMatchObject({ apiKey: 'sk-1', apiBase: 'http://h/v1', keySource: 'providers.openai.apiKey' });
    const fromEnv = resolveTranscription(config({ transcription: { provider: 'mimo' } }), { MIMO_API_KEY: 'mk' });
    expect(fromEnv).toMatchObject({
      provider: 'xiaomi_mimo',
      apiKey: 'mk',
      keySource: '$MIMO_API_KEY',
      configured: true,
    });
    const camel = resolveTranscription(
      config({ transcription: { provider: 'xiaomi_mimo' }, providers: { xiaomiMimo: { apiKey: 'x' } } }),
    );
    expect(camel.apiKey).toBe('x');
  });

  it('falls back to the deprecated channels.transcriptionProvider / transcriptionLanguage', () => {
    const legacy = resolveTranscription(
      config({ channels: { transcriptionProvider: 'openai', transcriptionLanguage: 'de' } }),
    );
    expect(legacy).toMatchObject({ provider: 'openai', language: 'de', model: 'whisper-1' });
    const top = resolveTranscription(
      config({ transcription: { provider: 'groq', language: 'en' }, channels: { transcriptionLanguage: 'de' } }),
    );
    expect(top).toMatchObject({ provider: 'groq', language: 'en' });
  });

  it('a providers.<name> block with an apiBase is an OpenAI-compatible server (a local whisper), key optional', () => {
    const local = resolveTranscription(
      config({
        transcription: { provider: 'whisper' },
        providers: { whisper: { apiBase: 'http://127.0.0.1:8080/v1' } },
      }),
    );
    expect(local).toMatchObject({ provider: 'whisper', configured: true, apiBase: 'http://127.0.0.1:8080/v1' });
    expect(local.spec.wire).toBe('whisper');
    // Unknown and without a block: nanobot's fallback to groq.
    expect(resolveTranscription(config({ transcription: { provider: 'nope' } })).provider).toBe('groq');
  });
});

describe('voice service', () => {
  const dir = mkdtempSync(join(tmpdir(), 'nb-voice-'));

  it('transcribes a file through a local OpenAI-compatible server, without a key', async () => {
    const audio = join(dir, 'note.ogg');
    writeFileSync(audio, 'OggS');
    const voice = createVoiceService({
      config: () =>
        config({ transcription: { provider: 'local' }, providers: { local: { apiBase: `${api.url}/v1` } } }),
      dir,
      http: fast,
    });
    expect(voice.transcriptionReady()).toBe(true);
    expect(await voice.transcribeFile(audio)).toEqual({ ok: true, text: 'spoken words' });
    expect(api.requests.at(-1)?.headers.authorization).toBeUndefined();
  });

  it('converts a format the provider cannot take with ffmpeg, and names ffmpeg when it is missing', async () => {
    const amr = join(dir, 'wechat.amr');
    writeFileSync(amr, '#!AMR\n');
    const settings = config({
      transcription: { provider: 'groq' },
      providers: { groq: { apiKey: 'g', apiBase: `${api.url}/v1` } },
    });
    const missing = createVoiceService({ config: () => settings, dir, http: fast, ffmpeg: join(dir, 'no-ffmpeg') });
    const result = await missing.transcribeFile(amr);
    expect(result).toEqual({
      ok: false,
      error: expect.stringMatching(
        /groq cannot take \.amr audio: converting \.amr audio needs ffmpeg, which is not installed/,
      ),
    });
    // A stand-in ffmpeg (the real one's argv): writes the output file it is given.
    const fake = join(dir, 'ffmpeg');
    writeFileSync(fake, '#!/bin/sh\nfor last; do :; done\nprintf RIFFWAVE > "$last"\n');
    chmodSync(fake, 0o755);
    const converting = createVoiceService({ config: () => settings, dir, http: fast, ffmpeg: fake });
    expect(await converting.transcribeFile(amr)).toEqual({ ok: true, text: 'spoken words' });
    const file = api.requests.at(-1)?.fields.file as { filename: string; type: string; size: number };
    expect(file).toMatchObject({ type: 'audio/wav', size: 8 });
    expect(file.filename).toMatch(/\.wav$/);
    // The converted copy is deleted; the original stays.
    expect(readdirSync(dir).filter((n) => n.endsWith('.wav'))).toEqual([]);
    // A decoder the ffmpeg lacks is named.
    writeFileSync(fake, '#!/bin/sh\necho "Decoder (codec amr_nb) not found for input stream #0:0" >&2\nexit 1\n');
    const noCodec = createVoiceService({ config: () => settings, dir, http: fast, ffmpeg: fake });
    const failed = await noCodec.transcribeFile(amr);
    expect(!failed.ok && failed.error).toMatch(/no decoder for \.amr audio \(Decoder \(codec amr_nb\) not found/);
  });

  it('speaks a reply through /audio/speech and writes the audio; errors are data', async () => {
    const settings = config({
      tts: { when: 'voice-in', provider: 'openai', voice: 'nova' },
      providers: { openai: { apiKey: 'sk-tts', apiBase: `${api.url}/v1` } },
    });
    const voice = createVoiceService({ config: () => settings, dir, http: fast });
    expect(voice.speaks(true)).toBe(true);
    expect(voice.speaks(false)).toBe(false);
    const spoken = await voice.speak('Hello there.');
    expect(spoken.ok).toBe(true);
    if (spoken.ok) {
      expect(spoken.path).toMatch(/reply\.ogg$/);
      expect(readFileSync(spoken.path).equals(OGG_BYTES)).toBe(true);
    }
    const request = api.requests.at(-1);
    expect(request?.path).toBe('/v1/audio/speech');
    expect(request?.headers.authorization).toBe('Bearer sk-tts');
    expect(request?.fields).toEqual({
      model: 'gpt-4o-mini-tts',
      voice: 'nova',
      input: 'Hello there.',
      response_format: 'opus',
    });
    api.failNext('/v1/audio/speech', 400, '{"error":{"message":"unknown voice"}}');
    expect(await voice.speak('Again.')).toEqual({
      ok: false,
      error: expect.stringMatching(/HTTP 400: .*unknown voice/),
    });
    expect(resolveSpeech(config({})).when).toBe('never');
    expect(createVoiceService({ config: () => config({}), dir }).speaks(true)).toBe(false);
  });
});
