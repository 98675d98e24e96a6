/**
 * A turn that throws (its session file cannot be saved: a directory stands where the file should be) must cost that
 * turn only. The real `nanobot gateway` and `nanobot serve` answer it with an error, stay up, answer /health and the
 * next chat; a message queued into the failing turn is answered too, and SIGTERM then shuts down without waiting out
 * the drain timeout. `agent -m` prints the clean error and no stack dump.
 */
import { mkdirSync, readdirSync, readFileSync, renameSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { connect, type TestClient } from '../channels/websocket/helpers.js';
import { runCli } from '../cli/cli-helpers.js';
import { homeWith, type RunningNanobot, removeInstalledCopy, startNanobot } from '../e2e/harness.js';
import { type FakeLLM, type FakeReply, startFakeLLM } from '../helpers/fake-llm.js';
import { freePort } from '../mcp/helpers.js';

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});
afterAll(removeInstalledCopy);

const SORRY = 'Sorry, something went wrong while answering; the details are in the gateway log.';

async function fakeLLM(script: Parameters<typeof startFakeLLM>[0]): Promise<FakeLLM> {
  const fake = await startFakeLLM(script);
  cleanups.push(() => fake.close());
  return fake;
}

function start(args: string[], home: string): RunningNanobot {
  const running = startNanobot(args, home);
  cleanups.push(() => running.stop());
  return running;
}

/** The file a session's JSONL store writes (`<data>/sessions/<workspace id>/<base64url(key)>.jsonl`). */
function sessionFile(home: string, key: string): string {
  const root = join(home, '.nanobot', 'sessions');
  const [id] = readdirSync(root).filter((name) => /^[0-9a-f]{32}$/.test(name));
  if (!id) throw new Error(`no session folder under ${root}`);
  return join(root, id, `${Buffer.from(key, 'utf8').toString('base64url')}.jsonl`);
}

/** A directory where the session file should be: every save of that session fails (EISDIR), even as root. */
function blockSession(home: string, key: string): void {
  mkdirSync(sessionFile(home, key));
}

/** Polls `check` (bounded) while the process runs. */
async function eventually(check: () => Promise<boolean>, running: RunningNanobot, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (running.child.exitCode !== null) throw new Error(`nanobot exited:\n${running.output()}`);
    if (Date.now() > deadline) throw new Error(`timed out; output so far:\n${running.output()}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Resolves with the exit code, or fails once `timeoutMs` passed without an exit. */
function exitWithin(running: RunningNanobot, timeoutMs: number): Promise<number | null> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no exit in ${timeoutMs} ms:\n${running.output()}`)), timeoutMs);
  });
  return Promise.race([running.stop(), late]).finally(() => clearTimeout(timer));
}

/** A gateway with the WebSocket channel; resolves once a client is attached to a new chat. */
async function gatewayWithChat(fake: FakeLLM) {
  const wsPort = await freePort();
  const healthPort = await freePort();
  const { home } = homeWith(fake.url, { channels: { websocket: { port: wsPort, pingIntervalS: 60 } } });
  const gateway = start(['gateway', '--port', String(healthPort)], home);
  const url = `http://127.0.0.1:${wsPort}`;
  await eventually(async () => (await fetch(`${url}/api/info`).catch(() => undefined))?.status === 401, gateway);
  const token = readFileSync(join(home, '.nanobot', 'webui-token'), 'utf8').trim();
  const client: TestClient = await connect(wsPort, { token, clientId: 'fault', origin: url });
  cleanups.push(() => client.close());
  await client.next((f) => f.event === 'ready');
  const newChat = async (): Promise<string> => {
    client.send({ type: 'new_chat' });
    const attached = await client.next((f) => f.event === 'attached');
    return attached.event === 'attached' ? attached.chat_id : '';
  };
  const health = async () => (await fetch(`http://127.0.0.1:${healthPort}/health`)).status;
  return { home, gateway, client, newChat, health };
}

/** A reply's text, or a failed turn's error detail (the WebSocket sends failures as `error` frames). */
const textOf = (frame: { event: string; text?: string; detail?: string }): string => frame.text ?? frame.detail ?? '';
const failedIn = (chat: string) => (f: { event: string; chat_id?: string; kind?: string }) =>
  f.event === 'error' && f.chat_id === chat && f.kind === 'internal';

