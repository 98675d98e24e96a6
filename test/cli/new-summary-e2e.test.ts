/**
 * `/new` as nanobot does it: the old conversation is summarised by the model into memory/history.jsonl, under the
 * chat's session key (upstream's fields: cursor, timestamp, content, session_key), and the chat starts fresh. When
 * the model fails the messages go in raw, and the archive session keeps every one of them either way.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { type FakeLLM, startFakeLLM } from '../helpers/fake-llm.js';
import { upstreamHome } from '../helpers/upstream-homes.js';
import { editConfig, runCli, tempHome } from './cli-helpers.js';

let fake: FakeLLM | undefined;
afterEach(async () => {
  await fake?.close();
  fake = undefined;
});

function historyEntries(workspace: string): Record<string, unknown>[] {
  const file = join(workspace, 'memory', 'history.jsonl');
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

function sessionFiles(dataDir: string): Map<string, string> {
  const root = join(dataDir, 'sessions');
  const files = new Map<string, string>();
  for (const id of readdirSync(root)) {
    const dir = join(root, id);
    if (!existsSync(dir) || !readdirSync(dir).length) continue;
    for (const name of readdirSync(dir).filter((n) => n.endsWith('.jsonl'))) {
      files.set(Buffer.from(name.slice(0, -'.jsonl'.length), 'base64url').toString('utf8'), join(dir, name));
    }
  }
  return files;
}

const messagesOf = (file: string) =>
  readFileSync(file, 'utf8')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as Record<string, unknown>)
    .filter((line) => line._type === undefined);

async function chatHome() {
  const home = tempHome();
  expect((await runCli(['onboard'], home)).code).toBe(0);
  fake = await startFakeLLM([{ text: 'Teal it is, Alice.' }]);
  const url = fake.url;
  editConfig(home, (c) => {
    c.agents.defaults.provider = 'custom';
    c.agents.defaults.model = 'test-model';
    c.providers.custom = { apiKey: 'k', apiBase: `${url}/v1` };
  });
  expect((await runCli(['agent', '-m', 'My favourite colour is teal.'], home)).code).toBe(0);
  return { home, dataDir: join(home, '.nanobot'), workspace: join(home, '.nanobot', 'workspace') };
}

describe('/new', () => {
  it('asks the model for a summary, writes it to history.jsonl under the chat key, and starts fresh', async () => {
    const { home, dataDir, workspace } = await chatHome();
    fake?.enqueue({ text: 'Alice said her favourite colour is teal.' });
    const result = await runCli(['agent', '-m', '/new'], home);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('New session started.');

    const summaryRequest = JSON.stringify(fake?.requests.at(-1)?.body);
    expect(summaryRequest).toContain('My favourite colour is teal.');
    const entries = historyEntries(workspace);
    expect(entries).toHaveLength(1);
    expect(entries[0]).toMatchObject({
      content: 'Alice said her favourite colour is teal.',
      session_key: 'cli:direct',
    });
    expect(Object.keys(entries[0] ?? {}).sort()).toEqual(['content', 'cursor', 'session_key', 'timestamp']);

    const files = sessionFiles(dataDir);
    expect(messagesOf(files.get('cli:direct') ?? '')).toEqual([]);
    const archived = [...files.keys()].filter((key) => key.startsWith('cli:direct:archived:'));
    expect(archived).toHaveLength(1);
    expect(messagesOf(files.get(archived[0] ?? '') ?? '').map((m) => m.role)).toEqual(['user', 'assistant']);

    // The next chat starts without the old turns, and the summary reaches it through # Recent History.
    fake?.enqueue({ text: 'Hello again.' });
    expect((await runCli(['agent', '-m', 'Hi'], home)).code).toBe(0);
    const next = JSON.stringify(fake?.requests.at(-1)?.body);
    expect(next).not.toContain('My favourite colour is teal.');
    expect(next).toContain('Alice said her favourite colour is teal.');
  });

  it('still archives everything, raw, when the model fails to summarise', async () => {
    const { home, dataDir, workspace } = await chatHome();
    fake?.enqueue({ status: 400, errorBody: { error: { message: 'bad request' } } });
    const result = await runCli(['agent', '-m', '/new'], home);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('New session started.');
    const entries = historyEntries(workspace);
    expect(entries).toHaveLength(1);
    expect(entries[0]?.session_key).toBe('cli:direct');
    expect(String(entries[0]?.content)).toMatch(/^\[RAW\] 2 messages/);
    expect(String(entries[0]?.content)).toContain('My favourite colour is teal.');
    const files = sessionFiles(dataDir);
    const archived = [...files.keys()].find((key) => key.startsWith('cli:direct:archived:'));
    expect(messagesOf(files.get(archived ?? '') ?? '')).toHaveLength(2);
  });

  it("summarises a real upstream home's chat under its own key", async () => {
    const py = upstreamHome('pyhome');
    try {
      fake = await startFakeLLM([{ text: 'Alice likes teal and has two reminders.' }]);
      const url = fake.url;
      editConfig(py.home, (c) => {
        c.providers.custom = { ...(c.providers.custom as object), apiKey: 'k', apiBase: `${url}/v1` };
        // Issue 17 item 1 (another branch) makes upstream's `null` here acceptable; this test is about /new.
        const channels = c.channels as Record<string, unknown>;
        if (channels.transcriptionLanguage === null) delete channels.transcriptionLanguage;
      });
      const before = historyEntries(py.workspace);
      const result = await runCli(['agent', '-m', '/new'], py.home);
      expect(result.code).toBe(0);
      const entries = historyEntries(py.workspace);
      expect(entries.slice(0, before.length)).toEqual(before);
      expect(entries.at(-1)).toMatchObject({
        cursor: Number(before.at(-1)?.cursor) + 1,
        content: 'Alice likes teal and has two reminders.',
        session_key: 'cli:direct',
      });
    } finally {
      py.cleanup();
    }
  });
});
