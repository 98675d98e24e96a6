/**
 * The built `nanobot gateway` over the latest upstream home (../shared/reference/upstream-homes/pyhome), with
 * upstream's WebSocket chat `py-web-chat-1`: its prompt never shows another chat's `# Recent History` entry, and
 * `agents.defaults.unifiedSession` makes every chat (WebSocket chats, the interactive terminal) one conversation
 * as in nanobot, while `agent -m` keeps the session it names.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { freePort } from '../channels/websocket/gateway-helpers.js';
import { connect, type TestClient } from '../channels/websocket/helpers.js';
import { eventually } from '../helpers/eventually.js';
import { type FakeLLM, type FakeRequest, startFakeLLM } from '../helpers/fake-llm.js';
import { type UpstreamHome, upstreamHome } from '../helpers/upstream-homes.js';
import { editConfig, runCli, type SpawnedCli, spawnCli } from './cli-helpers.js';

const TOKEN = 'py-static-token-0123456789'; // the static token in pyhome's config
const SUMMARY = 'asked about sourdough baking'; // history.jsonl entry of session "old"

let fake: FakeLLM | undefined;
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  await fake?.close();
  fake = undefined;
});

async function pyhome(edit: (c: Record<string, Record<string, Record<string, unknown>>>) => void = () => {}) {
  const h: UpstreamHome = upstreamHome('pyhome');
  cleanups.push(h.cleanup);
  fake = await startFakeLLM();
  const wsPort = await freePort();
  const gatewayPort = await freePort();
  editConfig(h.home, (c) => {
    const custom = c.providers.custom ?? {};
    custom.apiBase = `${fake?.url}/v1`;
    c.providers.custom = custom;
    const channels = c.channels as Record<string, Record<string, unknown> | null>;
    (channels.websocket as Record<string, unknown>).port = wsPort;
    (c.gateway as Record<string, unknown>).port = gatewayPort;
    edit(c as unknown as Record<string, Record<string, Record<string, unknown>>>);
  });
  // The home's reminders went overdue after it was made (see the homes' README): move them ahead.
  const jobsPath = join(h.workspace, 'cron', 'jobs.json');
  const jobs = JSON.parse(readFileSync(jobsPath, 'utf8')) as { jobs: { state: { nextRunAtMs: number } }[] };
  for (const job of jobs.jobs) job.state.nextRunAtMs = Date.now() + 86_400_000;
  writeFileSync(jobsPath, JSON.stringify(jobs, null, 2));
  return { h, wsPort };
}

async function startGateway(h: UpstreamHome, wsPort: number): Promise<SpawnedCli> {
  const gateway = spawnCli(['gateway'], h.home);
  cleanups.push(async () => {
    gateway.child.kill('SIGTERM');
    await gateway.exited;
  });
  await eventually(
    async () => {
      const client = await connect(wsPort, { token: TOKEN, clientId: 'probe' });
      await client.close();
      return true;
    },
    { timeoutMs: 20_000, intervalMs: 50 },
  ).catch((error: unknown) => {
    throw new Error(`${(error as Error).message}\ngateway output:\n${gateway.output()}`);
  });
  return gateway;
}

async function client(wsPort: number): Promise<TestClient> {
  const c = await connect(wsPort, { token: TOKEN, clientId: 'webui' });
  cleanups.push(() => c.close());
  await c.next((f) => f.event === 'ready');
  return c;
}

/** Sends one message on `chatId` and waits for its answer. */
async function say(c: TestClient, chatId: string, content: string): Promise<void> {
  c.send({ type: 'message', chat_id: chatId, content });
  await c.next((f) => f.event === 'turn_end' && f.chat_id === chatId, 15_000);
}

async function newChat(c: TestClient): Promise<string> {
  c.send({ type: 'new_chat' });
  const attached = await c.next((f) => f.event === 'attached');
  return attached.event === 'attached' ? attached.chat_id : '';
}

