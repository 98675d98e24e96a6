/**
 * Runs the jobs in `<workspace>/cron/jobs.json`. One timer sleeps until the earliest due job (at most `maxSleepMs`,
 * which doubles as the mtime check that catches file changes fs.watch missed and bounds drift after a system
 * suspend). A directory watch picks up jobs added by `nanobot cron add` or a hand edit while the gateway runs.
 * The file is the source of truth: every change re-reads it under a cross-process lock before writing.
 */
import { randomBytes } from 'node:crypto';
import { type FSWatcher, watch } from 'node:fs';
import { basename, dirname } from 'node:path';
import { errorMessage } from '../util/errors.js';
import { type Logger, silentLogger } from '../util/log.js';
import {
  actionLogPath,
  appendAction,
  applyActions,
  clearActionLog,
  readActionLog,
  withActionLogLock,
} from './action-log.js';
import { type CronClock, systemClock } from './clock.js';
import { runAsCronJob } from './context.js';
import { enforceBinding, migrateJob, UNBOUND_AGENT_JOB_REASON } from './format.js';
import {
  describeFailure,
  type FinishedRun,
  fillNextRuns,
  needsNextRun,
  type RunTrigger,
  recordRun,
  safeNextRun,
  scheduleProblem,
  skipMissed,
} from './job-state.js';
import { formatInstant, nextRunAt, toStoredSchedule, validateSchedule } from './schedule.js';
import {
  type CronStoreData,
  cronStorePath,
  ensureCronStoreDir,
  type FileStamp,
  fileStamp,
  readCronStore,
  updateCronStore,
} from './store.js';
import {
  CronError,
  type CronJob,
  type CronRunHandler,
  type CronRunResult,
  type CronSchedule,
  isBoundJob,
  isProtectedJob,
  type NewCronJob,
  type ScheduleInput,
  withOwnSettings,
} from './types.js';

/** What `edit` changes; absent fields stay. */
export interface CronJobEdit {
  name?: string;
  payloadMessage?: string;
  schedule?: ScheduleInput;
  deleteAfterRun?: boolean;
}

/** Where to look up the chat ids a job can be bound to (printed with "needs a chat" errors). */
export const CHAT_IDS_HINT =
  'A job runs in a chat session: see the chat ids with `nanobot sessions` (session telegram:123456 is ' +
  '--channel telegram --chat-id 123456); an --agent job can use `--channel cli --chat-id direct`, the ' +
  '`nanobot agent` chat.';

export interface CronServiceOptions {
  workspace: string;
  /** Executes a due job's payload. Throwing counts as status `error`. */
  onRun: CronRunHandler;
  clock?: CronClock;
  log?: Logger;
  /** A job whose time passed while the service was stopped runs once on start (default). False: skip to the next slot. */
  catchUpMissed?: boolean;
  /** For cron jobs stored without `tz`, and for wording times (agents.defaults.timezone). */
  timezone?: string;
  /** Longest sleep between checks, ms. Default 60 s. */
  maxSleepMs?: number;
  /** Watch the store directory for changes (default true). The periodic mtime check runs regardless. */
  watch?: boolean;
}

const WATCH_DEBOUNCE_MS = 30;
const ACTION_LOG_FILE = 'action.jsonl';
const SYSTEM_JOB_HINT =
  'nanobot registers it; here Dream and the heartbeat run on their own (agents.defaults.dream, gateway.heartbeat).';

export class CronService {
  readonly storePath: string;
  private readonly workspace: string;
  private readonly onRun: CronRunHandler;
  private readonly clock: CronClock;
  private readonly log: Logger;
  private readonly catchUpMissed: boolean;
  private readonly timezone: string | undefined;
  private readonly maxSleepMs: number;
  private readonly useWatch: boolean;

  private jobs: CronJob[] = [];
  private invalidEntries: string[] = [];
  private readonly scheduleProblems = new Map<string, string>();
  private loaded = false;
  private stamp: string | null = null;
  private unreadableStamp: string | null = null;
  private actionProblems: string[] = [];
  /** Why the store could not be read at the last attempt (cleared by a good read). */
  private unreadable: unknown;
  private started = false;
  private timer: unknown;
  private watcher: FSWatcher | undefined;
  private watchDebounce: NodeJS.Timeout | undefined;
  private readonly running = new Set<string>();
  private readonly pending = new Set<Promise<unknown>>();
  /** Serialises reads and writes of the store within this process (the file lock covers other processes). */
  private queue: Promise<unknown> = Promise.resolve();

