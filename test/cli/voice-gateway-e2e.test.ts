/**
 * The built `nanobot gateway` with voice: a Telegram voice note (fake Bot API) is transcribed by the bundle through
 * `transcription` + `providers.groq` (fake Groq), answered by the fake LLM, and — `tts.when: "voice-in"` — also sent
 * back as a voice note synthesised by the fake `/audio/speech`. The transcription key never reaches the output.
 * `nanobot doctor` names where the transcription key comes from.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { eventually } from '../channels/contract.js';
import { startFakeBotApi } from '../channels/telegram/fake-bot-api.js';
import { type FakeLLM, startFakeLLM } from '../helpers/fake-llm.js';
import { startFakeVoiceApi } from '../helpers/fake-voice-api.js';
import { editConfig, runCli, spawnCli, tempHome } from './cli-helpers.js';

const OWNER = { id: 501, username: 'owner_user' };
const KEY = 'gsk-e2e-secret-key-0123456789';

let cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  cleanups = [];
});

function configure(home: string, llm: FakeLLM, voiceUrl: string, extra: (c: Record<string, unknown>) => void) {
  editConfig(home, (c) => {
    c.agents.defaults.provider = 'custom';
    c.agents.defaults.model = 'test-model';
    c.providers.custom = { apiKey: 'k', apiBase: `${llm.url}/v1` };
    c.providers.groq = { apiKey: KEY, apiBase: `${voiceUrl}/v1` };
    c.providers.openai = { apiKey: KEY, apiBase: `${voiceUrl}/v1` };
    extra(c as unknown as Record<string, unknown>);
  });
}

describe('nanobot gateway with transcription and tts', () => {
  it('transcribes a Telegram voice note, answers it, and speaks the answer as a voice note', async () => {
    const api = await startFakeBotApi();
    const llm = await startFakeLLM();
    const voice = await startFakeVoiceApi({ transcript: 'remind me to water the plants', key: KEY });
    cleanups.push(
      () => api.close(),
      () => llm.close(),
      () => voice.close(),
    );
    const home = tempHome();
    expect((await runCli(['onboard'], home)).code).toBe(0);
    configure(home, llm, voice.url, (c) => {
      c.transcription = { provider: 'groq', language: 'en' };
      c.tts = { when: 'voice-in', provider: 'openai', voice: 'alloy' };
      const channels = c.channels as Record<string, Record<string, unknown>>;
      channels.websocket = { ...channels.websocket, enabled: false };
      channels.telegram = {
        enabled: true,
        token: api.token,
        apiBase: api.url,
        pollTimeout: 1,
        allowFrom: [`@${OWNER.username}`],
      };
    });
    const gateway = spawnCli(['gateway', '--port', '0'], home);
    cleanups.push(async () => {
      gateway.child.kill('SIGTERM');
      await gateway.exited;
    });
    const fail = (err: unknown) => {
      throw new Error(`${String(err)}\n${gateway.output()}`);
    };
    await eventually(() => expect(api.callsOf('getUpdates').length).toBeGreaterThan(0), 30_000).catch(fail);

    llm.enqueue({ text: 'I will remind you.' });
    api.userSays({ chatId: OWNER.id, from: OWNER, voice: { content: Buffer.from('OggS-a-voice-note') } });
    await eventually(() => expect(api.callsOf('sendVoice')).toHaveLength(1), 20_000).catch(fail);
    expect(api.messagesIn(OWNER.id).map((m) => m.text)).toEqual(['I will remind you.']);
    const user = JSON.stringify((llm.requests.at(-1)?.body.messages as unknown[] | undefined)?.at(-1));
    expect(user).toContain('[transcription: remind me to water the plants]');
    expect(voice.to('/audio/transcriptions')[0]?.fields).toMatchObject({ model: 'whisper-large-v3', language: 'en' });
    expect(voice.to('/audio/speech')[0]?.fields).toMatchObject({ input: 'I will remind you.', voice: 'alloy' });
    expect(gateway.output()).not.toContain(KEY);

    const doctor = await runCli(['doctor'], home);
    expect(doctor.stdout).toContain(
      '✓ Transcription: groq whisper-large-v3 (en), key gsk-…6789 from providers.groq.apiKey',
    );
    expect(doctor.stdout).toMatch(/✓ Spoken replies: openai gpt-4o-mini-tts, voice alloy, when voice-in, key /);
  });

  it('doctor fails when a chosen transcription provider has no key, and only informs when none is chosen', async () => {
    const home = tempHome();
    expect((await runCli(['onboard'], home)).code).toBe(0);
    const llm = await startFakeLLM();
    cleanups.push(() => llm.close());
    configure(home, llm, 'http://127.0.0.1:9', (c) => {
      (c.providers as Record<string, unknown>).groq = {};
    });
    const quiet = await runCli(['doctor'], home);
    expect(quiet.stdout).toContain('· Transcription: voice messages stay audio files');
    configure(home, llm, 'http://127.0.0.1:9', (c) => {
      (c.providers as Record<string, unknown>).assemblyai = {};
      c.transcription = { provider: 'assemblyai' };
    });
    const missing = await runCli(['doctor'], home);
    expect(missing.code).toBe(1);
    expect(missing.stdout).toContain('✗ Transcription: assemblyai universal-3-pro,universal-2 has no API key');
    expect(missing.stdout).toContain('Set providers.assemblyai.apiKey (or $ASSEMBLYAI_API_KEY).');
  });
});
