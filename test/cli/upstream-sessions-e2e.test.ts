/**
 * The built CLI over homes written by real upstream nanobot (../shared/reference/upstream-homes): a v0.3.0 user's
 * history is imported into upstream's later layout and replayed to the model, also after a kill in the middle of
 * the import; and `# Recent History` shows each chat only its own summaries.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync, watch } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { type FakeLLM, startFakeLLM } from '../helpers/fake-llm.js';
import { type UpstreamHome, type UpstreamHomeName, upstreamHome } from '../helpers/upstream-homes.js';
import { editConfig, runCli } from './cli-helpers.js';

const BIN = join(import.meta.dirname, '..', '..', 'bin', 'nanobot.js');
const BOB = 'Y2xpOmRpcmVjdA.jsonl'; // base64url("cli:direct")
const BOB_TURN = ['I am Bob and I like chess.', 'Hello Bob, noted: you like chess.'];

let fake: FakeLLM | undefined;
const homes: UpstreamHome[] = [];
const children: ChildProcess[] = [];
afterEach(async () => {
  for (const child of children.splice(0)) child.kill('SIGKILL');
  for (const home of homes.splice(0)) home.cleanup();
  await fake?.close();
  fake = undefined;
});

/** An upstream home, untouched but for its provider pointed at the fake LLM. */
async function home(name: UpstreamHomeName): Promise<UpstreamHome> {
  const h = upstreamHome(name);
  homes.push(h);
  fake = await startFakeLLM();
  editConfig(h.home, (c) => {
    const custom = c.providers.custom ?? {};
    custom.apiBase = `${fake?.url}/v1`;
    c.providers.custom = custom;
  });
  return h;
}

/** The messages of a request to the fake, system prompt first. */
function messagesOf(index: number): { role: string; content: unknown }[] {
  const request = fake?.requests.filter((r) => r.path === '/v1/chat/completions')[index];
  return (request?.body.messages ?? []) as { role: string; content: unknown }[];
}

const text = (content: unknown) => (typeof content === 'string' ? content : JSON.stringify(content));

function namespaceOf(h: UpstreamHome): string {
  const id = readFileSync(join(h.workspace, '.nanobot', 'workspace-id'), 'utf8').trim();
  return join(h.dataDir, 'sessions', id);
}

/** Bob's messages on disk, in order, counted (a duplicate import or a lost turn shows here). */
function storedContents(h: UpstreamHome): string[] {
  return readFileSync(join(namespaceOf(h), BOB), 'utf8')
    .split('\n')
    .filter((line) => line.trim())
    .map((line) => JSON.parse(line) as { _type?: string; content?: unknown })
    .filter((record) => record._type === undefined)
    .map((record) => text(record.content));
}

describe('a v0.3.0 home under the built CLI', () => {
  it('agent -m replays Bob’s history and leaves upstream’s later layout on disk', async () => {
    const h = await home('py030home');
    fake?.enqueue({ text: 'You like chess.' });
    const result = await runCli(['agent', '-m', 'What do I like?'], h.home);
    expect(result.stderr).not.toMatch(/Error/);
    expect(result.stdout.trim()).toBe('You like chess.');

    const history = messagesOf(0).filter((m) => m.role !== 'system');
    expect(history.slice(0, 2).map((m) => text(m.content))).toEqual(BOB_TURN);
    expect(text(history[2]?.content)).toMatch(/^What do I like\?/);

    // Upstream's layout: ~/.nanobot/sessions/<workspace-id>/ named by <workspace>/.nanobot/workspace-id.
    const dir = namespaceOf(h);
    expect(readFileSync(join(dir, '.workspace'), 'utf8')).toBe(`${h.workspace}\n`);
    expect(readdirSync(dir).filter((n) => n.endsWith('.jsonl'))).toEqual([BOB]);
    expect(readdirSync(join(h.workspace, 'sessions'))).toEqual([]);
    const first = JSON.parse(readFileSync(join(dir, BOB), 'utf8').split('\n')[0] ?? '{}') as Record<string, unknown>;
    expect(first).toMatchObject({ _type: 'metadata', key: 'cli:direct', created_at: '2026-12-01T19:20:51.415040' });
    expect(storedContents(h).slice(0, 2)).toEqual(BOB_TURN);
  });

  it('killed (SIGKILL) in the middle of the import, the next run loses and duplicates nothing', async () => {
    const h = await home('py030home');
    const sessionsRoot = join(h.dataDir, 'sessions');
    // Killed once the copy is in place: between the copy and the removal of the original (or a little after,
    // wherever the signal lands), with the sessions lock still held.
    const child = spawn(process.execPath, [BIN, 'agent', '-m', 'first try'], {
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: h.home },
      stdio: 'ignore',
    });
    children.push(child);
    const exited = new Promise<NodeJS.Signals | null>((resolve) =>
      child.on('exit', (_code, signal) => resolve(signal)),
    );
    const watcher = watch(h.dataDir, { recursive: true }, (_event, name) => {
      if (String(name).endsWith(`/${BOB}`)) child.kill('SIGKILL');
    });
    expect(await exited).toBe('SIGKILL');
    watcher.close();
    expect(existsSync(join(namespaceOf(h), BOB))).toBe(true); // the copy was made before the kill
    expect(existsSync(sessionsRoot)).toBe(true);

    fake?.enqueue({ text: 'Chess.' });
    const result = await runCli(['agent', '-m', 'What do I like?'], h.home);
    expect(result.stdout.trim()).toBe('Chess.');
    const last = fake?.requests.filter((r) => r.path === '/v1/chat/completions').length ?? 0;
    const replayed = messagesOf(last - 1)
      .filter((m) => m.role !== 'system')
      .map((m) => text(m.content));
    expect(replayed.filter((c) => BOB_TURN.includes(c))).toEqual(BOB_TURN); // once each, in order
    const stored = storedContents(h);
    for (const line of BOB_TURN) expect(stored.filter((c) => c === line)).toHaveLength(1);
    expect(existsSync(join(h.workspace, 'sessions', BOB))).toBe(false);
    expect(existsSync(join(namespaceOf(h), '.migration-conflicts'))).toBe(false);
  });

  it('sessions restore-workspace gives v0.3.0 its files back', async () => {
    const h = await home('py030home');
    const original = readFileSync(join(h.workspace, 'sessions', BOB));
    expect((await runCli(['sessions', 'list'], h.home)).code).toBe(0); // imports
    expect(existsSync(join(h.workspace, 'sessions', BOB))).toBe(false);
    const restored = await runCli(['sessions', 'restore-workspace'], h.home);
    expect(restored.code).toBe(0);
    expect(restored.stdout).toContain(
      `Restored 1 session file(s) to ${join(h.workspace, 'sessions')}; 0 already matched.`,
    );
    expect(readFileSync(join(h.workspace, 'sessions', BOB))).toEqual(original);
  });
});