  constructor(options: CronServiceOptions) {
    this.storePath = cronStorePath(options.workspace);
    this.workspace = options.workspace;
    this.onRun = options.onRun;
    this.clock = options.clock ?? systemClock;
    this.log = options.log ?? silentLogger;
    this.catchUpMissed = options.catchUpMissed ?? true;
    this.timezone = options.timezone;
    this.maxSleepMs = options.maxSleepMs ?? 60_000;
    this.useWatch = options.watch ?? true;
  }

  async start(): Promise<void> {
    if (this.started) return;
    this.started = true;
    try {
      ensureCronStoreDir(this.storePath);
    } catch (err) {
      this.log.warn(`cron: ${errorMessage(err)}; jobs cannot be loaded or saved until it is fixed`);
    }
    await this.serial(async () => {
      // Reload even if this instance read the files before (as a CLI): now it owns them and saves what it merged.
      this.stamp = null;
      await this.syncFromDisk();
      const now = this.clock.now();
      const missed = this.jobs.filter((job) => this.isSchedulable(job) && job.state.nextRunAtMs! <= now);
      if (!missed.length) return;
      if (this.catchUpMissed) {
        this.log.info(`cron: ${missed.length} job(s) missed while stopped will run now`);
        return;
      }
      const skipped = await this.update((data) => skipMissed(data, now, this.timezone));
      for (const job of skipped) this.log.info(`cron: skipped '${job.name}' (${job.id}), missed while stopped`);
    }).catch((err) => this.log.error(`cron: ${errorMessage(err)}`));
    this.startWatching();
    this.arm();
  }

  /** Stops timers and the watcher. Runs in progress finish and are recorded; `idle()` waits for them. */
  async stop(): Promise<void> {
    this.started = false;
    if (this.timer !== undefined) this.clock.clearTimer(this.timer);
    this.timer = undefined;
    if (this.watchDebounce) clearTimeout(this.watchDebounce);
    this.watchDebounce = undefined;
    this.watcher?.close();
    this.watcher = undefined;
  }

  /** Resolves when no reload, run or bookkeeping is in flight. */
  async idle(): Promise<void> {
    while (this.pending.size) await Promise.allSettled([...this.pending]);
  }

  /** When the earliest scheduled job is due, as this instance last saw the store (no disk access). */
  nextWakeAt(): number | null {
    let earliest: number | null = null;
    for (const job of this.jobs) {
      if (!this.isSchedulable(job)) continue;
      const due = job.state.nextRunAtMs!;
      if (earliest === null || due < earliest) earliest = due;
    }
    return earliest;
  }

  /** Validates, then saves. Nothing is written when the schedule is invalid or never fires. */
  async add(input: NewCronJob): Promise<CronJob> {
    const name = input.name.trim();
    if (!name) throw new CronError('A cron job needs a name.');
    const message = input.payload.message.trim();
    if (!message) throw new CronError('A cron job needs a message.');
    const { schedule, nextRunAtMs, now } = this.checkedSchedule(input.schedule);
    const { sessionKey, originChannel, originChatId } = input.payload;
    if (!sessionKey?.trim() || !originChannel?.trim() || !originChatId?.trim())
      throw new CronError('A cron job needs a chat to run in (a channel and a chat id).', CHAT_IDS_HINT);
    const job: CronJob = {
      id: '',
      name,
      enabled: true,
      schedule,
      payload: {
        kind: 'agent_turn',
        message,
        deliver: false,
        channel: null,
        to: null,
        channelMeta: {},
        sessionKey,
        originChannel,
        originChatId,
        originMetadata: withOwnSettings(
          {},
          { reminder: input.payload.reminder === true, modelPreset: input.payload.modelPreset ?? undefined },
        ),
      },
      state: { nextRunAtMs, lastRunAtMs: null, lastStatus: null, lastError: null, runHistory: [] },
      createdAtMs: now,
      updatedAtMs: now,
      deleteAfterRun: input.deleteAfterRun ?? schedule.kind === 'at',
    };
    await this.serial(async () => {
      if (this.started) {
        await this.update((data) => {
          job.id = uniqueJobId(data.jobs);
          data.jobs.push(job);
        });
        return;
      }
      // Like nanobot's CLI: a process that does not run the scheduler logs the change for the one that does.
      await this.syncReadable();
      job.id = uniqueJobId(this.jobs);
      await appendAction(this.workspace, 'add', job);
      await this.syncFromDisk();
    });
    this.arm();
    this.log.info(`cron: added '${name}' (${job.id})`);
    return structuredClone(job);
  }

