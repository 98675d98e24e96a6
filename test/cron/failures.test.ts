/**
 * Cron under-reporting (issue 16 item 8): an unreadable store is an error, not "no jobs"; a reminder for a channel
 * that is not running is a failed run (in the job's state and the log), not `ok`; a job that fails every run backs
 * off (bounded) instead of failing at every slot. Injected clock throughout.
 */
import fs from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import type { ChannelHealth } from '../../src/channels/manager.js';
import { FAILURE_BACKOFF_MS, MAX_FAILURE_BACKOFF_MS } from '../../src/cron/job-state.js';
import type { CronService } from '../../src/cron/service.js';
import { CronError, type NewCronJob } from '../../src/cron/types.js';
import type { GatewayContext } from '../../src/gateway/lifecycle.js';
import { cronRunner } from '../../src/gateway/services.js';
import { type Harness, makeHarness } from './helpers.js';

const started: CronService[] = [];
afterEach(async () => {
  for (const service of started.splice(0)) await service.stop();
});

function capturingLog() {
  const warnings: string[] = [];
  const log = { debug() {}, info() {}, warn: (m: string) => warnings.push(m), error: (m: string) => warnings.push(m) };
  return { log, warnings };
}

async function startHarness(...args: Parameters<typeof makeHarness>): Promise<Harness> {
  const harness = makeHarness(...args);
  await harness.service.start();
  started.push(harness.service);
  return harness;
}

const reminder = (everyMs: number, channel = 'telegram'): NewCronJob => ({
  name: 'stand up',
  schedule: { kind: 'every', everyMs },
  payload: {
    reminder: true,
    message: 'Stand up!',
    sessionKey: `${channel}:42`,
    originChannel: channel,
    originChatId: '42',
  },
});

/** A gateway context with these channels and a bus that records what was published. */
function gatewayWith(channels: Record<string, ChannelHealth>) {
  const published: unknown[] = [];
  const context = {
    bus: { publishOutbound: (message: unknown) => published.push(message) },
    channels: () => channels,
  } as unknown as GatewayContext;
  return { context, published };
}

describe('cron: an unreadable jobs.json', () => {
  it.each([
    ['not JSON', '{ "version": 1, "jobs": [ oops'],
    ['not an object with jobs', '[1, 2, 3]'],
    ['jobs not a list', '{"jobs": {"a": 1}}'],
  ])('is an error naming the file for list, get and runNow (%s), and nothing is written', async (_what, text) => {
    const h = makeHarness(0, { watch: false });
    fs.mkdirSync(h.storePath.replace(/jobs\.json$/, ''), { recursive: true });
    fs.writeFileSync(h.storePath, text);
    for (const call of [() => h.service.list(), () => h.service.get('abc'), () => h.service.runNow('abc')]) {
      const error = await call().catch((err: unknown) => err);
      expect(error).toBeInstanceOf(CronError);
      expect((error as Error).message).toContain(h.storePath);
    }
    await expect(h.service.remove('abc')).rejects.toThrow(h.storePath);
    expect(fs.readFileSync(h.storePath, 'utf8')).toBe(text);
  });
});

describe('cron: a reminder for a channel that is not running', () => {
  it.each([
    ['absent', {}, /no channel "telegram" runs in this gateway \(channels: slack\)/],
    [
      'failed to start',
      { telegram: { state: 'error', error: 'bad token', restarts: 0 } },
      /not running \(error: bad token\)/,
    ],
    ['stopped', { telegram: { state: 'stopped', restarts: 0 } }, /not running \(stopped\)/],
  ] as const)('is recorded and logged as failed when the channel is %s', async (_what, channels, reason) => {
    const { context, published } = gatewayWith({ slack: { state: 'running', restarts: 0 }, ...channels });
    const { log, warnings } = capturingLog();
    const h = await startHarness(0, { onRun: cronRunner(context), log });
    const job = await h.service.add(reminder(60_000));
    await h.advanceTo(60_000);
    const [after] = await h.service.list();
    expect(after?.id).toBe(job.id);
    expect(after?.state.lastStatus).toBe('error');
    expect(after?.state.lastError).toMatch(/the reminder was not delivered/);
    expect(after?.state.lastError).toMatch(reason);
    expect(warnings.join('\n')).toMatch(/cron: 'stand up' \(\w+\) failed: the reminder was not delivered/);
    expect(published).toEqual([]);
  });

  it('is sent (ok) while the channel runs or reconnects (the router waits for it)', async () => {
    for (const state of ['running', 'reconnecting', 'starting'] as const) {
      const { context, published } = gatewayWith({ telegram: { state, restarts: 0 } });
      const h = await startHarness(0, { onRun: cronRunner(context) });
      await h.service.add(reminder(60_000));
      await h.advanceTo(60_000);
      expect((await h.service.list())[0]?.state.lastStatus).toBe('ok');
      expect(published).toEqual([{ channel: 'telegram', chatId: '42', content: 'Stand up!' }]);
    }
  });
});

describe('cron: a job that fails every run', () => {
  it('backs off from the second failure in a row, doubling up to the cap, and resumes its schedule once it works', async () => {
    let failing = true;
    const { log, warnings } = capturingLog();
    const every = 10_000;
    const h = await startHarness(0, {
      log,
      result: () => (failing ? { status: 'error', error: 'chat not found' } : { status: 'ok' }),
    });
    await h.service.add(reminder(every));
    await h.advanceTo(2 * 24 * 3_600_000);
    const times = h.runs.map((run) => run.at);
    const gaps = times.slice(1).map((at, i) => at - (times[i] ?? 0));
    expect(gaps[0]).toBe(every); // one failure: the next slot as scheduled
    for (const [i, gap] of gaps.entries()) {
      const wanted = i === 0 ? 0 : Math.min(MAX_FAILURE_BACKOFF_MS, FAILURE_BACKOFF_MS * 2 ** (i - 1));
      expect(gap).toBeGreaterThanOrEqual(wanted);
      expect(gap).toBeLessThanOrEqual(Math.max(wanted, every) + every); // at the first slot after the backoff
    }
    expect(Math.max(...gaps)).toBeLessThanOrEqual(MAX_FAILURE_BACKOFF_MS + every); // bounded
    expect(h.runs.length).toBeLessThan(60); // not 17,280 failed runs in two days
    expect(warnings.at(-1)).toMatch(/failed \(20\+ runs in a row\): chat not found; next run /);

    failing = false;
    const last = times.at(-1) ?? 0;
    await h.advanceTo(last + MAX_FAILURE_BACKOFF_MS + 5 * every);
    const after = h.runs.map((run) => run.at).filter((at) => at > last);
    expect(after.length).toBeGreaterThanOrEqual(5);
    const resumed = after.slice(1).map((at, i) => at - (after[i] ?? 0));
    expect(new Set(resumed)).toEqual(new Set([every])); // one success: back on its schedule
  });
});
