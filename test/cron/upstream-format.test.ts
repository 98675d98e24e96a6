/**
 * nanobot's cron semantics, pinned: system jobs are never run from jobs.json (even overdue), unbound agent jobs are
 * disabled with nanobot's reason by the process running the scheduler, action.jsonl is merged and compacted only by
 * it, and its lock is nanobot's flock on `<workspace>/cron.lock`.
 */
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { appendAction, parseActionLog, withActionLogLock } from '../../src/cron/action-log.js';
import { toActionParams, UNBOUND_AGENT_JOB_REASON } from '../../src/cron/format.js';
import type { CronService } from '../../src/cron/service.js';
import { type Harness, makeHarness } from './helpers.js';

const started: CronService[] = [];
afterEach(async () => {
  for (const service of started.splice(0)) await service.stop();
});

function writeStore(h: Harness, jobs: unknown[]): void {
  fs.mkdirSync(path.dirname(h.storePath), { recursive: true });
  fs.writeFileSync(h.storePath, JSON.stringify({ version: 1, jobs }));
}

const systemJob = (id: string, nextRunAtMs: number) => ({
  id,
  name: id,
  enabled: true,
  schedule: { kind: 'every', everyMs: 1_800_000 },
  payload: { kind: 'system_event', message: '' },
  state: { nextRunAtMs },
});

describe("nanobot's system jobs", () => {
  it('are listed but never run, not even overdue, and cannot be run or removed by hand', async () => {
    const h = makeHarness(10_000_000);
    writeStore(h, [systemJob('dream', 1_000), systemJob('heartbeat', 2_000)]);
    await h.service.start();
    started.push(h.service);
    await h.advanceBy(7_200_000);
    expect(h.runs).toEqual([]);
    expect(h.service.nextWakeAt()).toBeNull();
    expect((await h.service.list()).map((job) => job.id).sort()).toEqual(['dream', 'heartbeat']);
    await expect(h.service.runNow('heartbeat')).rejects.toThrow(/protected system job/);
    await expect(h.service.remove('dream')).rejects.toThrow(/protected system job/);
    for (const job of h.readStore().jobs) expect((job.state as { lastStatus?: unknown }).lastStatus ?? null).toBeNull();
  });
});

describe('unbound agent jobs (no chat)', () => {
  it("are disabled with nanobot's reason by the scheduler, and never run", async () => {
    const h = makeHarness(0);
    writeStore(h, [
      { id: 'nochat01', name: 'no chat', schedule: { kind: 'every', everyMs: 60_000 }, payload: { message: 'x' } },
    ]);
    // A CLI (not running the scheduler) shows it disabled but writes nothing, as nanobot's does.
    const before = fs.readFileSync(h.storePath, 'utf8');
    expect((await h.service.list())[0]).toMatchObject({
      enabled: false,
      state: { lastError: UNBOUND_AGENT_JOB_REASON },
    });
    expect(fs.readFileSync(h.storePath, 'utf8')).toBe(before);
    await h.service.start();
    started.push(h.service);
    await h.advanceBy(180_000);
    expect(h.runs).toEqual([]);
    expect(h.readStore().jobs[0]).toMatchObject({
      enabled: false,
      state: { nextRunAtMs: null, lastStatus: 'error', lastError: UNBOUND_AGENT_JOB_REASON },
    });
  });

  it("migrate nanobot's legacy channel/to delivery into a bound job, as nanobot does", async () => {
    const h = makeHarness(0);
    writeStore(h, [
      {
        id: 'legacy01',
        name: 'legacy',
        schedule: { kind: 'every', everyMs: 60_000 },
        payload: { kind: 'agent_turn', message: 'x', deliver: true, channel: 'telegram', to: '7' },
        state: { nextRunAtMs: 60_000 },
      },
    ]);
    await h.service.start();
    started.push(h.service);
    await h.advanceBy(60_000);
    expect(h.runs).toHaveLength(1);
    expect(h.readStore().jobs[0]?.payload).toMatchObject({
      deliver: false,
      channel: null,
      to: null,
      sessionKey: 'telegram:7',
      originChannel: 'telegram',
      originChatId: '7',
    });
  });
});

