/**
 * `<workspace>/cron/jobs.json`: read, validate, write. Writes are atomic and happen under a cross-process lock
 * (the gateway and `nanobot cron add` both write the file) after re-reading it, so neither side loses the other's
 * jobs. Entries that fail validation are kept in the file untouched and never scheduled.
 */
import { basename, dirname, join } from 'node:path';
import { closeDirectory, entryPath, WorkspaceFs } from '../security/workspace-fs.js';
import { lockFile } from '../util/lock.js';
import { toStoredJob } from './format.js';
import { CronError, type CronJob, CronJobSchema } from './types.js';

export interface CronStoreData {
  /** Top-level fields other than `jobs` (`version`, anything newer), written back as read. */
  meta: Record<string, unknown>;
  jobs: CronJob[];
  /** Entries that are not valid jobs: written back unchanged so a hand edit is never silently lost. */
  invalid: Array<{ raw: unknown; problem: string }>;
}

/** Identifies one version of the file cheaply (an atomic write changes the inode). */
export interface FileStamp {
  ino: number;
  size: number;
  mtimeMs: number;
}

export function cronStorePath(workspace: string): string {
  return join(workspace, 'cron', 'jobs.json');
}

export function emptyStore(): CronStoreData {
  return { meta: { version: 1 }, jobs: [], invalid: [] };
}

/**
 * The store lives in the workspace, where the sandboxed shell can plant links: it is reached through the
 * workspace-file layer rooted two levels up (`<workspace>` for `<workspace>/cron/jobs.json`), so a `cron/` or
 * `jobs.json` link out of it is refused instead of followed.
 */
function storeFs(path: string): { wfs: WorkspaceFs; dir: string; rel: string } {
  const dir = basename(dirname(path));
  return { wfs: new WorkspaceFs(dirname(dirname(path))), dir, rel: join(dir, basename(path)) };
}

/** Creates the store's directory (never through a link); throws WorkspaceEscapeError when it is a link out. */
export function ensureCronStoreDir(path: string): void {
  const { wfs, dir } = storeFs(path);
  wfs.mkdirSync(dir);
}

export function fileStamp(path: string): FileStamp | null {
  try {
    const { wfs, rel } = storeFs(path);
    const info = wfs.statSync(rel);
    if (!info) return null;
    return { ino: info.ino, size: info.size, mtimeMs: info.mtimeMs };
  } catch {
    return null;
  }
}

export function sameStamp(a: FileStamp | null, b: FileStamp | null): boolean {
  if (!a || !b) return a === b;
  return a.ino === b.ino && a.size === b.size && a.mtimeMs === b.mtimeMs;
}

const SNAKE_FALLBACKS: Record<string, readonly string[]> = {
  job: ['createdAtMs', 'updatedAtMs', 'deleteAfterRun'],
  schedule: ['atMs', 'everyMs'],
  payload: ['channelMeta', 'sessionKey', 'originChannel', 'originChatId', 'originMetadata', 'modelPreset'],
  state: ['nextRunAtMs', 'lastRunAtMs', 'lastStatus', 'lastError', 'runHistory'],
  record: ['runAtMs', 'durationMs'],
};

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** nanobot reads snake_case as a fallback (older files); rename those keys so the schema sees camelCase. */
export function camelizeKnownKeys(value: unknown, level: keyof typeof SNAKE_FALLBACKS): unknown {
  if (!isRecord(value)) return value;
  const out: Record<string, unknown> = { ...value };
  for (const camel of SNAKE_FALLBACKS[level] ?? []) {
    const snake = camel.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
    if (snake in out && !(camel in out)) {
      out[camel] = out[snake];
      delete out[snake];
    }
  }
  if (level === 'job') {
    out.schedule = camelizeKnownKeys(out.schedule, 'schedule');
    out.payload = camelizeKnownKeys(out.payload, 'payload');
    out.state = camelizeKnownKeys(out.state, 'state');
  }
  if (level === 'state' && Array.isArray(out.runHistory))
    out.runHistory = out.runHistory.map((record) => camelizeKnownKeys(record, 'record'));
  return out;
}