/** The model request whose newest user message contains `text` (cron or Dream may make others). */
function requestFor(text: string): { system: string; history: string } {
  const matches = (request: FakeRequest) => {
    const messages = (request.body.messages ?? []) as { role: string; content: unknown }[];
    const lastUser = messages.filter((m) => m.role === 'user').at(-1);
    return JSON.stringify(lastUser?.content ?? '').includes(text);
  };
  const request = fake?.requests.filter((r) => r.path === '/v1/chat/completions').find(matches);
  if (!request) throw new Error(`no model request for "${text}"`);
  const [system, ...rest] = (request.body.messages ?? []) as { content: unknown }[];
  return { system: JSON.stringify(system?.content), history: JSON.stringify(rest.slice(0, -1)) };
}

describe('upstream’s WebSocket chat under the built gateway', () => {
  it('sees its own history, and not the Recent History entry of session "old"', async () => {
    const { h, wsPort } = await pyhome();
    await startGateway(h, wsPort);
    const c = await client(wsPort);
    c.send({ type: 'attach', chat_id: 'py-web-chat-1' });
    await c.next((f) => f.event === 'attached');
    fake?.enqueue({ text: 'Hello again.' });
    await say(c, 'py-web-chat-1', 'hello again from node');
    const request = requestFor('hello again from node');
    expect(request.history).toContain('hello from the python webui'); // upstream's chat is replayed
    expect(request.system).not.toContain(SUMMARY);
  });
});

describe('agents.defaults.unifiedSession', () => {
  it('makes every chat one conversation; agent -m keeps its own session', async () => {
    const { h, wsPort } = await pyhome((c) => {
      (c.agents?.defaults as Record<string, unknown>).unifiedSession = true;
    });
    const gateway = await startGateway(h, wsPort);
    const c = await client(wsPort);
    const first = await newChat(c);
    const second = await newChat(c);
    fake?.enqueue({ text: 'Noted.' }, { text: 'zebra-17' });
    await say(c, first, 'my code word is zebra-17');
    await say(c, second, 'what is my code word?');
    const shared = requestFor('what is my code word?');
    expect(shared.history).toContain('my code word is zebra-17');
    // One conversation: everyone's past is shown (but cron, Dream and heartbeat runs), as in nanobot.
    expect(shared.system).toContain(SUMMARY);
    gateway.child.kill('SIGTERM');
    await gateway.exited;

    const key = Buffer.from('unified:default').toString('base64url');
    const id = readFileSync(join(h.workspace, '.nanobot', 'workspace-id'), 'utf8').trim();
    const lines = readFileSync(join(h.dataDir, 'sessions', id, `${key}.jsonl`), 'utf8')
      .trim()
      .split('\n');
    const metadata = lines
      .map((l) => JSON.parse(l) as { _type?: string; metadata?: Record<string, unknown> })
      .filter((l) => l._type === 'metadata')
      .at(-1);
    expect(metadata?.metadata?.last_channel).toBe(`websocket:${second}`); // where a heartbeat would go

    // The interactive terminal is one more device in the same conversation; it leaves the route alone.
    fake?.enqueue({ text: 'Still zebra-17.' }, { text: 'I do not know.' });
    const chat = await runCli(['agent'], h.home, {}, 'and in the terminal?\n');
    expect(chat.stdout).toContain('Still zebra-17.');
    expect(requestFor('and in the terminal?').history).toContain('my code word is zebra-17');
    // `agent -m` names its session (cli:direct by default), as nanobot's does.
    const once = await runCli(['agent', '-m', 'one-shot question'], h.home);
    expect(once.stdout.trim()).toBe('I do not know.');
    expect(requestFor('one-shot question').history).not.toContain('zebra-17');
    const after = readFileSync(join(h.dataDir, 'sessions', id, `${key}.jsonl`), 'utf8')
      .trim()
      .split('\n');
    const route = after
      .map((l) => JSON.parse(l) as { _type?: string; metadata?: Record<string, unknown> })
      .filter((l) => l._type === 'metadata')
      .at(-1)?.metadata?.last_channel;
    expect(route).toBe(`websocket:${second}`);
  });
});