  /**
   * All valid jobs, re-read from disk if it changed, soonest first. Throws the store's error when it is unreadable
   * and no earlier version was loaded (an empty list would claim there are no jobs).
   */
  async list(): Promise<CronJob[]> {
    await this.serial(() => this.syncReadable());
    const order = (job: CronJob) => (job.enabled ? (job.state.nextRunAtMs ?? Number.POSITIVE_INFINITY) : Infinity);
    return this.jobs.map((job) => structuredClone(job)).sort((a, b) => order(a) - order(b));
  }

  async get(id: string): Promise<CronJob | undefined> {
    return (await this.list()).find((job) => job.id === id);
  }

  /** Problems found in jobs.json at the last load: invalid entries and unusable schedules (never scheduled). */
  problems(): string[] {
    const schedules = [...this.scheduleProblems].map(([id, problem]) => `job ${id}: ${problem}`);
    return [...this.invalidEntries, ...this.actionProblems, ...schedules];
  }

  /** Removes a job; returns it, or undefined when there is no such id. System jobs need `allowProtected`. */
  async remove(id: string, options: { allowProtected?: boolean } = {}): Promise<CronJob | undefined> {
    const refuse = (job: CronJob) => {
      if (isProtectedJob(job) && !options.allowProtected)
        throw new CronError(`'${job.name}' is a protected system job and cannot be removed.`, SYSTEM_JOB_HINT);
    };
    const removed = await this.serial(async () => {
      if (!this.started) {
        await this.syncReadable();
        const job = this.jobs.find((candidate) => candidate.id === id);
        if (!job) return undefined;
        refuse(job);
        await appendAction(this.workspace, 'del', id);
        await this.syncFromDisk();
        return job;
      }
      return this.update((data) => {
        const index = data.jobs.findIndex((job) => job.id === id);
        const job = data.jobs[index];
        if (!job) return undefined;
        refuse(job);
        data.jobs.splice(index, 1);
        return job;
      });
    });
    this.arm();
    if (removed) this.log.info(`cron: removed '${removed.name}' (${id})`);
    return removed;
  }

  /**
   * Enables or disables a user job (nanobot's enable_job): enabling schedules its next run from now, disabling
   * clears it. Undefined when there is no such id; a system job is refused.
   */
  async setEnabled(id: string, enabled: boolean): Promise<CronJob | undefined> {
    return this.modify(id, (job) => {
      job.enabled = enabled;
    });
  }

  /**
   * Changes a user job's name, message or schedule (nanobot's update_job; what the WebUI's edit form sends). The
   * schedule is checked as `add` checks it, and the next run is computed again. Undefined when there is no such id.
   */
  async edit(id: string, change: CronJobEdit): Promise<CronJob | undefined> {
    const name = change.name?.trim();
    if (change.name !== undefined && !name) throw new CronError('A cron job needs a name.');
    const message = change.payloadMessage?.trim();
    if (change.payloadMessage !== undefined && !message) throw new CronError('A cron job needs a message.');
    const schedule = change.schedule ? this.checkedSchedule(change.schedule).schedule : undefined;
    return this.modify(id, (job) => {
      if (name) job.name = name;
      if (message) job.payload.message = message;
      if (schedule) {
        job.schedule = schedule;
        job.deleteAfterRun = change.deleteAfterRun ?? schedule.kind === 'at';
      } else if (change.deleteAfterRun !== undefined) job.deleteAfterRun = change.deleteAfterRun;
    });
  }