describe('# Recent History over the latest upstream home (its entry belongs to session "old")', () => {
  const SUMMARY = 'asked about sourdough baking';

  it('is not shown to cli:direct, and is shown to -s old', async () => {
    const h = await home('pyhome');
    fake?.enqueue({ text: 'Hi Alice.' }, { text: 'Use a lively starter.' });
    expect((await runCli(['agent', '-m', 'hello'], h.home)).stdout.trim()).toBe('Hi Alice.');
    expect(text(messagesOf(0)[0]?.content)).not.toContain(SUMMARY);
    expect((await runCli(['agent', '-s', 'old', '-m', 'and the flour?'], h.home)).stdout.trim()).toBe(
      'Use a lively starter.',
    );
    expect(text(messagesOf(1)[0]?.content)).toContain(`# Recent History`);
    expect(text(messagesOf(1)[0]?.content)).toContain(SUMMARY);
  });
});

describe('nanobot sessions list over the latest upstream home', () => {
  it('shows each session’s key (the chat id cron add needs), first message, update time and size', async () => {
    const h = await home('pyhome');
    // Upstream writes local times without an offset; the home was made on a UTC machine.
    const listed = await runCli(['sessions', 'list'], h.home, { TZ: 'UTC' });
    expect(listed.code).toBe(0);
    const rows = listed.stdout.split('\n');
    expect(rows[0]).toMatch(/^UPDATED\s+MESSAGES\s+SESSION \(channel:chat_id\)\s+TITLE \/ FIRST MESSAGE$/);
    // Shown in the config's timezone, Europe/Berlin (UTC+1 in December).
    expect(rows).toContainEqual(
      expect.stringMatching(/^2026-12-01 20:20 {2}2 {9}websocket:py-web-chat-1 {4}"hello from the python webui"$/),
    );
    expect(rows).toContainEqual(expect.stringMatching(/^2026-12-01 20:20 {2}10 +cli:direct +"My name is Alice/));
    expect(rows).toContainEqual(expect.stringMatching(/^2026-12-01 20:20 {2}0 +old$/));
    expect(listed.stdout).toContain('nanobot cron add --channel CHANNEL --chat-id CHAT_ID');

    const json = JSON.parse((await runCli(['sessions', 'list', '--json'], h.home)).stdout) as Record<string, unknown>[];
    expect(json.find((s) => s.key === 'websocket:py-web-chat-1')).toMatchObject({
      channel: 'websocket',
      chatId: 'py-web-chat-1',
      messageCount: 2,
      preview: 'hello from the python webui',
      updatedAt: '2026-12-01T19:20:31.285121',
    });
    expect(json.find((s) => s.key === 'old')).not.toHaveProperty('chatId');
  });

  it('a fresh home has none, and says so', async () => {
    const h = await home('py030home');
    rmSync(join(h.workspace, 'sessions'), { recursive: true });
    const listed = await runCli(['sessions', 'list'], h.home);
    expect(listed.stdout.trim()).toBe(`No sessions yet for ${h.workspace}.`);
  });
});
