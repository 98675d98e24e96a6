/**
 * Issue 17 items 3, 5 and 15 over homes written by real upstream nanobot (../shared/reference/upstream-homes), driven
 * through the built CLI: jobs only in `cron/action.jsonl` are listed; what we append there has exactly the fields
 * nanobot's own lines have (its reader takes them as strict keyword arguments); a gateway on the home merges the log
 * into jobs.json in nanobot's format, never runs nanobot's `dream`/`heartbeat` system jobs as reminders (even
 * overdue), migrates a reminder our earlier versions wrote as `system_event`, and `cron run` reaches it.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { eventually } from '../helpers/eventually.js';
import { startFakeLLM } from '../helpers/fake-llm.js';
import { type UpstreamHome, upstreamHome } from '../helpers/upstream-homes.js';
import { freePort } from '../mcp/helpers.js';
import { runCli, spawnCli } from './cli-helpers.js';

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

type Json = Record<string, unknown>;
const readJson = (path: string) => JSON.parse(readFileSync(path, 'utf8')) as Json;
const actionLines = (h: UpstreamHome) =>
  readFileSync(join(h.workspace, 'cron', 'action.jsonl'), 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as { action: string; params: Json });

function home(name: 'pyhome' | 'pyhome-agentonly'): UpstreamHome {
  const h = upstreamHome(name);
  cleanups.push(h.cleanup);
  // Issue 17 item 1 (null values upstream's onboard writes) is another branch's; until it merges, drop the one null
  // our schema refuses. Harmless after it.
  const config = readJson(h.configPath) as { channels: Json };
  if (config.channels.transcriptionLanguage === null) delete config.channels.transcriptionLanguage;
  writeFileSync(h.configPath, JSON.stringify(config, null, 2));
  return h;
}

/** Keys of a job and of its nested objects, as a comparable shape. */
function shape(job: Json): Record<string, string[]> {
  const keys = (value: unknown) => Object.keys(value as Json);
  return { job: keys(job), schedule: keys(job.schedule), payload: keys(job.payload), state: keys(job.state) };
}

describe('cron on a home where upstream nanobot only ever ran `nanobot agent` (jobs in action.jsonl)', () => {
  it('lists both pending jobs, without writing jobs.json or emptying the log', async () => {
    const h = home('pyhome-agentonly');
    const log = join(h.workspace, 'cron', 'action.jsonl');
    const before = readFileSync(log, 'utf8');
    const result = await runCli(['cron', 'list'], h.home);
    expect(result.stderr).not.toMatch(/Error/);
    expect(result.code).toBe(0);
    expect(result.stdout).not.toMatch(/No cron jobs/);
    expect(result.stdout).toMatch(/3409e675\s+water-plants\s+every day at 09:00 \(Europe\/Berlin\).*agent, cli:direct/);
    expect(result.stdout).toMatch(/16d26062\s+stretch break\s+every hour.*agent, cli:direct/);
    expect(readFileSync(log, 'utf8')).toBe(before);
    expect(existsSync(join(h.workspace, 'cron', 'jobs.json'))).toBe(false);
  });

  it('appends add and del lines with exactly the fields of nanobot’s own lines', async () => {
    const h = home('pyhome-agentonly');
    const [theirs] = actionLines(h);
    const add = await runCli(
      [
        'cron',
        'add',
        '--name',
        'call mum',
        '--message',
        'Call mum',
        '--every',
        '2h',
        '--channel',
        'telegram',
        '--chat-id',
        '4242',
      ],
      h.home,
    );
    expect(add.stderr).not.toMatch(/Error/);
    expect(add.code).toBe(0);
    const ours = actionLines(h)[2];
    expect(ours?.action).toBe('add');
    expect(shape(ours!.params)).toEqual(shape(theirs!.params));
    expect(ours!.params).toMatchObject({
      name: 'call mum',
      enabled: true,
      schedule: { kind: 'every', at_ms: null, every_ms: 7_200_000, expr: null, tz: null },
      payload: {
        kind: 'agent_turn',
        message: 'Call mum',
        deliver: false,
        channel: null,
        to: null,
        channel_meta: {},
        session_key: 'telegram:4242',
        origin_channel: 'telegram',
        origin_chat_id: '4242',
        origin_metadata: { nanobotTs: { reminder: true } },
      },
      state: { last_run_at_ms: null, last_status: null, last_error: null, run_history: [] },
      delete_after_run: false,
    });

    const remove = await runCli(['cron', 'remove', '16d26062'], h.home);
    expect(remove.code).toBe(0);
    expect(actionLines(h)[3]).toEqual({ action: 'del', params: { job_id: '16d26062' } });
    const list = await runCli(['cron', 'list'], h.home);
    expect(list.stdout).toMatch(/water-plants/);
    expect(list.stdout).toMatch(/call mum/);
    expect(list.stdout).not.toMatch(/stretch break/);
  });

  it('runs an agent job here when no gateway runs (`cron run`), answer printed and kept in its session', async () => {
    const h = home('pyhome-agentonly');
    const fake = await startFakeLLM([{ text: 'Time to water the plants, Alice.' }]);
    cleanups.push(() => fake.close());
    const config = readJson(h.configPath) as { providers: { custom: Json } };
    config.providers.custom.apiBase = `${fake.url}/v1`;
    writeFileSync(h.configPath, JSON.stringify(config, null, 2));
    const run = await runCli(['cron', 'run', '3409e675'], h.home);
    expect(run.stderr).not.toMatch(/Error/);
    expect(run.stdout).toContain('Time to water the plants, Alice.');
    expect(run.stdout).toMatch(/^Ran 3409e675 'water-plants': ok\.$/m);
    expect(JSON.stringify(fake.requests[0]?.body.messages)).toContain('Remind Alice to water the plants');
    // Recording the run writes jobs.json the way nanobot's run_job does: the log merged in, then emptied.
    const store = readJson(join(h.workspace, 'cron', 'jobs.json')) as { jobs: Json[] };
    expect(store.jobs.map((job) => job.id)).toEqual(['3409e675', '16d26062']);
    expect(store.jobs[0]?.state).toMatchObject({ lastStatus: 'ok' });
    expect(actionLines(h)).toEqual([]);
    const sessions = execFileSync('grep', ['-rl', 'Time to water the plants, Alice.', join(h.dataDir, 'sessions')], {
      encoding: 'utf8',
    });
    // nanobot names session files by the base64 of their key: Y2xpOmRpcmVjdA is `cli:direct`.
    expect(sessions).toMatch(/Y2xpOmRpcmVjdA\.jsonl/);
  });

  it('refuses to add a job with no chat, saying where the chat ids are', async () => {
    const h = home('pyhome-agentonly');
    const result = await runCli(['cron', 'add', '--message', 'x', '--every', '60'], h.home);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/needs --channel and --chat-id/);
    expect(result.stderr).toMatch(/`nanobot sessions`/);
    expect(actionLines(h)).toHaveLength(2);
  });
});