/** Parses the file's text; throws CronError when it is not JSON or not `{"jobs": [...]}`. */
export function parseCronStore(text: string, path: string): CronStoreData {
  if (!text.trim()) return emptyStore();
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw new CronError(
      `${path} is not valid JSON (${err instanceof Error ? err.message : String(err)}).`,
      'Fix the file by hand or move it away; jobs are not changed while it is unreadable.',
    );
  }
  if (!isRecord(parsed) || !Array.isArray(parsed.jobs ?? []))
    throw new CronError(`${path} must be an object like {"version":1,"jobs":[...]}.`);
  const { jobs: rawJobs = [], ...meta } = parsed as { jobs?: unknown[] } & Record<string, unknown>;
  const data: CronStoreData = { meta: { version: 1, ...meta }, jobs: [], invalid: [] };
  const seen = new Set<string>();
  rawJobs.forEach((raw, index) => {
    const result = CronJobSchema.safeParse(camelizeKnownKeys(raw, 'job'));
    if (!result.success) {
      const issue = result.error.issues[0];
      const where = issue?.path.length ? `${issue.path.join('.')}: ` : '';
      data.invalid.push({ raw, problem: `job #${index + 1}: ${where}${issue?.message ?? 'invalid'}` });
    } else if (seen.has(result.data.id)) {
      data.invalid.push({ raw, problem: `job #${index + 1}: duplicate id '${result.data.id}'` });
    } else {
      seen.add(result.data.id);
      data.jobs.push(result.data);
    }
  });
  return data;
}

/** A missing file is an empty store. */
export async function readCronStore(path: string): Promise<CronStoreData> {
  let text: string;
  try {
    const { wfs, rel } = storeFs(path);
    const read = await wfs.readTextIfExists(rel);
    if (read === undefined) return emptyStore();
    text = read;
  } catch (err) {
    throw new CronError(`Cannot read ${path}: ${(err as Error).message}`);
  }
  return parseCronStore(text, path);
}

export function serializeCronStore(data: CronStoreData): string {
  const body = { ...data.meta, jobs: [...data.jobs.map(toStoredJob), ...data.invalid.map((entry) => entry.raw)] };
  return `${JSON.stringify(body, null, 2)}\n`;
}

export async function writeCronStore(path: string, data: CronStoreData): Promise<void> {
  const { wfs, rel } = storeFs(path);
  await wfs.writeFileAtomic(rel, serializeCronStore(data));
}

/** Runs `fn` while holding the cross-process lock on the store (a `jobs.json.lock` directory beside it). */
export async function withCronStoreLock<T>(path: string, fn: () => Promise<T>): Promise<T> {
  const { wfs, dir } = storeFs(path);
  // The lock directory is made through the opened store directory, never through a link.
  const anchored = wfs.openDirectorySync(dir, 0o755);
  try {
    const release = await (await lockFile())(entryPath(anchored, basename(path)), {
      realpath: false,
      lockfilePath: entryPath(anchored, `${basename(path)}.lock`),
      stale: 10_000,
      retries: { retries: 100, minTimeout: 5, maxTimeout: 200, factor: 1.5 },
    });
    try {
      return await fn();
    } finally {
      await release().catch(() => {});
    }
  } finally {
    closeDirectory(anchored);
  }
}

/** Re-reads the store under the lock, applies `change` and writes the result back if anything changed. */
export async function updateCronStore<T>(
  path: string,
  change: (data: CronStoreData) => T,
): Promise<{ data: CronStoreData; value: T }> {
  return withCronStoreLock(path, async () => {
    const data = await readCronStore(path);
    const before = serializeCronStore(data);
    const value = change(data);
    const after = serializeCronStore(data);
    if (after !== before) await storeFs(path).wfs.writeFileAtomic(storeFs(path).rel, after);
    return { data, value };
  });
}
