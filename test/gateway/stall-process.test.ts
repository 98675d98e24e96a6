/**
 * The real binary (issue 16 item 3): `nanobot gateway` with the WebSocket channel and the default 3 sessions at
 * once. Three chats' model streams stall after their headers and first words (the fake LLM holds the connections);
 * a fourth chat must still get its answer, and each stalled chat gets what streamed plus an error saying the stream
 * stalled and what to set. The limits are set small through the environment, as a user would.
 */
import type { ChildProcess } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { ServerFrame } from '../../src/channels/websocket/frames.js';
import { connect, type TestClient } from '../channels/websocket/helpers.js';
import { runCli, spawnCli, tempHome } from '../cli/cli-helpers.js';
import { type FakeReply, type FakeScriptStep, startFakeLLM } from '../helpers/fake-llm.js';
import { freePort } from '../mcp/helpers.js';

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** `stall N` streams its first words then stalls; anything else is answered at once. */
const partialOf = (n: string) => `Chat ${n} partial`;
function reply(body: Record<string, unknown>): FakeReply {
  const messages = Array.isArray(body.messages) ? (body.messages as { role?: string; content?: unknown }[]) : [];
  const last = JSON.stringify(messages.filter((m) => m.role === 'user').at(-1)?.content ?? '');
  const stall = /stall (\d+)/.exec(last);
  // The role chunk and the first piece (the fake cuts a text into three pieces) go out, then nothing.
  if (stall) return { text: `${partialOf(stall[1] ?? '')} words, and then never the rest.`, stallAfterEvents: 2 };
  return { text: 'Hello from the fourth chat.' };
}

async function gatewayWith(env: Record<string, string>) {
  const fake = await startFakeLLM(Array.from({ length: 20 }, (): FakeScriptStep => reply));
  cleanups.push(() => fake.close());
  const home = tempHome();
  expect((await runCli(['onboard'], home)).code).toBe(0);
  const wsPort = await freePort();
  const path = join(home, '.nanobot', 'config.json');
  const config = JSON.parse(readFileSync(path, 'utf8')) as Record<string, Record<string, unknown>>;
  config.agents = { defaults: { ...(config.agents?.defaults as object), provider: 'custom', model: 'test-model' } };
  config.providers = { custom: { apiKey: 'k', apiBase: `${fake.url}/v1` } };
  config.gateway = { heartbeat: { enabled: false } };
  config.channels = { sendToolHints: false, showReasoning: false, websocket: { port: wsPort, pingIntervalS: 60 } };
  writeFileSync(path, JSON.stringify(config, null, 2));

  const { child, output } = spawnCli(['gateway', '--port', '0'], home, { env });
  cleanups.push(() => child.kill('SIGKILL'));
  const url = `http://127.0.0.1:${wsPort}`;
  await eventually(async () => (await fetch(`${url}/api/info`).catch(() => undefined))?.status === 401, child, output);
  const token = readFileSync(join(home, '.nanobot', 'webui-token'), 'utf8').trim();
  const client = await connect(wsPort, { token, clientId: 'stall-test', origin: url });
  cleanups.push(() => client.close());
  await client.next((f) => f.event === 'ready');
  return { fake, client, child, output };
}

async function newChat(client: TestClient): Promise<string> {
  client.send({ type: 'new_chat' });
  const attached = await client.next((f) => f.event === 'attached');
  return attached.event === 'attached' ? attached.chat_id : '';
}

/** Everything the chat was shown: streamed deltas, the text of messages and stream ends, and errors. */
function shown(client: TestClient, chatId: string): string {
  return client.frames
    .filter((f): f is ServerFrame & { chat_id: string } => 'chat_id' in f && f.chat_id === chatId)
    .map((f) => {
      if (f.event === 'error') return `error(${f.kind}): ${f.detail}`;
      return f.event === 'delta' || f.event === 'message' || f.event === 'stream_end' ? (f.text ?? '') : '';
    })
    .join('|');
}

async function eventually(
  check: () => boolean | Promise<boolean>,
  child: ChildProcess,
  output: () => string,
  timeoutMs = 20_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (child.exitCode !== null) throw new Error(`nanobot exited:\n${output()}`);
    if (Date.now() > deadline) throw new Error(`timed out; gateway output so far:\n${output()}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe('nanobot gateway: model streams that stall after their headers (process)', () => {
  it('frees the slots of 3 stalled chats: a fourth chat is answered, the stalled ones get a clear timeout error', async () => {
    const { fake, client, child, output } = await gatewayWith({
      NANOBOT_STREAM_IDLE_TIMEOUT_S: '1',
      NANOBOT_MAX_CONCURRENT_REQUESTS: '3',
    });
    const stalled = [await newChat(client), await newChat(client), await newChat(client)];
    const fourth = await newChat(client);
    stalled.forEach((chatId, i) => {
      client.send({ type: 'message', chat_id: chatId, content: `stall ${i + 1}` });
    });
    // All three slots are held by stalled streams before the fourth chat writes.
    await eventually(() => fake.stalls() === 3, child, output);
    client.send({ type: 'message', chat_id: fourth, content: 'hello, anyone there?' });

    await eventually(() => shown(client, fourth).includes('Hello from the fourth chat.'), child, output);
    for (const [i, chatId] of stalled.entries()) {
      await eventually(() => shown(client, chatId).includes('NANOBOT_STREAM_IDLE_TIMEOUT_S'), child, output);
      const seen = shown(client, chatId);
      expect(seen).toContain(partialOf(String(i + 1)));
      expect(seen).toMatch(
        /error\(timeout\): The model's stream stalled for 1 s .*; set NANOBOT_STREAM_IDLE_TIMEOUT_S to wait longer\./,
      );
      expect(seen).not.toContain('never the rest');
    }
    // Text had streamed, so no stalled request was sent twice; the fourth chat's request did reach the model.
    const asked = fake.requests.map((r) => JSON.stringify(r.body.messages));
    expect(asked.filter((m) => m.includes('stall '))).toHaveLength(3);
    expect(asked.filter((m) => m.includes('hello, anyone there?'))).toHaveLength(1);
  }, 60_000);

  it('ends a stalled turn at agents.defaults.turnTimeoutS when the idle limit is longer', async () => {
    const { fake, client, child, output } = await gatewayWith({ NANOBOT_AGENTS__DEFAULTS__TURN_TIMEOUT_S: '3' });
    const chatId = await newChat(client);
    client.send({ type: 'message', chat_id: chatId, content: 'stall 7' });
    await eventually(() => fake.stalls() === 1, child, output);
    await eventually(() => shown(client, chatId).includes('turnTimeoutS'), child, output);
    const seen = shown(client, chatId);
    expect(seen).toContain(partialOf('7'));
    expect(seen).toMatch(
      /error\(timeout\): The turn ran longer than 3 s and was stopped; set agents\.defaults\.turnTimeoutS to allow longer \(0 = no limit\)\./,
    );
    // The chat still works afterwards: the next message is answered.
    client.send({ type: 'message', chat_id: chatId, content: 'hello again' });
    await eventually(() => shown(client, chatId).includes('Hello from the fourth chat.'), child, output);
  }, 60_000);
});