describe('jobs.json our earlier versions wrote', () => {
  it('is read as it was meant and written back in nanobot’s kinds and fields', async () => {
    const h = makeHarness(0);
    const chat = { sessionKey: 'telegram:1', originChannel: 'telegram', originChatId: '1' };
    writeStore(h, [
      {
        id: 'oldrem01',
        name: 'old reminder',
        schedule: { kind: 'every', everyMs: 60_000 },
        payload: { kind: 'system_event', message: 'Stand up', ...chat },
        state: { nextRunAtMs: 60_000 },
      },
      {
        id: 'oldagt01',
        name: 'old task',
        schedule: { kind: 'every', everyMs: 60_000 },
        payload: { kind: 'agent_turn', message: 'News', modelPreset: 'cheap', ...chat },
        state: { nextRunAtMs: 60_000 },
      },
    ]);
    await h.service.start();
    started.push(h.service);
    const [reminder, task] = h.readStore().jobs as Array<{ payload: Record<string, unknown> }>;
    expect(reminder?.payload).toMatchObject({ kind: 'agent_turn', originMetadata: { nanobotTs: { reminder: true } } });
    expect(task?.payload).toMatchObject({
      kind: 'agent_turn',
      originMetadata: { nanobotTs: { modelPreset: 'cheap' } },
    });
    expect(task?.payload).not.toHaveProperty('modelPreset');
    await h.advanceTo(60_000);
    expect(h.runs.map((run) => run.job.id).sort()).toEqual(['oldagt01', 'oldrem01']);
  });
});

describe('action.jsonl', () => {
  const bound = { sessionKey: 'telegram:1', originChannel: 'telegram', originChatId: '1', message: 'hi' };

  it('is merged by the scheduler into jobs.json and emptied; a CLI only appends', async () => {
    const h = makeHarness(0);
    const job = await h.service.add({ name: 'a', schedule: { kind: 'every', everyMs: 60_000 }, payload: bound });
    const log = path.join(h.workspace, 'cron', 'action.jsonl');
    expect(fs.existsSync(h.storePath)).toBe(false);
    await h.service.remove(job.id);
    expect(parseActionLog(fs.readFileSync(log, 'utf8')).actions.map((a) => a.type)).toEqual(['upsert', 'del']);
    const kept = await h.service.add({ name: 'b', schedule: { kind: 'every', everyMs: 60_000 }, payload: bound });
    await h.service.start();
    started.push(h.service);
    expect(fs.readFileSync(log, 'utf8')).toBe('');
    expect(h.readStore().jobs.map((entry) => entry.id)).toEqual([kept.id]);
  });

  it("applies nanobot's rules: any action but del upserts, lines without action and bad lines are skipped", () => {
    const params = toActionParams({
      id: 'j1',
      name: 'n',
      enabled: true,
      schedule: { kind: 'every', everyMs: 1000 },
      payload: { kind: 'agent_turn', message: 'm' },
      state: { runHistory: [] },
      createdAtMs: 0,
      updatedAtMs: 0,
      deleteAfterRun: false,
    });
    const text = [
      JSON.stringify({ action: 'update', params }),
      JSON.stringify({ params }),
      'not json',
      JSON.stringify({ action: 'del', params: {} }),
      JSON.stringify({ action: 'add', params: { id: 'x' } }),
    ].join('\n');
    const log = parseActionLog(text);
    expect(log.actions).toEqual([{ type: 'upsert', job: expect.objectContaining({ id: 'j1' }) }]);
    expect(log.problems).toHaveLength(2);
  });

  const python = (() => {
    try {
      execFileSync('python3', ['-c', 'import fcntl'], { stdio: 'ignore' });
      execFileSync('flock', ['--version'], { stdio: 'ignore' });
      return true;
    } catch {
      return false;
    }
  })();

  it.skipIf(!python)("holds nanobot's flock on cron.lock while it appends (py-filelock uses flock)", async () => {
    const h = makeHarness(0);
    fs.mkdirSync(h.workspace, { recursive: true });
    const lock = path.join(h.workspace, 'cron.lock');
    const tryLock = `import fcntl,os,sys\nfd=os.open(sys.argv[1],os.O_RDWR|os.O_CREAT)\ntry:\n  fcntl.flock(fd,fcntl.LOCK_EX|fcntl.LOCK_NB);print('free')\nexcept BlockingIOError:\n  print('held')`;
    const probe = () => execFileSync('python3', ['-c', tryLock, lock], { encoding: 'utf8' }).trim();
    const seen = await withActionLogLock(h.workspace, async () => probe());
    expect(seen).toBe('held');
    expect(probe()).toBe('free');

    // And it waits while nanobot holds it: the append lands only after the holder lets go.
    const holder = spawn('python3', [
      '-c',
      `import fcntl,os,sys,time\nfd=os.open(sys.argv[1],os.O_RDWR|os.O_CREAT)\nfcntl.flock(fd,fcntl.LOCK_EX)\nprint('locked',flush=True)\nsys.stdin.readline()`,
      lock,
    ]);
    await new Promise<void>((resolve) => holder.stdout.once('data', () => resolve()));
    let appended = false;
    const append = appendAction(h.workspace, 'del', 'j1').then(() => {
      appended = true;
    });
    // Not a speed assertion: honoured, the lock keeps the append out however long we look; ignored, it lands at once.
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(appended).toBe(false);
    holder.stdin.end('\n');
    await append;
    expect(fs.readFileSync(path.join(h.workspace, 'cron', 'action.jsonl'), 'utf8')).toBe(
      '{"action":"del","params":{"job_id":"j1"}}\n',
    );
  });
});
