import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { CronService } from '../../src/cron/service.js';
import { CronError, type NewCronJob } from '../../src/cron/types.js';
import { type Harness, iso, ManualClock, makeHarness } from './helpers.js';

const started: CronService[] = [];
afterEach(async () => {
  for (const service of started.splice(0)) await service.stop();
});

async function startHarness(...args: Parameters<typeof makeHarness>): Promise<Harness> {
  const harness = makeHarness(...args);
  await harness.service.start();
  started.push(harness.service);
  return harness;
}

const reminder = (schedule: NewCronJob['schedule'], name = 'test job'): NewCronJob => ({
  name,
  schedule,
  payload: {
    reminder: true,
    message: 'Stand up!',
    sessionKey: 'telegram:42',
    originChannel: 'telegram',
    originChatId: '42',
  },
});

describe('CronService schedules', () => {
  it('fires every-jobs at each interval', async () => {
    const h = await startHarness('2026-01-01T00:00:00Z');
    await h.service.add(reminder({ kind: 'every', everyMs: 3_600_000 }));
    await h.advanceTo('2026-01-01T03:30:00Z');
    expect(h.runs.map((run) => iso(run.at))).toEqual([
      '2026-01-01T01:00:00.000Z',
      '2026-01-01T02:00:00.000Z',
      '2026-01-01T03:00:00.000Z',
    ]);
    expect(h.runs[0]?.job.payload).toMatchObject({
      kind: 'agent_turn',
      message: 'Stand up!',
      originMetadata: { nanobotTs: { reminder: true } },
    });
  });

  it('fires a cron job at 09:00 Berlin on both sides of the March DST change', async () => {
    const h = await startHarness('2026-03-27T12:00:00Z');
    await h.service.add(reminder({ kind: 'cron', expr: '0 9 * * *', tz: 'Europe/Berlin' }));
    await h.advanceTo('2026-03-30T00:00:00Z');
    expect(h.runs.map((run) => iso(run.at))).toEqual(['2026-03-28T08:00:00.000Z', '2026-03-29T07:00:00.000Z']);
    const [job] = await h.service.list();
    expect(iso(job!.state.nextRunAtMs!)).toBe('2026-03-30T07:00:00.000Z');
  });

  it('fires an at-job once at its instant, then deletes it', async () => {
    const h = await startHarness('2026-05-01T08:00:00Z');
    const job = await h.service.add(reminder({ kind: 'at', atMs: Date.parse('2026-05-01T09:30:00Z') }));
    expect(job.deleteAfterRun).toBe(true);
    await h.advanceTo('2026-05-01T09:29:59Z');
    expect(h.runs).toHaveLength(0);
    await h.advanceTo('2026-05-02T00:00:00Z');
    expect(h.runs.map((run) => iso(run.at))).toEqual(['2026-05-01T09:30:00.000Z']);
    expect(h.readStore().jobs).toEqual([]);
    expect(h.service.nextWakeAt()).toBeNull();
  });

  it('records each run and caps runHistory at 20', async () => {
    let count = 0;
    const h = await startHarness(0, {
      result: () => (++count % 5 === 0 ? { status: 'error', error: `boom ${count}` } : { status: 'ok' }),
    });
    await h.service.add(reminder({ kind: 'every', everyMs: 10_000 }));
    await h.advanceTo(250_000);
    expect(h.runs).toHaveLength(25);
    const stored = h.readStore().jobs[0] as { state: Record<string, unknown> & { runHistory: unknown[] } };
    expect(stored.state.runHistory).toHaveLength(20);
    expect(stored.state.runHistory.at(-1)).toEqual({
      runAtMs: 250_000,
      status: 'error',
      durationMs: 0,
      error: 'boom 25',
    });
    expect(stored.state).toMatchObject({ lastRunAtMs: 250_000, lastStatus: 'error', lastError: 'boom 25' });
    expect(stored.state.runHistory[0]).toMatchObject({ runAtMs: 60_000 });
  });

  it('records a throwing runner as an error and a silent run as silent', async () => {
    const h = await startHarness(0, {
      onRun: async (job) => {
        if (job.name === 'bad') throw new Error('no such chat');
        return { status: 'silent' };
      },
    });
    await h.service.add(reminder({ kind: 'every', everyMs: 60_000 }, 'bad'));
    await h.service.add(reminder({ kind: 'every', everyMs: 60_000 }, 'quiet'));
    await h.advanceTo(60_000);
    const byName = Object.fromEntries((await h.service.list()).map((job) => [job.name, job.state]));
    expect(byName.bad).toMatchObject({ lastStatus: 'error', lastError: 'no such chat', nextRunAtMs: 120_000 });
    expect(byName.quiet).toMatchObject({ lastStatus: 'silent', lastError: null });
  });

  it('runNow runs a job off-schedule and keeps its schedule', async () => {
    const h = await startHarness(0);
    const job = await h.service.add(reminder({ kind: 'at', atMs: 3_600_000 }));
    expect(await h.service.runNow(job.id)).toEqual({ status: 'ok' });
    const [after] = await h.service.list();
    expect(after).toMatchObject({ id: job.id, state: { nextRunAtMs: 3_600_000, lastStatus: 'ok' } });
    await expect(h.service.runNow('nope')).rejects.toThrow("No cron job with id 'nope'.");
  });
});

