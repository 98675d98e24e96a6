/** The WebUI's voice input: nanobot's `transcribe_audio` frame against a fake Groq transcription API. */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigSchema } from '../../../src/config/schema.js';
import { createVoiceService } from '../../../src/providers/voice.js';
import { type FakeVoiceApi, startFakeVoiceApi } from '../../helpers/fake-voice-api.js';
import { connect, type StartedChannel, startChannel, type TestClient } from './helpers.js';

const open: { started: StartedChannel; client: TestClient; api: FakeVoiceApi }[] = [];
afterEach(async () => {
  for (const { started, client, api } of open.splice(0)) {
    await client.close();
    await started.channel.stop();
    await api.close();
  }
});

async function start(transcription: Record<string, unknown>, key = 'gsk-1') {
  const api = await startFakeVoiceApi({ transcript: 'dictated words', key: 'gsk-1' });
  const config = ConfigSchema.parse({
    providers: { groq: { apiKey: key, apiBase: `${api.url}/v1` } },
    transcription,
  });
  const voice = createVoiceService({ config: () => config, dir: '/nonexistent', http: { retryDelaysMs: [0, 0, 0] } });
  const started = await startChannel({}, { voice });
  const client = await connect(started.port, { token: started.token, clientId: 'webui' });
  open.push({ started, client, api });
  return { started, client, api };
}

const audio = (mime: string, bytes = Buffer.from('webm-opus-recording')) =>
  `data:${mime};base64,${bytes.toString('base64')}`;

describe('transcribe_audio', () => {
  it('transcribes a recording and answers transcription_result; the temp file is gone', async () => {
    const { client, api, started } = await start({ provider: 'groq', language: 'de' });
    client.send({
      type: 'transcribe_audio',
      request_id: 'r1',
      data_url: audio('audio/webm;codecs=opus'),
      duration_ms: 1500,
    });
    expect(await client.next((f) => f.event.startsWith('transcription_'))).toEqual({
      event: 'transcription_result',
      request_id: 'r1',
      text: 'dictated words',
    });
    const upload = api.to('/audio/transcriptions')[0];
    expect(upload?.fields).toMatchObject({ model: 'whisper-large-v3', language: 'de' });
    expect((upload?.fields.file as { type: string } | undefined)?.type).toBe('audio/webm');
    expect(readdirSync(join(started.dataDir, 'media', 'webui-transcription'))).toEqual([]);
  });

  it('answers nanobot’s error details', async () => {
    const { client } = await start({ provider: 'groq', maxDurationSec: 10, maxUploadMb: 0.5 });
    const ask = async (frame: Record<string, unknown>) => {
      client.send({ type: 'transcribe_audio', request_id: 'r', ...frame });
      return client.next((f) => f.event.startsWith('transcription_'));
    };
    expect(await ask({})).toMatchObject({ detail: 'missing_audio', request_id: 'r' });
    expect(await ask({ data_url: audio('audio/webm'), duration_ms: 12_000 })).toMatchObject({ detail: 'duration' });
    expect(await ask({ data_url: audio('image/png') })).toMatchObject({ detail: 'mime' });
    expect(await ask({ data_url: 'data:audio/webm,plain' })).toMatchObject({ detail: 'mime' });
    expect(await ask({ data_url: audio('audio/webm', Buffer.alloc(512 * 1024 + 10)) })).toMatchObject({
      detail: 'size',
    });
    expect(await ask({ data_url: 'data:audio/webm;base64,' })).toMatchObject({ detail: 'decode' });
    client.send({ type: 'transcribe_audio', request_id: 'x'.repeat(81) });
    expect(await client.next((f) => f.event.startsWith('transcription_'))).toEqual({
      event: 'transcription_error',
      detail: 'invalid_request',
    });
  });

  it('disabled, no key, and a provider failure', async () => {
    const off = await start({ enabled: false });
    off.client.send({ type: 'transcribe_audio', request_id: 'a', data_url: audio('audio/ogg') });
    expect(await off.client.next((f) => f.event.startsWith('transcription_'))).toMatchObject({ detail: 'disabled' });

    const noKey = await start({ provider: 'groq' }, '');
    noKey.client.send({ type: 'transcribe_audio', request_id: 'b', data_url: audio('audio/ogg') });
    expect(await noKey.client.next((f) => f.event.startsWith('transcription_'))).toEqual({
      event: 'transcription_error',
      request_id: 'b',
      detail: 'not_configured',
      provider: 'groq',
    });

    const wrong = await start({ provider: 'groq' }, 'gsk-wrong');
    wrong.client.send({ type: 'transcribe_audio', request_id: 'c', data_url: audio('audio/ogg') });
    expect(await wrong.client.next((f) => f.event.startsWith('transcription_'))).toMatchObject({
      request_id: 'c',
      detail: 'failed',
      provider: 'groq',
      message: expect.stringMatching(/HTTP 401/),
    });
  });
});