  /** A run of this job is in progress (scheduled or manual). */
  isRunning(id: string): boolean {
    return this.running.has(id);
  }

  /** Runs a job now, whatever its schedule; records the run but leaves the schedule (and `at` jobs) in place. */
  async runNow(id: string): Promise<CronRunResult> {
    await this.serial(() => this.syncReadable());
    const job = this.jobs.find((candidate) => candidate.id === id);
    if (!job) throw new CronError(`No cron job with id '${id}'.`, 'See the ids with `nanobot cron list`.');
    if (this.running.has(id)) throw new CronError(`Cron job '${id}' is already running.`);
    if (isProtectedJob(job))
      throw new CronError(`'${job.name}' is a protected system job; it is not run from jobs.json.`, SYSTEM_JOB_HINT);
    if (!isBoundJob(job)) throw new CronError(`'${job.name}' cannot run: ${UNBOUND_AGENT_JOB_REASON}.`, CHAT_IDS_HINT);
    return this.track(this.execute(job, 'manual'));
  }

  // ── internals ────────────────────────────────────────────────────────────────────────────────────────────────

  /** A schedule as stored, checked: valid, not in the past, and firing at least once. */
  private checkedSchedule(input: ScheduleInput): { schedule: CronSchedule; nextRunAtMs: number; now: number } {
    const schedule = toStoredSchedule(input);
    validateSchedule(schedule, this.timezone);
    const now = this.clock.now();
    if (schedule.kind === 'at' && schedule.atMs! <= now) {
      const tz = this.timezone ?? 'UTC';
      throw new CronError(
        `The time ${formatInstant(schedule.atMs!, tz)} (${tz}) is in the past; now is ${formatInstant(now, tz)}.`,
      );
    }
    const nextRunAtMs = nextRunAt(schedule, { nowMs: now, defaultTimezone: this.timezone });
    if (nextRunAtMs === null) throw new CronError(`The schedule '${schedule.expr}' never fires.`);
    return { schedule, nextRunAtMs, now };
  }