describe('a turn that throws (nanobot gateway)', () => {
  it('answers Sorry, keeps running, and serves /health and the next chat', async () => {
    // The broken chat's turn fails before the model is asked (its session cannot be read or saved).
    const fake = await fakeLLM([{ text: 'The second chat works.' }]);
    const { home, gateway, client, newChat, health } = await gatewayWithChat(fake);
    const broken = await newChat();
    blockSession(home, `websocket:${broken}`);

    client.send({ type: 'message', chat_id: broken, content: 'hello?' });
    const sorry = await client.next(failedIn(broken), 15_000);
    expect(textOf(sorry)).toBe(SORRY);

    expect(await health()).toBe(200);
    const ok = await newChat();
    client.send({ type: 'message', chat_id: ok, content: 'still there?' });
    const answer = await client.next((f) => f.event === 'stream_end' && f.chat_id === ok, 15_000);
    expect(textOf(answer)).toBe('The second chat works.');
    expect(gateway.child.exitCode).toBeNull();
    expect(gateway.output()).not.toMatch(/unhandled|uncaught/i);
    expect(await exitWithin(gateway, 15_000)).toBe(0);
  }, 60_000);

  it('answers a message queued into the failing turn, and SIGTERM then shuts down without a stuck turn', async () => {
    let release: () => void = () => undefined;
    const held = new Promise<FakeReply>((resolve) => {
      release = () => resolve({ text: 'an answer that cannot be saved' });
    });
    const fake = await fakeLLM([() => held]);
    const { home, gateway, client, newChat } = await gatewayWithChat(fake);
    const chat = await newChat();
    client.send({ type: 'message', chat_id: chat, content: 'first' });
    await eventually(async () => fake.requests.length >= 1, gateway);
    client.send({ type: 'message', chat_id: chat, content: 'second, while the first runs' });
    // Frames of one connection are taken in order: once /status is answered, "second" joined the running turn.
    client.send({ type: 'message', chat_id: chat, content: '/status' });
    await client.next((f) => f.event === 'message' && f.chat_id === chat, 15_000);
    // The first turn's final save now fails.
    const file = sessionFile(home, `websocket:${chat}`);
    renameSync(file, `${file}.moved`);
    mkdirSync(file);
    release();

    const replies = [await client.next(failedIn(chat), 15_000), await client.next(failedIn(chat), 15_000)];
    // The turn's own reply says what failed (its answer could not be saved); the message folded into it gets the
    // general one. Neither names a server path.
    expect(replies.map(textOf)).toEqual([
      expect.stringMatching(/^Sorry, I could not save the answer: .*\(EISDIR\) on the server/),
      SORRY,
    ]);
    expect(replies.map(textOf).join('\n')).not.toContain(home);
    expect(await exitWithin(gateway, 20_000)).toBe(0);
    expect(gateway.output()).not.toContain('still running after');
  }, 60_000);
});

describe('a turn that throws (nanobot serve)', () => {
  it('answers 500 with an error body, keeps running, and serves /health and the next chat', async () => {
    const fake = await fakeLLM([{ text: 'The second session works.' }]);
    const port = await freePort();
    const { home } = homeWith(fake.url);
    const serve = start(['serve', '--port', String(port)], home);
    await serve.waitForOutput(/nanobot API on http:\/\/127\.0\.0\.1:\d+\/v1/, 'the API to listen');
    blockSession(home, 'api:broken');
    const post = (session: string) =>
      fetch(`http://127.0.0.1:${port}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ messages: [{ role: 'user', content: 'hi' }], session_id: session }),
      });

    const failed = await post('broken');
    expect(failed.status).toBe(500);
    expect(await failed.json()).toMatchObject({ error: { type: 'server_error' } });
    expect((await fetch(`http://127.0.0.1:${port}/health`)).status).toBe(200);
    const ok = await post('fine');
    expect(ok.status).toBe(200);
    const body = (await ok.json()) as { choices: { message: { content: string } }[] };
    expect(body.choices[0]?.message.content).toBe('The second session works.');
    expect(serve.child.exitCode).toBeNull();
    expect(serve.output()).not.toMatch(/unhandled|uncaught/i);
  }, 60_000);
});

describe('a turn that throws (nanobot agent -m)', () => {
  it('prints the error once, with no stack dump, and exits 1', async () => {
    const fake = await fakeLLM([{ text: 'warmed up' }, { text: 'never saved' }]);
    const { home } = homeWith(fake.url);
    expect((await runCli(['agent', '-m', 'warm up', '-s', 'cli:other'], home)).code).toBe(0);
    blockSession(home, 'cli:direct');
    const result = await runCli(['agent', '-m', 'hello'], home);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/Error: /);
    expect(result.stderr).not.toMatch(/^\s+at /m);
    expect(result.stderr).not.toMatch(/unhandled|uncaught/i);
  }, 60_000);
});

describe('a turn that throws (interactive nanobot agent)', () => {
  it('reports each failed turn and goes on reading lines', async () => {
    const fake = await fakeLLM([{ text: 'warmed up' }]);
    const { home } = homeWith(fake.url);
    expect((await runCli(['agent', '-m', 'warm up', '-s', 'cli:other'], home)).code).toBe(0);
    blockSession(home, 'cli:direct');
    const result = await runCli(['agent'], home, {}, 'hello\nare you there?\n');
    expect(result.stdout.match(/Error: EISDIR/g)).toHaveLength(2);
    expect(result.code).toBe(0);
    expect(result.stderr).not.toMatch(/^\s+at /m);
  }, 60_000);
});
