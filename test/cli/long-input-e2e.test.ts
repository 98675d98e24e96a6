/**
 * One long unbroken string must not freeze the built CLI (issue 15, item 5): the exact tokenizer is quadratic on a
 * run without spaces, and it runs on the main thread. No timing assertions: a freeze shows as the test timing out
 * (with the old code, 2 MB of one letter never finished and 300 KB held `serve` for over a minute).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { eventually } from '../channels/contract.js';
import { freePort } from '../channels/websocket/gateway-helpers.js';
import { type FakeLLM, type FakeReply, startFakeLLM } from '../helpers/fake-llm.js';
import { editConfig, tempHome } from './cli-helpers.js';

const BIN = join(import.meta.dirname, '..', '..', 'bin', 'nanobot.js');
const children: ChildProcess[] = [];
let fake: FakeLLM | undefined;

afterEach(async () => {
  // A frozen child would spin on after a timed-out test: stop the ones this file started.
  for (const child of children.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
  await fake?.close();
  fake = undefined;
});

function start(args: string[], home: string): { child: ChildProcess; done: Promise<{ code: number; stdout: string }> } {
  const child = spawn(process.execPath, [BIN, ...args], {
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  const out: Buffer[] = [];
  child.stdout?.on('data', (d: Buffer) => out.push(d));
  child.stderr?.resume();
  const done = new Promise<{ code: number; stdout: string }>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => resolve({ code: code ?? -1, stdout: Buffer.concat(out).toString('utf8') }));
  });
  return { child, done };
}

async function configuredHome(llm: FakeLLM): Promise<string> {
  const home = tempHome();
  const onboard = start(['onboard'], home);
  expect((await onboard.done).code).toBe(0);
  editConfig(home, (c) => {
    c.agents.defaults.provider = 'custom';
    c.agents.defaults.model = 'test-model';
    c.providers.custom = { apiKey: 'test-key', apiBase: `${llm.url}/v1` };
  });
  return home;
}

/** The newest user message of a recorded request, as text. */
function lastUserText(body: Record<string, unknown>): string {
  const messages = Array.isArray(body.messages) ? (body.messages as { role?: string; content?: unknown }[]) : [];
  const user = messages.filter((m) => m.role === 'user').at(-1);
  return typeof user?.content === 'string' ? user.content : JSON.stringify(user?.content ?? '');
}

describe('a long unbroken string does not freeze the CLI', () => {
  it('agent -m prints a 2 MB answer of one letter and exits 0', async () => {
    const answer = 'a'.repeat(2_000_000);
    fake = await startFakeLLM(Array.from({ length: 8 }, () => ({ text: answer })));
    const home = await configuredHome(fake);
    const run = start(['agent', '-m', 'Say a lot of a.'], home);
    const result = await run.done;
    expect(result.code).toBe(0);
    expect(result.stdout.trim()).toBe(answer);
  }, 30_000);

  it('serve answers another session and /health while a 300 KB single-word message is in its turn', async () => {
    const word = 'x'.repeat(300_000);
    let release = () => {};
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    let bigSeen = false;
    // One router for every request: the big turn waits on the gate; consolidation or other calls get a summary.
    const route = async (body: Record<string, unknown>): Promise<FakeReply> => {
      const text = lastUserText(body);
      if (text.startsWith('small question')) return { text: 'small answer' };
      if (text.includes(word) && !bigSeen) {
        bigSeen = true;
        await gate;
        return { text: 'big answer' };
      }
      return { text: 'summary: the user sent a long word' };
    };
    fake = await startFakeLLM(Array.from({ length: 20 }, () => route));
    const home = await configuredHome(fake);
    const port = await freePort();
    const serve = start(['serve', '-p', String(port)], home);
    const base = `http://127.0.0.1:${port}`;
    await eventually(async () => expect((await fetch(`${base}/health`)).status).toBe(200), 15_000);

    const ask = (sessionId: string, content: string) =>
      fetch(`${base}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ session_id: sessionId, messages: [{ role: 'user', content }] }),
      }).then(async (res) => ({ status: res.status, body: (await res.json()) as Record<string, unknown> }));
    const answerOf = (reply: { body: Record<string, unknown> }) =>
      (reply.body.choices as { message: { content: string } }[] | undefined)?.[0]?.message.content;

    const big = ask('big', word);
    await eventually(() => expect(bigSeen).toBe(true), 20_000);
    // The big turn is at the model: the process must still serve others.
    const small = await ask('small', 'small question 1');
    expect(answerOf(small)).toBe('small answer');
    expect((await fetch(`${base}/health`)).status).toBe(200);

    release();
    const bigReply = await big;
    expect(bigReply.status).toBe(200);
    expect(answerOf(bigReply)).toBe('big answer');
    // After the big turn (and whatever bookkeeping follows it) the process still answers.
    expect((await fetch(`${base}/health`)).status).toBe(200);
    const again = await ask('small', 'small question 2');
    expect(answerOf(again)).toBe('small answer');
    // The next turn of the big session measures its history again: still no freeze.
    const bigAgain = await ask('big', 'small question 3');
    expect(answerOf(bigAgain)).toBe('small answer');
    expect((await fetch(`${base}/health`)).status).toBe(200);

    serve.child.kill('SIGTERM');
    expect((await serve.done).code).toBe(0);
  }, 30_000);
});