describe('CronService validation', () => {
  it('rejects an invalid expression or timezone before writing anything', async () => {
    const h = makeHarness(0);
    await expect(h.service.add(reminder({ kind: 'cron', expr: '0 25 * * *' }))).rejects.toThrow(
      /Invalid cron expression '0 25 \* \* \*'/,
    );
    await expect(h.service.add(reminder({ kind: 'cron', expr: '0 9 * * *', tz: 'Europe/Nowhere' }))).rejects.toThrow(
      "Unknown timezone 'Europe/Nowhere'.",
    );
    expect(fs.existsSync(h.storePath)).toBe(false);

    // Not running the scheduler, the service logs its change for the one that does (as nanobot's CLI does).
    await h.service.add(reminder({ kind: 'every', everyMs: 60_000 }));
    const log = path.join(h.workspace, 'cron', 'action.jsonl');
    const before = fs.readFileSync(log, 'utf8');
    await expect(h.service.add(reminder({ kind: 'cron', expr: 'every day' }))).rejects.toBeInstanceOf(CronError);
    await expect(h.service.add(reminder({ kind: 'at', atMs: -5 }))).rejects.toThrow(/in the past/);
    await expect(h.service.add(reminder({ kind: 'cron', expr: '0 0 30 2 *' }))).rejects.toThrow(/never fires/);
    expect(fs.readFileSync(log, 'utf8')).toBe(before);
    expect(fs.existsSync(h.storePath)).toBe(false);
  });

  it('refuses to remove protected jobs unless allowed', async () => {
    const h = makeHarness(0);
    fs.mkdirSync(path.dirname(h.storePath), { recursive: true });
    fs.writeFileSync(
      h.storePath,
      JSON.stringify({
        version: 1,
        jobs: [
          {
            id: 'dream',
            name: 'dream',
            schedule: { kind: 'every', everyMs: 7_200_000 },
            payload: { kind: 'system_event', message: '' },
          },
        ],
      }),
    );
    await expect(h.service.remove('dream')).rejects.toThrow("'dream' is a protected system job and cannot be removed.");
    expect((await h.service.list()).map((job) => job.id)).toEqual(['dream']);
    expect(await h.service.remove('dream', { allowProtected: true })).toMatchObject({ id: 'dream' });
    expect(await h.service.remove('missing')).toBeUndefined();
  });
});