describe('a gateway on a home after upstream nanobot’s gateway ran (jobs.json with dream and heartbeat)', () => {
  it('merges the log, never runs the system jobs, migrates our old reminders and runs `cron run` in the gateway', async () => {
    const h = home('pyhome');
    const storePath = join(h.workspace, 'cron', 'jobs.json');
    const original = readJson(storePath) as { jobs: Json[] };
    const theirShape = shape(original.jobs[0]!);
    const now = Date.now();
    for (const job of original.jobs) {
      const state = job.state as Json;
      // User jobs moved ahead (as the homes' README says); dream and heartbeat left overdue on purpose.
      state.nextRunAtMs = job.id === 'dream' || job.id === 'heartbeat' ? now - 3_600_000 : now + 86_400_000;
    }
    // A reminder as our earlier versions wrote it: nanobot's protected kind, which it must no longer be.
    original.jobs.push({
      id: 'abcd1234',
      name: 'old reminder',
      enabled: true,
      schedule: { kind: 'every', everyMs: 3_600_000 },
      payload: {
        kind: 'system_event',
        message: 'Drink water',
        sessionKey: 'websocket:py-web-chat-1',
        originChannel: 'websocket',
        originChatId: 'py-web-chat-1',
      },
      state: { nextRunAtMs: now + 86_400_000 },
    });
    writeFileSync(storePath, JSON.stringify(original, null, 2));

    const fake = await startFakeLLM([{ text: 'Time to water the plants, Alice.' }]);
    cleanups.push(() => fake.close());
    const config = readJson(h.configPath) as { providers: { custom: Json }; channels: { websocket: Json } };
    config.providers.custom.apiBase = `${fake.url}/v1`;
    config.channels.websocket.port = await freePort();
    writeFileSync(h.configPath, JSON.stringify(config, null, 2));

    // Added with no gateway running: it waits in action.jsonl for the gateway to merge.
    const add = await runCli(
      [
        'cron',
        'add',
        '--name',
        'stand up',
        '--message',
        'Stand up',
        '--every',
        '1h',
        '--channel',
        'websocket',
        '--chat-id',
        'py-web-chat-1',
      ],
      h.home,
    );
    expect(add.code).toBe(0);
    expect(actionLines(h)).toHaveLength(1);

    const gateway = spawnCli(['gateway', '--port', '0'], h.home);
    cleanups.push(() => gateway.child.kill('SIGKILL'));
    const merged = await eventually(
      () => {
        if (gateway.child.exitCode !== null) throw new Error(`gateway exited:\n${gateway.output()}`);
        const store = readJson(storePath) as { jobs: Json[] };
        return actionLines(h).length === 0 && store.jobs.some((job) => job.name === 'stand up') && store;
      },
      { timeoutMs: 20_000 },
    );
    for (const job of merged.jobs) expect(shape(job)).toEqual(theirShape);
    const byId = Object.fromEntries(merged.jobs.map((job) => [job.id as string, job]));
    expect(byId.abcd1234?.payload).toMatchObject({
      kind: 'agent_turn',
      message: 'Drink water',
      originMetadata: { nanobotTs: { reminder: true } },
    });
    for (const id of ['dream', 'heartbeat']) expect(byId[id]?.payload).toMatchObject({ kind: 'system_event' });

    const run = await runCli(['cron', 'run', '3409e675'], h.home);
    expect(run.stderr).toBe('');
    expect(run.stdout).toMatch(/^Ran 3409e675 'water-plants' in the gateway \(pid \d+\): ok\.$/m);
    expect(fake.requests.length).toBe(1);

    const after = Object.fromEntries(
      (readJson(storePath) as { jobs: Json[] }).jobs.map((job) => [job.id as string, job.state as Json]),
    );
    expect(after['3409e675']).toMatchObject({
      lastStatus: 'ok',
      runHistory: [expect.objectContaining({ status: 'ok' })],
    });
    for (const id of ['dream', 'heartbeat'])
      expect(after[id], `${id} must not run from jobs.json`).toMatchObject({ lastStatus: null, runHistory: [] });
    expect(gateway.output()).not.toMatch(/no chat to go to|failed|\[error\]/i);

    gateway.child.kill('SIGTERM');
    expect(await gateway.exited).toBe(0);
  });
});