  /**
   * Changes one user job in the store (the scheduler's process writes jobs.json; any other logs the change to
   * action.jsonl, as nanobot's CLI does), then computes its next run again and keeps it bound (an unbound agent job
   * stays disabled). Undefined when there is no such id.
   */
  private async modify(id: string, change: (job: CronJob) => void): Promise<CronJob | undefined> {
    const apply = (job: CronJob): CronJob => {
      if (isProtectedJob(job))
        throw new CronError(`'${job.name}' is a protected system job and cannot be changed.`, SYSTEM_JOB_HINT);
      change(job);
      const now = this.clock.now();
      job.updatedAtMs = now;
      enforceBinding(job, now);
      job.state.nextRunAtMs = job.enabled ? safeNextRun(job.schedule, now, null, this.timezone) : null;
      return structuredClone(job);
    };
    const changed = await this.serial(async () => {
      if (this.started)
        return this.update((data) => {
          const job = data.jobs.find((candidate) => candidate.id === id);
          return job ? apply(job) : undefined;
        });
      await this.syncReadable();
      const current = this.jobs.find((candidate) => candidate.id === id);
      if (!current) return undefined;
      const job = apply(structuredClone(current));
      await appendAction(this.workspace, 'update', job);
      await this.syncFromDisk();
      return job;
    });
    this.arm();
    if (changed) this.log.info(`cron: changed '${changed.name}' (${id})`);
    return changed;
  }

  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const next = this.queue.then(fn, fn);
    this.queue = next.catch(() => {});
    return next;
  }

  private track<T>(promise: Promise<T>): Promise<T> {
    this.pending.add(promise);
    const forget = () => this.pending.delete(promise);
    promise.then(forget, forget);
    return promise;
  }

  private isSchedulable(job: CronJob): boolean {
    return (
      job.enabled &&
      !isProtectedJob(job) &&
      job.state.nextRunAtMs != null &&
      !this.running.has(job.id) &&
      !this.scheduleProblems.has(job.id)
    );
  }

  private adopt(data: CronStoreData, stamp: string | null): void {
    this.loaded = true;
    this.jobs = data.jobs;
    this.stamp = stamp;
    if (data.invalid.length && data.invalid.map((entry) => entry.problem).join() !== this.invalidEntries.join())
      for (const entry of data.invalid) this.log.warn(`cron: ${this.storePath}: ${entry.problem} (entry ignored)`);
    this.invalidEntries = data.invalid.map((entry) => entry.problem);
    const previous = new Map(this.scheduleProblems);
    this.scheduleProblems.clear();
    for (const job of this.jobs) {
      const problem = scheduleProblem(job.schedule, this.timezone);
      if (!problem) continue;
      this.scheduleProblems.set(job.id, problem);
      if (previous.get(job.id) !== problem)
        this.log.warn(`cron: job '${job.name}' (${job.id}) not scheduled: ${problem}`);
    }
  }

  /** Re-reads the store (lock held by the caller via `serial`). An unreadable file keeps the jobs loaded before. */
  private async syncFromDisk(): Promise<void> {
    const stamp = this.stampNow();
    if (this.loaded && stamp === this.stamp) return;
    let data: CronStoreData;
    try {
      data = await readCronStore(this.storePath);
    } catch (err) {
      if (stamp !== this.unreadableStamp)
        this.log.error(`cron: ${errorMessage(err)} Keeping the ${this.jobs.length} job(s) loaded before.`);
      this.unreadableStamp = stamp;
      this.unreadable = err;
      return;
    }
    this.unreadable = undefined;
    const { changed, pending } = this.mergePending(data);
    this.adopt(data, stamp);
    // Only the process running the scheduler writes jobs.json (as nanobot's): merged changes, migrations, and a
    // next run for jobs written without state (so it stays stable).
    if (!this.started) {
      fillNextRuns(data, this.clock.now(), this.timezone);
      return;
    }
    if (pending || changed || this.jobs.some((job) => needsNextRun(job, this.timezone)))
      await this.update((fresh) => fillNextRuns(fresh, this.clock.now(), this.timezone));
  }

  /** jobs.json and action.jsonl, as one stamp: either changing means a reload. */
  private stampNow(): string {
    const part = (stamp: FileStamp | null) => (stamp ? `${stamp.ino}:${stamp.size}:${stamp.mtimeMs}` : '-');
    return `${part(fileStamp(this.storePath))}|${part(fileStamp(actionLogPath(this.workspace)))}`;
  }

  /** Applies action.jsonl and the load-time migrations to `data`; reports whether anything changed. */
  private mergePending(data: CronStoreData): { changed: boolean; pending: boolean } {
    const log = readActionLog(this.workspace);
    if (log.problems.join() !== this.actionProblems.join())
      for (const problem of log.problems) this.log.warn(`cron: ${problem}`);
    this.actionProblems = log.problems;
    if (log.actions.length) data.jobs = applyActions(data.jobs, log.actions);
    const now = this.clock.now();
    let changed = false;
    for (const job of data.jobs) {
      const migrated = migrateJob(job, now);
      const disabled = enforceBinding(job, now);
      if (disabled && !migrated) this.log.warn(`cron: disabled '${job.name}' (${job.id}): ${UNBOUND_AGENT_JOB_REASON}`);
      changed = changed || migrated || disabled;
    }
    return { changed, pending: log.pending };
  }

  /** syncFromDisk for a caller that reports jobs: an unreadable store never loaded before is an error, not "none". */
  private async syncReadable(): Promise<void> {
    await this.syncFromDisk();
    if (!this.loaded && this.unreadable !== undefined) throw this.unreadable;
  }

  /** Read-modify-write of the store under the file lock; the result becomes this instance's view. */
  private async update<T>(change: (data: CronStoreData) => T): Promise<T> {
    // nanobot's lock first (it guards action.jsonl), then ours (jobs.json): every writer takes them in this order.
    return withActionLogLock(this.workspace, async () => {
      let pending = false;
      const { data, value } = await updateCronStore(this.storePath, (fresh) => {
        pending = this.mergePending(fresh).pending;
        return change(fresh);
      });
      if (pending) clearActionLog(this.workspace);
      this.adopt(data, this.stampNow());
      return value;
    });
  }

  private arm(): void {
    if (this.timer !== undefined) this.clock.clearTimer(this.timer);
    this.timer = undefined;
    if (!this.started) return;
    const next = this.nextWakeAt();
    const delay = next === null ? this.maxSleepMs : Math.min(this.maxSleepMs, Math.max(0, next - this.clock.now()));
    this.timer = this.clock.setTimer(() => this.tick(), delay);
  }

  private tick(): void {
    this.timer = undefined;
    const work = this.serial(async () => {
      if (!this.started) return [];
      await this.syncFromDisk();
      const now = this.clock.now();
      const due = this.jobs.filter((job) => this.isSchedulable(job) && job.state.nextRunAtMs! <= now);
      for (const job of due) this.running.add(job.id);
      return due;
    })
      .then((due) => {
        for (const job of due) this.track(this.execute(job, 'schedule'));
      })
      .catch((err) => this.log.error(`cron: ${errorMessage(err)}`))
      .finally(() => this.arm());
    this.track(work);
  }

  private async execute(job: CronJob, trigger: RunTrigger): Promise<CronRunResult> {
    this.running.add(job.id);
    const dueMs = job.state.nextRunAtMs ?? null;
    const startedAt = this.clock.now();
    this.log.info(`cron: running '${job.name}' (${job.id})`);
    let result: CronRunResult;
    try {
      result = await runAsCronJob(job, () => this.onRun(structuredClone(job)));
    } catch (err) {
      result = { status: 'error', error: errorMessage(err) };
    }
    const finishedAt = this.clock.now();
    const run: FinishedRun = { trigger, dueMs, startedAt, finishedAt, result };
    const record = (data: CronStoreData) => recordRun(data, job.id, run, this.timezone);
    try {
      await this.serial(() => this.update(record));
    } catch (err) {
      this.log.error(`cron: could not record the run of '${job.name}' (${job.id}): ${errorMessage(err)}`);
      // Advance in memory anyway, so an unwritable store cannot make the job fire again and again.
      record({ meta: {}, jobs: this.jobs, invalid: [] });
    } finally {
      this.running.delete(job.id);
      this.arm();
    }
    if (result.status === 'error') {
      const recorded = this.jobs.find((candidate) => candidate.id === job.id) ?? job;
      this.log.warn(`cron: ${describeFailure(recorded, result.error, this.timezone)}`);
    }
    return result;
  }

  private startWatching(): void {
    if (!this.useWatch || this.watcher) return;
    const file = basename(this.storePath);
    try {
      this.watcher = watch(dirname(this.storePath), { persistent: false }, (_event, filename) => {
        if (!filename || filename === file || filename === ACTION_LOG_FILE) this.onStoreEvent();
      });
      this.watcher.on('error', (err) => {
        this.log.debug(`cron: watch failed (${err.message}); relying on periodic checks`);
        this.watcher?.close();
        this.watcher = undefined;
      });
    } catch (err) {
      this.log.debug(
        `cron: cannot watch ${dirname(this.storePath)} (${errorMessage(err)}); relying on periodic checks`,
      );
    }
  }

  /** Bursts of events (temp file, rename, lock) collapse into one reload. */
  private onStoreEvent(): void {
    if (this.watchDebounce || !this.started) return;
    this.watchDebounce = setTimeout(() => {
      this.watchDebounce = undefined;
      const reload = this.serial(() => this.syncFromDisk())
        .catch((err) => this.log.error(`cron: ${errorMessage(err)}`))
        .finally(() => this.arm());
      this.track(reload);
    }, WATCH_DEBOUNCE_MS).unref();
  }
}

function uniqueJobId(jobs: CronJob[]): string {
  for (;;) {
    const id = randomBytes(4).toString('hex');
    if (!jobs.some((job) => job.id === id)) return id;
  }
}

/** The jobs as every reader sees them (jobs.json with action.jsonl applied), for a reader with no service at hand. */
export function listCronJobs(workspace: string, timezone?: string): Promise<CronJob[]> {
  const notHere = async () => ({ status: 'error' as const, error: 'read-only view' });
  return new CronService({ workspace, onRun: notHere, watch: false, ...(timezone ? { timezone } : {}) }).list();
}
