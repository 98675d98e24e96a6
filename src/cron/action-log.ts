/**
 * `<workspace>/cron/action.jsonl`, nanobot's log of job changes made by a process that does not run the scheduler
 * (`nanobot agent`, our `nanobot cron add`): one `{"action": "add"|"update"|"del", "params": …}` per line. Every
 * reader applies it over jobs.json (an `add`/`update` replaces the job with that id, a `del` drops `params.job_id`);
 * only the process running the scheduler writes the result into jobs.json and empties the log.
 *
 * nanobot guards the log with an flock on `<workspace>/cron.lock` (see security/workspace-flock.ts). Without
 * `flock(1)` (macOS) appends are still whole single writes, and our processes still exclude each other.
 */
import { withWorkspaceFlock } from '../security/workspace-flock.js';
import { WorkspaceFs } from '../security/workspace-fs.js';
import { errorMessage } from '../util/errors.js';
import { toActionParams } from './format.js';
import { camelizeKnownKeys } from './store.js';
import { type CronJob, CronJobSchema } from './types.js';

const LOG = 'cron/action.jsonl';
const LOCK = 'cron.lock';

export type CronAction = { type: 'upsert'; job: CronJob } | { type: 'del'; id: string };

export interface ActionLog {
  actions: CronAction[];
  /** Lines that could not be applied (nanobot logs and skips them too). */
  problems: string[];
  /** The log has content (a running scheduler empties it after merging). */
  pending: boolean;
}

export function actionLogPath(workspace: string): string {
  return new WorkspaceFs(workspace).pathOf(LOG);
}

/** Parses the log's text the way nanobot applies it: a line without `action` is skipped, any other action upserts. */
export function parseActionLog(text: string): ActionLog {
  const log: ActionLog = { actions: [], problems: [], pending: text.trim() !== '' };
  text.split('\n').forEach((line, index) => {
    if (!line.trim()) return;
    const where = `action.jsonl line ${index + 1}`;
    let entry: unknown;
    try {
      entry = JSON.parse(line);
    } catch (err) {
      log.problems.push(`${where}: not JSON (${errorMessage(err)})`);
      return;
    }
    if (typeof entry !== 'object' || entry === null || !('action' in entry)) return;
    const { action, params } = entry as { action: unknown; params?: unknown };
    if (action === 'del') {
      const id = (params as { job_id?: unknown } | undefined)?.job_id;
      if (typeof id === 'string' && id) log.actions.push({ type: 'del', id });
      return;
    }
    const parsed = CronJobSchema.safeParse(camelizeKnownKeys(params ?? {}, 'job'));
    if (parsed.success) log.actions.push({ type: 'upsert', job: parsed.data });
    else log.problems.push(`${where}: ${parsed.error.issues[0]?.message ?? 'not a job'} (skipped)`);
  });
  return log;
}

export function readActionLog(workspace: string): ActionLog {
  let text: string | undefined;
  try {
    text = new WorkspaceFs(workspace).readTextIfExistsSync(LOG, { maxBytes: 16 * 1024 * 1024 });
  } catch (err) {
    return { actions: [], problems: [`cannot read ${actionLogPath(workspace)}: ${errorMessage(err)}`], pending: false };
  }
  return text === undefined ? { actions: [], problems: [], pending: false } : parseActionLog(text);
}

/** Applies the log to `jobs` in nanobot's order: a replaced job keeps its place, a new one goes last. */
export function applyActions(jobs: CronJob[], actions: readonly CronAction[]): CronJob[] {
  const byId = new Map(jobs.map((job) => [job.id, job]));
  for (const action of actions) {
    if (action.type === 'del') byId.delete(action.id);
    else byId.set(action.job.id, structuredClone(action.job));
  }
  return [...byId.values()];
}

/** Appends one change for the scheduler (ours or nanobot's) to merge; the line has exactly nanobot's fields. */
export async function appendAction(workspace: string, action: 'add' | 'update', job: CronJob): Promise<void>;
export async function appendAction(workspace: string, action: 'del', jobId: string): Promise<void>;
export async function appendAction(workspace: string, action: 'add' | 'update' | 'del', target: CronJob | string) {
  const params = typeof target === 'string' ? { job_id: target } : toActionParams(target);
  const line = `${JSON.stringify({ action, params })}\n`;
  await withActionLogLock(workspace, async () => {
    new WorkspaceFs(workspace).appendFileSync(LOG, line, { fsync: true });
  });
}

/** Empties the log after its changes were written into jobs.json (the caller holds the lock). */
export function clearActionLog(workspace: string): void {
  new WorkspaceFs(workspace).writeFileAtomicSync(LOG, '');
}

/** Runs `fn` holding nanobot's flock on `<workspace>/cron.lock`. */
export function withActionLogLock<T>(workspace: string, fn: () => Promise<T>): Promise<T> {
  return withWorkspaceFlock(workspace, LOCK, fn);
}
