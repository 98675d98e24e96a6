/**
 * The real `nanobot gateway` with the Telegram channel (real grammy against the fake Bot API) is SIGKILLed after an
 * answer was saved but before Telegram took it (the fake holds every send: a hung platform). The restarted gateway
 * delivers that answer, once; a third start does not send it again. A gateway killed before the answer was saved
 * tells the chat, once, that its message was not answered.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { INTERRUPTED_NOTICE } from '../../src/session/delivery.js';
import { eventually } from '../channels/contract.js';
import { type FakeBotApi, startFakeBotApi } from '../channels/telegram/fake-bot-api.js';
import { OWNER, writeTelegramConfig } from '../channels/telegram/helpers.js';
import { visibleText } from '../channels/telegram/telegram-html.js';
import { type FakeLLM, startFakeLLM } from '../helpers/fake-llm.js';

const BIN = join(import.meta.dirname, '..', '..', 'bin', 'nanobot.js');
const children: ChildProcess[] = [];
let api: FakeBotApi | undefined;
let llm: FakeLLM | undefined;

afterEach(async () => {
  for (const child of children.splice(0)) child.kill('SIGKILL');
  await api?.close();
  await llm?.close();
});

function startGateway(home: string) {
  const child = spawn(process.execPath, [BIN, 'gateway', '--port', '0'], {
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr?.on('data', (d: Buffer) => {
    stderr += d.toString();
  });
  children.push(child);
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
  return { child, exited, stderr: () => stderr };
}

const ANSWER = 'The answer is 42, saved before the crash.';

describe('an answer saved but not delivered when the gateway was SIGKILLed', () => {
  it('is delivered by the next gateway, exactly once', async () => {
    api = await startFakeBotApi();
    llm = await startFakeLLM([{ text: ANSWER }, { text: 'Second answer.' }]);
    const { home, dataDir } = await writeTelegramConfig(api, llm);
    const shown = () => (api?.messagesIn(OWNER.id) ?? []).map((m) => visibleText(m.text));
    const sessionFile = () => {
      const root = join(dataDir, 'sessions');
      const [ws] = existsSync(root) ? readdirSync(root).filter((n) => /^[0-9a-f]{32}$/.test(n)) : [];
      return join(root, ws ?? '-', `${Buffer.from(`telegram:${OWNER.id}`).toString('base64url')}.jsonl`);
    };
    const saved = () => (existsSync(sessionFile()) ? readFileSync(sessionFile(), 'utf8') : '');

    const first = startGateway(home);
    const polls = () => api?.callsOf('getUpdates').length ?? 0;
    await eventually(() => expect(polls()).toBeGreaterThan(0), 15_000);
    api.holdSends(true);
    api.userSays({ chatId: OWNER.id, from: OWNER, text: 'what is the answer?' });
    // Saved (with its delivery marker, in the same append) while every send hangs: then the process dies.
    await eventually(() => expect(saved()).toContain(ANSWER), 15_000);
    expect(saved()).toContain('"pending_delivery"');
    first.child.kill('SIGKILL');
    await first.exited;
    expect(shown()).toEqual([]);

    api.holdSends(false);
    const second = startGateway(home);
    await eventually(() => expect(shown()).toContain(ANSWER), 15_000);
    expect(second.stderr()).toMatch(/delivering an answer saved before the last stop/);
    // A new message is answered after the redelivered one, in order, and nothing is sent twice.
    const pollsBefore = polls();
    await eventually(() => expect(polls()).toBeGreaterThan(pollsBefore), 15_000);
    api.userSays({ chatId: OWNER.id, from: OWNER, text: 'and now?' });
    await eventually(() => expect(shown()).toContain('Second answer.'), 15_000);
    second.child.kill('SIGTERM');
    await second.exited;

    const third = startGateway(home);
    const pollsThird = polls();
    await eventually(() => expect(polls()).toBeGreaterThan(pollsThird), 15_000);
    llm.enqueue({ text: 'Third answer.' });
    api.userSays({ chatId: OWNER.id, from: OWNER, text: 'once more' });
    await eventually(() => expect(shown()).toContain('Third answer.'), 15_000);
    expect(shown().filter((text) => text === ANSWER)).toHaveLength(1);
    expect(shown()).toEqual([ANSWER, 'Second answer.', 'Third answer.']);
    expect(third.stderr()).not.toMatch(/delivering an answer/);
  }, 90_000);

  it('a turn killed before its answer was saved: the next gateway tells the chat, once', async () => {
    api = await startFakeBotApi();
    let requested!: () => void;
    const reachedModel = new Promise<void>((resolve) => {
      requested = resolve;
    });
    // The model never answers the first request: the gateway dies while waiting for it.
    llm = await startFakeLLM([
      () => {
        requested();
        return new Promise(() => undefined);
      },
      { text: 'Answered now.' },
    ]);
    const { home } = await writeTelegramConfig(api, llm);
    const shown = () => (api?.messagesIn(OWNER.id) ?? []).map((m) => visibleText(m.text));
    const polls = () => api?.callsOf('getUpdates').length ?? 0;

    const first = startGateway(home);
    await eventually(() => expect(polls()).toBeGreaterThan(0), 15_000);
    api.userSays({ chatId: OWNER.id, from: OWNER, text: 'a question that will be cut off' });
    await reachedModel; // the user's message is on disk before the model is asked
    first.child.kill('SIGKILL');
    await first.exited;

    const second = startGateway(home);
    await eventually(() => expect(shown()).toEqual([INTERRUPTED_NOTICE]), 15_000);
    expect(second.stderr()).toMatch(/its last turn was interrupted/);
    const pollsBefore = polls();
    await eventually(() => expect(polls()).toBeGreaterThan(pollsBefore), 15_000);
    api.userSays({ chatId: OWNER.id, from: OWNER, text: 'asking again' });
    await eventually(() => expect(shown()).toContain('Answered now.'), 15_000);
    second.child.kill('SIGTERM');
    await second.exited;

    const third = startGateway(home);
    const pollsThird = polls();
    await eventually(() => expect(polls()).toBeGreaterThan(pollsThird), 15_000);
    llm.enqueue({ text: 'Third.' });
    api.userSays({ chatId: OWNER.id, from: OWNER, text: 'once more' });
    await eventually(() => expect(shown()).toContain('Third.'), 15_000);
    expect(shown()).toEqual([INTERRUPTED_NOTICE, 'Answered now.', 'Third.']);
    expect(third.stderr()).not.toMatch(/interrupted by the last stop|delivering an answer/);
  }, 90_000);
});
