/**
 * Marks code running on behalf of a cron job, so the `cron` tool can refuse to schedule from inside a cron run
 * (a job that adds a job each time it fires multiplies). Carried by AsyncLocalStorage, so it reaches tools only when
 * the runner executes the turn inside `onRun`'s async context (not when it hands the turn to another queue).
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { CronJob } from './types.js';

const running = new AsyncLocalStorage<CronJob>();

export function runAsCronJob<T>(job: CronJob, fn: () => Promise<T>): Promise<T> {
  return running.run(job, fn);
}

/** The job whose run the caller is part of, if any. */
export function currentCronJob(): CronJob | undefined {
  return running.getStore();
}
