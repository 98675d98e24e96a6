/**
 * Voice through a real gateway: a Telegram voice note is transcribed (fake Groq API) before the turn, the model sees
 * the transcript marked as one with the audio still attached, and with `tts.when: "voice-in"` the answer comes back
 * as a voice note too (fake `/audio/speech`, Telegram's sendVoice).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import type { Gateway } from '../../../src/gateway/lifecycle.js';
import { type FakeLLM, startFakeLLM } from '../../helpers/fake-llm.js';
import { type FakeVoiceApi, OGG_BYTES, startFakeVoiceApi } from '../../helpers/fake-voice-api.js';
import { eventually } from '../contract.js';
import { startChannelGateway } from '../gateway-harness.js';
import { type FakeBotApi, startFakeBotApi } from './fake-bot-api.js';
import { healthOf, OWNER, writeTelegramConfig } from './helpers.js';
import { visibleText } from './telegram-html.js';

interface Run {
  gateway: Gateway;
  api: FakeBotApi;
  llm: FakeLLM;
  voice: FakeVoiceApi;
}
const open: Run[] = [];
afterEach(async () => {
  for (const run of open.splice(0)) {
    await run.gateway.shutdown('test end');
    await Promise.all([run.api.close(), run.llm.close(), run.voice.close()]);
  }
});

async function start(extra: Record<string, unknown>): Promise<Run> {
  const api = await startFakeBotApi();
  const llm = await startFakeLLM();
  const voice = await startFakeVoiceApi({ transcript: 'what is the weather', key: 'gsk-voice' });
  const files = await writeTelegramConfig(api, llm);
  const config = JSON.parse(readFileSync(files.configPath, 'utf8'));
  config.providers.groq = { apiKey: 'gsk-voice', apiBase: `${voice.url}/v1` };
  config.providers.openai = { apiKey: 'gsk-voice', apiBase: `${voice.url}/v1` };
  Object.assign(config, extra);
  writeFileSync(files.configPath, JSON.stringify(config));
  const gateway = await startChannelGateway(files);
  const run = { gateway, api, llm, voice };
  open.push(run);
  await eventually(async () => expect((await healthOf(gateway)).channels.telegram).toBe('running'));
  return run;
}

const lastUser = (run: Run) =>
  JSON.stringify((run.llm.requests.at(-1)?.body.messages as unknown[] | undefined)?.at(-1));

describe('telegram voice notes', () => {
  it('transcribes a voice note before the turn and answers it; the audio stays attached', async () => {
    const run = await start({ transcription: { provider: 'groq', language: 'en' } });
    run.llm.enqueue({ text: 'Sunny and warm.' });
    run.api.userSays({ chatId: OWNER.id, from: OWNER, voice: { content: Buffer.from('OggS-voice-note') } });
    await eventually(() =>
      expect(run.api.messagesIn(OWNER.id).map((m) => visibleText(m.text))).toEqual(['Sunny and warm.']),
    );
    const upload = run.voice.to('/audio/transcriptions')[0];
    expect(upload?.headers.authorization).toBe('Bearer gsk-voice');
    expect(upload?.fields).toMatchObject({ model: 'whisper-large-v3', language: 'en' });
    expect((upload?.fields.file as { filename: string } | undefined)?.filename).toMatch(/voice\.ogg$/);
    expect(lastUser(run)).toContain('[transcription: what is the weather]');
    expect(lastUser(run)).toMatch(/voice\.ogg/);
    // tts.when defaults to never: no speech requested, no voice note sent.
    expect(run.voice.to('/audio/speech')).toHaveLength(0);
    expect(run.api.callsOf('sendVoice')).toHaveLength(0);
  });

  it('with tts.when "voice-in", answers a voice note with a voice note too, and a typed message with text only', async () => {
    const run = await start({
      transcription: { provider: 'groq' },
      tts: { when: 'voice-in', provider: 'openai', voice: 'nova', model: 'tts-1' },
    });
    run.llm.enqueue({ text: 'Sunny and warm.' }, { text: 'Typed answer.' });
    run.api.userSays({ chatId: OWNER.id, from: OWNER, voice: { content: Buffer.from('OggS-voice-note') } });
    await eventually(() => expect(run.api.callsOf('sendVoice')).toHaveLength(1));
    expect(run.api.messagesIn(OWNER.id).map((m) => visibleText(m.text))).toEqual(['Sunny and warm.']);
    const speech = run.voice.to('/audio/speech')[0];
    expect(speech?.headers.authorization).toBe('Bearer gsk-voice');
    expect(speech?.fields).toMatchObject({
      model: 'tts-1',
      voice: 'nova',
      input: 'Sunny and warm.',
      response_format: 'opus',
    });
    const sent = run.api.callsOf('sendVoice')[0];
    expect(sent?.params.chat_id).toBe(OWNER.id);
    expect(Object.values(sent?.files ?? {}).map((f) => f.size)).toEqual([OGG_BYTES.length]);
    expect(Object.values(sent?.files ?? {})[0]?.name).toMatch(/reply\.ogg$/);

    run.api.userSays({ chatId: OWNER.id, from: OWNER, text: 'and tomorrow?' });
    await eventually(() => expect(run.api.messagesIn(OWNER.id)).toHaveLength(2));
    expect(run.api.callsOf('sendVoice')).toHaveLength(1);
  });

  it('a failed transcription is named in the message; the turn still runs with the audio attached', async () => {
    const run = await start({ transcription: { provider: 'groq' } });
    for (let i = 0; i < 4; i++) run.voice.failNext('/v1/audio/transcriptions', 401, '{"error":"invalid api key"}');
    run.llm.enqueue({ text: 'I could not hear that.' });
    run.api.userSays({ chatId: OWNER.id, from: OWNER, voice: { content: Buffer.from('OggS-voice-note') } });
    await eventually(() => expect(run.api.messagesIn(OWNER.id)).toHaveLength(1));
    expect(lastUser(run)).toMatch(/not transcribed: groq answered HTTP 401/);
  });
});