describe('CronService and jobs.json', () => {
  it('fires a job that another process adds while it runs (fs.watch)', async () => {
    const h = await startHarness('2026-01-01T00:00:00Z');
    const cli = new CronService({ workspace: h.workspace, clock: h.clock, onRun: async () => ({ status: 'ok' }) });
    const added = await cli.add(reminder({ kind: 'at', atMs: Date.parse('2026-01-01T00:05:00Z') }, 'from cli'));
    await vi.waitFor(() => expect(h.service.nextWakeAt()).toBe(added.state.nextRunAtMs), { timeout: 3000 });
    await h.advanceTo('2026-01-01T00:10:00Z');
    expect(h.runs.map((run) => [run.job.name, iso(run.at)])).toEqual([['from cli', '2026-01-01T00:05:00.000Z']]);
  });

  it('notices a changed file on its periodic check when watching is off', async () => {
    const h = await startHarness('2026-01-01T00:00:00Z', { watch: false, maxSleepMs: 60_000 });
    const cli = new CronService({ workspace: h.workspace, clock: h.clock, onRun: async () => ({ status: 'ok' }) });
    await cli.add(reminder({ kind: 'at', atMs: Date.parse('2026-01-01T00:00:30Z') }, 'late'));
    expect(h.service.nextWakeAt()).toBeNull();
    await h.advanceTo('2026-01-01T00:02:00Z');
    // Seen at the 60 s check, already due then: runs at once.
    expect(h.runs.map((run) => [run.job.name, iso(run.at)])).toEqual([['late', '2026-01-01T00:01:00.000Z']]);
  });

  it('picks up a hand-written job without state and gives it a next run', async () => {
    const h = await startHarness(1_000_000);
    fs.writeFileSync(
      h.storePath,
      JSON.stringify({
        version: 1,
        jobs: [
          {
            id: 'hand1234',
            name: 'by hand',
            schedule: { kind: 'every', everyMs: 60_000 },
            payload: { message: 'hi', sessionKey: 'telegram:1', originChannel: 'telegram', originChatId: '1' },
          },
        ],
      }),
    );
    await vi.waitFor(() => expect(h.service.nextWakeAt()).toBe(1_060_000), { timeout: 3000 });
    expect((h.readStore().jobs[0] as { state: { nextRunAtMs: number } }).state.nextRunAtMs).toBe(1_060_000);
    await h.advanceBy(60_000);
    expect(h.runs).toHaveLength(1);
  });

  it('runs a job missed while stopped once on start, then resumes its schedule', async () => {
    const h = makeHarness('2026-01-01T00:00:00Z');
    await h.service.add(reminder({ kind: 'every', everyMs: 3_600_000 }, 'hourly'));
    await h.service.add(reminder({ kind: 'at', atMs: Date.parse('2026-01-01T00:30:00Z') }, 'once'));
    h.clock.nowMs = Date.parse('2026-01-01T05:10:00Z'); // five hourly slots and the at-time passed while down
    await h.service.start();
    started.push(h.service);
    await h.advanceBy(0);
    expect(h.runs.map((run) => run.job.name).sort()).toEqual(['hourly', 'once']);
    const jobs = await h.service.list();
    expect(jobs.map((job) => job.name)).toEqual(['hourly']);
    expect(iso(jobs[0]!.state.nextRunAtMs!)).toBe('2026-01-01T06:00:00.000Z');
  });

  it('skips missed jobs on start when catch-up is off', async () => {
    const h = makeHarness('2026-01-01T00:00:00Z', { catchUpMissed: false });
    await h.service.add(reminder({ kind: 'every', everyMs: 3_600_000 }, 'hourly'));
    await h.service.add(reminder({ kind: 'at', atMs: Date.parse('2026-01-01T00:30:00Z') }, 'once'));
    h.clock.nowMs = Date.parse('2026-01-01T05:10:00Z');
    await h.service.start();
    started.push(h.service);
    await h.advanceBy(0);
    expect(h.runs).toEqual([]);
    const jobs = await h.service.list();
    expect(jobs.map((job) => [job.name, iso(job.state.nextRunAtMs!)])).toEqual([
      ['hourly', '2026-01-01T06:00:00.000Z'],
    ]);
  });

  it('keeps unknown fields and snake_case files loadable, in nanobot format', async () => {
    const h = await startHarness(0);
    fs.writeFileSync(
      h.storePath,
      JSON.stringify({
        version: 1,
        future_top_level: { keep: true },
        jobs: [
          {
            id: 'abcd1234',
            name: 'legacy',
            enabled: true,
            schedule: { kind: 'every', every_ms: 60_000 },
            payload: { kind: 'system_event', message: 'hi', deliver: true, channel: 'telegram', to: '7' },
            state: { next_run_at_ms: 60_000 },
            created_at_ms: 1,
            custom: 'kept',
          },
          { name: 'no id', schedule: { kind: 'every' } },
        ],
      }),
    );
    await vi.waitFor(() => expect(h.service.nextWakeAt()).toBe(60_000), { timeout: 3000 });
    await h.advanceTo(60_000);
    expect(h.runs).toHaveLength(1);
    const store = h.readStore();
    expect(store.version).toBe(1);
    expect(store.future_top_level).toEqual({ keep: true });
    expect(store.jobs).toHaveLength(2);
    expect(store.jobs[0]).toMatchObject({
      id: 'abcd1234',
      custom: 'kept',
      createdAtMs: 1,
      schedule: { kind: 'every', everyMs: 60_000 },
      // Our earlier reminder kind and nanobot's legacy delivery fields, both migrated as nanobot and we read them.
      payload: {
        kind: 'agent_turn',
        deliver: false,
        channel: null,
        to: null,
        sessionKey: 'telegram:7',
        originChannel: 'telegram',
        originChatId: '7',
        originMetadata: { nanobotTs: { reminder: true } },
      },
      state: { nextRunAtMs: 120_000, lastStatus: 'ok' },
    });
    expect(store.jobs[1]).toEqual({ name: 'no id', schedule: { kind: 'every' } });
    expect(h.service.problems()).toEqual([expect.stringMatching(/^job #2: id:/)]);
  });

  it('keeps running the jobs it has when jobs.json becomes unreadable, and refuses to write over it', async () => {
    const h = await startHarness(0, { watch: false, maxSleepMs: 10_000 });
    await h.service.add(reminder({ kind: 'every', everyMs: 30_000 }));
    fs.writeFileSync(h.storePath, '{ "version": 1, "jobs": [ oops');
    await expect(h.service.add(reminder({ kind: 'every', everyMs: 30_000 }))).rejects.toThrow(/is not valid JSON/);
    await h.advanceTo(65_000);
    expect(h.runs.map((run) => run.at)).toEqual([30_000, 60_000]);
    expect(fs.readFileSync(h.storePath, 'utf8')).toBe('{ "version": 1, "jobs": [ oops');
  });

  it('does not re-add a job removed while it was running', async () => {
    let release: () => void = () => {};
    const h = await startHarness(0, {
      onRun: () => new Promise((resolve) => (release = () => resolve({ status: 'ok' }))),
    });
    const job = await h.service.add(reminder({ kind: 'every', everyMs: 1_000 }));
    h.clock.advanceTo(1_000, async () => {});
    await vi.waitFor(() => expect(h.service.nextWakeAt()).toBeNull());
    await h.service.remove(job.id);
    release();
    await h.service.idle();
    expect(await h.service.list()).toEqual([]);
  });
});

describe('ManualClock sanity', () => {
  it('fires timers in order', async () => {
    const clock = new ManualClock(0);
    const fired: number[] = [];
    clock.setTimer(() => fired.push(clock.now()), 20);
    clock.setTimer(() => fired.push(clock.now()), 10);
    await clock.advanceTo(30, async () => {});
    expect(fired).toEqual([10, 20]);
  });
});
