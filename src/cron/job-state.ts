/**
 * Pure transitions of a store's job states: after a run, after downtime, for jobs written without state.
 * The service applies them inside a locked read-modify-write of jobs.json.
 */
import { errorMessage } from '../util/errors.js';
import { formatInstant, nextRunAt, validateSchedule } from './schedule.js';
import type { CronStoreData } from './store.js';
import { type CronJob, type CronRunResult, type CronSchedule, MAX_RUN_HISTORY } from './types.js';

export type RunTrigger = 'schedule' | 'manual';

export interface FinishedRun {
  trigger: RunTrigger;
  /** The due time that fired (null for a manual run of an unscheduled job). */
  dueMs: number | null;
  startedAt: number;
  finishedAt: number;
  result: CronRunResult;
}

/** Why the schedule cannot be used, or undefined when it is fine. */
export function scheduleProblem(schedule: CronSchedule, timezone: string | undefined): string | undefined {
  try {
    validateSchedule(schedule, timezone);
    return undefined;
  } catch (err) {
    return errorMessage(err);
  }
}

/** Like nextRunAt, but a schedule broken by a hand edit means "never" instead of an exception. */
export function safeNextRun(
  schedule: CronSchedule,
  nowMs: number,
  previousDueMs: number | null,
  timezone: string | undefined,
): number | null {
  try {
    return nextRunAt(schedule, { nowMs, previousDueMs, defaultTimezone: timezone });
  } catch {
    return null;
  }
}

export function needsNextRun(job: CronJob, timezone: string | undefined): boolean {
  return job.enabled && job.state.nextRunAtMs == null && !scheduleProblem(job.schedule, timezone);
}

export function fillNextRuns(data: CronStoreData, nowMs: number, timezone: string | undefined): void {
  for (const job of data.jobs)
    if (needsNextRun(job, timezone)) job.state.nextRunAtMs = safeNextRun(job.schedule, nowMs, null, timezone);
}

/** Without catch-up, missed repeating jobs move to their next slot and missed one-off jobs are dropped. */
export function skipMissed(data: CronStoreData, nowMs: number, timezone: string | undefined): CronJob[] {
  const skipped: CronJob[] = [];
  data.jobs = data.jobs.filter((job) => {
    const due = job.state.nextRunAtMs;
    if (!job.enabled || due == null || due > nowMs) return true;
    skipped.push(job);
    if (job.schedule.kind === 'at') return false;
    job.state.nextRunAtMs = safeNextRun(job.schedule, nowMs, due, timezone);
    return true;
  });
  return skipped;
}

/**
 * Records a finished run on job `id`: last status, history (newest 20), and the next run. Scheduled runs of `at`
 * and deleteAfterRun jobs remove the job; manual runs leave the schedule alone. A job removed meanwhile stays removed.
 */
export function recordRun(data: CronStoreData, id: string, run: FinishedRun, timezone: string | undefined): void {
  const index = data.jobs.findIndex((job) => job.id === id);
  const job = data.jobs[index];
  if (!job) return;
  const { status, error } = run.result;
  const errorText = status === 'error' ? (error ?? 'unknown error') : null;
  job.state.lastRunAtMs = run.startedAt;
  job.state.lastStatus = status;
  job.state.lastError = errorText;
  const entry = { runAtMs: run.startedAt, status, durationMs: run.finishedAt - run.startedAt, error: errorText };
  job.state.runHistory = [...job.state.runHistory, entry].slice(-MAX_RUN_HISTORY);
  job.updatedAtMs = run.finishedAt;
  if (run.trigger === 'manual') return;
  if (job.schedule.kind === 'at' || job.deleteAfterRun) {
    data.jobs.splice(index, 1);
    return;
  }
  // A job that keeps failing waits longer and longer (bounded) before its next slot, instead of failing every slot.
  const from = Math.max(run.finishedAt, run.dueMs ?? 0, run.finishedAt + failureBackoffMs(job));
  job.state.nextRunAtMs = safeNextRun(job.schedule, from, run.dueMs, timezone);
}

/**
 * After one failure the next slot runs as scheduled (a passing glitch); from the second failure in a row on, the
 * next run waits at least this long, doubling with each further failure up to the cap.
 */
export const FAILURE_BACKOFF_MS = 60_000;
export const MAX_FAILURE_BACKOFF_MS = 3_600_000;

/** Failed runs in a row, newest last (counted in the stored history, so other writers and restarts agree). */
export function consecutiveFailures(job: CronJob): number {
  let count = 0;
  for (let i = job.state.runHistory.length - 1; i >= 0 && job.state.runHistory[i]?.status === 'error'; i--) count++;
  return count;
}

function failureBackoffMs(job: CronJob): number {
  const failures = consecutiveFailures(job);
  if (failures < 2) return 0;
  return Math.min(MAX_FAILURE_BACKOFF_MS, FAILURE_BACKOFF_MS * 2 ** (failures - 2));
}

/** The log line for a failed run of `job` (its state already records the run). */
export function describeFailure(job: CronJob, error: string | undefined, timezone: string | undefined): string {
  const failures = consecutiveFailures(job);
  // The history keeps the newest runs only: a full history of failures may be a longer streak.
  const streak = failures > 1 ? ` (${failures}${failures >= MAX_RUN_HISTORY ? '+' : ''} runs in a row)` : '';
  const next = job.state.nextRunAtMs;
  const retry = next != null ? `; next run ${formatInstant(next, timezone ?? 'UTC')}` : '';
  return `'${job.name}' (${job.id}) failed${streak}: ${error ?? 'error'}${retry}`;
}
