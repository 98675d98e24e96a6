import fs from 'node:fs';
import path from 'node:path';
import type { CronClock } from '../../src/cron/clock.js';
import { CronService, type CronServiceOptions } from '../../src/cron/service.js';
import type { CronJob, CronRunResult } from '../../src/cron/types.js';
import { makeTempDir } from '../tools/helpers.js';

/** A clock whose timers fire only when the test advances it. */
export class ManualClock implements CronClock {
  private readonly timers = new Map<number, { at: number; fn: () => void }>();
  private sequence = 0;

  constructor(public nowMs: number) {}

  now = (): number => this.nowMs;

  setTimer(fn: () => void, ms: number): unknown {
    const id = ++this.sequence;
    this.timers.set(id, { at: this.nowMs + Math.max(0, ms), fn });
    return id;
  }

  clearTimer(handle: unknown): void {
    this.timers.delete(handle as number);
  }

  /** Moves time to `target`, firing each due timer at its own instant and letting `settle` finish the work. */
  async advanceTo(target: number, settle: () => Promise<void>): Promise<void> {
    for (let guard = 0; ; guard++) {
      if (guard > 100_000) throw new Error('ManualClock: timers keep firing without time passing');
      await settle();
      let earliest: [number, { at: number; fn: () => void }] | undefined;
      for (const entry of this.timers) if (!earliest || entry[1].at < earliest[1].at) earliest = entry;
      if (!earliest || earliest[1].at > target) break;
      this.timers.delete(earliest[0]);
      this.nowMs = Math.max(this.nowMs, earliest[1].at);
      earliest[1].fn();
    }
    this.nowMs = target;
    await settle();
  }
}

export interface Harness {
  workspace: string;
  clock: ManualClock;
  service: CronService;
  runs: Array<{ job: CronJob; at: number }>;
  storePath: string;
  advanceTo(iso: string | number): Promise<void>;
  advanceBy(ms: number): Promise<void>;
  readStore(): { version: number; jobs: Array<Record<string, unknown>>; [key: string]: unknown };
}

export function makeHarness(
  start: string | number,
  options: Partial<CronServiceOptions> & { result?: (job: CronJob) => CronRunResult | Promise<CronRunResult> } = {},
): Harness {
  const workspace = options.workspace ?? makeTempDir('nanobot-cron-');
  const clock = options.clock instanceof ManualClock ? options.clock : new ManualClock(toMs(start));
  const runs: Harness['runs'] = [];
  const service = new CronService({
    maxSleepMs: 3_600_000,
    ...options,
    workspace,
    clock,
    onRun:
      options.onRun ??
      (async (job) => {
        runs.push({ job, at: clock.now() });
        return options.result ? options.result(job) : { status: 'ok' };
      }),
  });
  const storePath = path.join(workspace, 'cron', 'jobs.json');
  const settle = () => service.idle();
  return {
    workspace,
    clock,
    service,
    runs,
    storePath,
    advanceTo: (when) => clock.advanceTo(toMs(when), settle),
    advanceBy: (ms) => clock.advanceTo(clock.nowMs + ms, settle),
    readStore: () => JSON.parse(fs.readFileSync(storePath, 'utf8')),
  };
}

export function toMs(when: string | number): number {
  return typeof when === 'number' ? when : Date.parse(when);
}

export const iso = (ms: number) => new Date(ms).toISOString();
