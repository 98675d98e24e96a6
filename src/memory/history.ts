/**
 * HistoryStore: `<workspace>/memory/history.jsonl`, nanobot's append-only archive of conversation summaries.
 * One entry per line: `{"cursor":int,"timestamp":"YYYY-MM-DD HH:MM","content":str,"session_key"?}`.
 *
 * Cursors are handed out under an in-process mutex plus a proper-lockfile lock on the file, so two processes
 * (gateway + CLI) never reuse one; `memory/.cursor` holds the last cursor. Dream consumes entries after
 * `memory/.dream_cursor`, so trimming never drops those.
 */
import { join } from 'node:path';
import {
  closeDirectory,
  entryPath,
  PRIVATE_DIR_MODE,
  PRIVATE_FILE_MODE,
  type WorkspaceFileHandle,
  WorkspaceFs,
  WorkspaceFsError,
} from '../security/workspace-fs.js';
import { lockFile } from '../util/lock.js';
import { type Logger, silentLogger } from '../util/log.js';
import { estimateTextTokens } from './tokens.js';

export interface HistoryEntry {
  cursor: number;
  timestamp: string;
  content: string;
  session_key?: string;
}

export interface HistoryStoreOptions {
  timezone?: string;
  /** Injectable clock for timestamps. */
  now?: () => Date;
  log?: Logger;
}

export interface EntryLimits {
  /** Keep at most this many (the newest). */
  maxEntries?: number;
  /** Keep the newest entries whose estimated tokens fit in this. */
  maxTokens?: number;
  /** Only entries this accepts count (applied before the limits). */
  visible?: (entry: HistoryEntry) => boolean;
}

export const DEFAULT_HISTORY_KEEP = 1000;
const TRIM_EVERY_APPENDS = 100;
/** How far back from the end to look for the last complete line when repairing or reading the last cursor. */
const TAIL_PROBE_BYTES = 256 * 1024;

/** Memory files hold the user's conversations: owner-only, like the sessions. */
export const MEMORY_FILE_MODE = PRIVATE_FILE_MODE;
export const MEMORY_DIR_MODE = PRIVATE_DIR_MODE;
const MEMORY = 'memory';
const HISTORY = 'memory/history.jsonl';
const CURSOR = 'memory/.cursor';
const DREAM_CURSOR = 'memory/.dream_cursor';
const WRITE = { mode: MEMORY_FILE_MODE, dirMode: MEMORY_DIR_MODE } as const;

/** One mutex per file path, shared by every HistoryStore instance in the process. */
const processLocks = new Map<string, Promise<unknown>>();

export class HistoryStore {
  readonly dir: string;
  readonly path: string;
  readonly cursorPath: string;
  readonly dreamCursorPath: string;
  private readonly log: Logger;
  private readonly wfs: WorkspaceFs;
  private readonly warned = new Set<string>();
  private cache: { ino: number; size: number; mtimeMs: number; entries: HistoryEntry[] } | undefined;
  private dreamCursor: { ino: number; size: number; mtimeMs: number; value: number } | undefined;

  constructor(
    workspace: string,
    private readonly options: HistoryStoreOptions = {},
  ) {
    this.dir = join(workspace, 'memory');
    this.path = join(this.dir, 'history.jsonl');
    this.cursorPath = join(this.dir, '.cursor');
    this.dreamCursorPath = join(this.dir, '.dream_cursor');
    this.log = options.log ?? silentLogger;
    this.wfs = new WorkspaceFs(workspace);
  }

  /** Appends one entry and returns it; the line is on disk (fsynced) when this resolves. */
  async append(content: string, sessionKey?: string): Promise<HistoryEntry> {
    const entry = await this.withLock(async () => {
      const lastInFile = await this.repairTail();
      const cursor = Math.max(this.readInt(CURSOR), lastInFile) + 1;
      const entry: HistoryEntry = {
        cursor,
        timestamp: formatHistoryTimestamp(this.now(), this.options.timezone ?? 'UTC'),
        content,
        ...(sessionKey ? { session_key: sessionKey } : {}),
      };
      this.wfs.appendFileSync(HISTORY, `${JSON.stringify(entry)}\n`, { ...WRITE, fsync: true });
      // After the line: if we crash in between, the next append still sees the cursor in the file's tail.
      this.wfs.writeFileAtomicSync(CURSOR, `${cursor}\n`, WRITE);
      return entry;
    });
    // Keeps the file near its cap without reading it on every append.
    if (entry.cursor % TRIM_EVERY_APPENDS === 0) await this.trim();
    return entry;
  }

  /** Every valid entry, oldest first. Cached until the file changes; corrupt lines warn once per load. */
  readAll(): HistoryEntry[] {
    const stat = this.statOrWarn(HISTORY);
    if (!stat) return [];
    const cached = this.cache;
    if (cached && cached.ino === stat.ino && cached.size === stat.size && cached.mtimeMs === stat.mtimeMs) {
      return cached.entries;
    }
    const text = this.readOrWarn(HISTORY);
    if (text === undefined) return [];
    const entries = this.parse(text);
    this.cache = { ino: stat.ino, size: stat.size, mtimeMs: stat.mtimeMs, entries };
    return entries;
  }

  /** Entries with cursor > `cursor`, oldest first, limited to the newest that fit `limits`. */
  entriesAfter(cursor: number, limits: EntryLimits = {}): HistoryEntry[] {
    const visible = limits.visible ?? (() => true);
    const after = this.readAll().filter((entry) => entry.cursor > cursor && visible(entry));
    const maxEntries = limits.maxEntries ?? Number.POSITIVE_INFINITY;
    const maxTokens = limits.maxTokens ?? Number.POSITIVE_INFINITY;
    const kept: HistoryEntry[] = [];
    let tokens = 0;
    for (let i = after.length - 1; i >= 0 && kept.length < maxEntries; i--) {
      const entry = after[i];
      if (!entry) break;
      tokens += estimateTextTokens(entry.content) + 8;
      if (tokens > maxTokens) break;
      kept.push(entry);
    }
    return kept.reverse();
  }

  /**
   * Keeps the newest `keep` entries, plus every entry Dream has not processed yet (cursor > dream cursor),
   * however many. Rewrites the file atomically; returns how many entries were dropped.
   */
  async trim(keep = DEFAULT_HISTORY_KEEP): Promise<number> {
    return this.withLock(async () => {
      const text = this.wfs.readTextIfExistsSync(HISTORY);
      if (text === undefined) return 0;
      const entries = this.parse(text);
      const dreamCursor = this.readDreamCursor();
      const firstKept = entries.length - keep;
      const kept = entries.filter((entry, index) => index >= firstKept || entry.cursor > dreamCursor);
      const dropped = entries.length - kept.length;
      if (dropped === 0) return 0;
      this.wfs.writeFileAtomicSync(HISTORY, kept.map((entry) => `${JSON.stringify(entry)}\n`).join(''), WRITE);
      return dropped;
    });
  }

  /** Read before every turn's prompt: cached while the file's inode, size and mtime stay the same (one stat). */
  readDreamCursor(): number {
    const stat = this.statOrWarn(DREAM_CURSOR);
    if (!stat) return 0;
    const cached = this.dreamCursor;
    if (cached && cached.ino === stat.ino && cached.size === stat.size && cached.mtimeMs === stat.mtimeMs) {
      return cached.value;
    }
    const value = this.readInt(DREAM_CURSOR);
    this.dreamCursor = { ino: stat.ino, size: stat.size, mtimeMs: stat.mtimeMs, value };
    return value;
  }

  async writeDreamCursor(cursor: number): Promise<void> {
    if (!Number.isSafeInteger(cursor) || cursor < 0) throw new Error(`invalid dream cursor ${cursor}`);
    this.wfs.writeFileAtomicSync(DREAM_CURSOR, `${cursor}\n`, WRITE);
  }

  /** Dream's view of the log (`HistorySource` in dream-history.ts): the oldest unprocessed entries first. */
  asDreamSource(): {
    entriesAfter(cursor: number, limit: number): Promise<HistoryEntry[]>;
    readDreamCursor(): Promise<number>;
    writeDreamCursor(cursor: number): Promise<void>;
  } {
    return {
      entriesAfter: async (cursor, limit) => this.entriesAfter(cursor).slice(0, limit),
      readDreamCursor: async () => this.readDreamCursor(),
      writeDreamCursor: (cursor) => this.writeDreamCursor(cursor),
    };
  }

  /** The last cursor handed out (0 when none). */
  readCursor(): number {
    return Math.max(this.readInt(CURSOR), this.readAll().at(-1)?.cursor ?? 0);
  }

  /** stat through the workspace-file layer; a refused path (a link out, a FIFO) warns once and counts as absent. */
  private statOrWarn(rel: string): { ino: number; size: number; mtimeMs: number } | undefined {
    try {
      const stat = this.wfs.statSync(rel);
      return stat?.isFile() ? stat : undefined;
    } catch (error) {
      this.warnRefused(rel, error);
      return undefined;
    }
  }

  private readOrWarn(rel: string): string | undefined {
    try {
      return this.wfs.readTextIfExistsSync(rel);
    } catch (error) {
      this.warnRefused(rel, error);
      return undefined;
    }
  }

  private warnRefused(rel: string, error: unknown): void {
    if (!(error instanceof WorkspaceFsError)) throw error;
    if (this.warned.has(rel)) return;
    this.warned.add(rel);
    this.log.warn(`${error.message}; ${rel} is ignored until it is a plain file again`);
  }

  private readInt(rel: string): number {
    const text = this.readOrWarn(rel);
    return text === undefined ? 0 : toCursor(text);
  }

  private now(): Date {
    return this.options.now?.() ?? new Date();
  }

  private parse(text: string): HistoryEntry[] {
    const entries: HistoryEntry[] = [];
    let corrupt = 0;
    for (const line of text.split('\n')) {
      if (!line.trim()) continue;
      const entry = parseEntry(line);
      if (entry) entries.push(entry);
      else corrupt++;
    }
    if (corrupt > 0) this.log.warn(`${this.path}: skipped ${corrupt} corrupt line(s)`);
    return entries;
  }

  /**
   * A crash mid-append can leave a last line without its newline; the next append would glue onto it and
   * corrupt both. Drop such a fragment (or just terminate it, if it is a whole entry). Returns the last
   * cursor found in the file's tail. Runs under the lock.
   */
  private async repairTail(): Promise<number> {
    let file: WorkspaceFileHandle;
    try {
      file = this.wfs.openFile(HISTORY, 'update');
    } catch (error) {
      if (error instanceof WorkspaceFsError) throw error;
      return 0;
    }
    try {
      const size = file.size;
      const start = Math.max(0, size - TAIL_PROBE_BYTES);
      const buffer = file.read(size - start, start);
      const lastNewline = buffer.lastIndexOf(0x0a);
      const fragment = buffer.subarray(lastNewline + 1);
      if (fragment.length > 0) {
        // With no newline in the probe window the fragment may be a huge foreign line: terminate, never cut.
        if (parseEntry(fragment.toString('utf8')) || (lastNewline === -1 && start > 0)) {
          file.write('\n', size);
        } else {
          this.log.warn(`${this.path}: dropped a torn last line (${fragment.length} bytes) left by a crash`);
          file.truncate(start + lastNewline + 1);
        }
        file.sync();
      }
      return lastCursorIn(buffer.toString('utf8'));
    } finally {
      file.close();
    }
  }

  private async withLock<T>(fn: () => Promise<T>): Promise<T> {
    const previous = processLocks.get(this.path) ?? Promise.resolve();
    const run = previous
      .catch(() => undefined)
      .then(async () => {
        // The lock directory is made through the opened memory/ directory: a memory/ link out is refused here.
        const dir = this.wfs.openDirectorySync(MEMORY, MEMORY_DIR_MODE);
        const release = await (await lockFile())(entryPath(dir, 'history.jsonl'), {
          realpath: false,
          lockfilePath: entryPath(dir, 'history.jsonl.lock'),
          stale: 10_000,
          retries: { retries: 100, minTimeout: 5, maxTimeout: 200, factor: 1.5 },
          onCompromised: (error) => this.log.warn(`${this.path}: history lock compromised: ${error.message}`),
        }).catch((error: unknown) => {
          closeDirectory(dir);
          throw error;
        });
        try {
          return await fn();
        } finally {
          await release().catch(() => undefined);
          closeDirectory(dir);
        }
      });
    processLocks.set(this.path, run);
    void run
      .finally(() => {
        if (processLocks.get(this.path) === run) processLocks.delete(this.path);
      })
      .catch(() => undefined);
    return run;
  }
}

function parseEntry(line: string): HistoryEntry | undefined {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null) return undefined;
  const { cursor, timestamp, content, session_key } = value as Record<string, unknown>;
  if (!Number.isSafeInteger(cursor) || typeof content !== 'string') return undefined;
  return {
    cursor: cursor as number,
    timestamp: typeof timestamp === 'string' ? timestamp : '',
    content,
    ...(typeof session_key === 'string' ? { session_key } : {}),
  };
}

function lastCursorIn(text: string): number {
  const lines = text.split('\n');
  for (let i = lines.length - 1; i >= 0; i--) {
    const entry = parseEntry(lines[i] ?? '');
    if (entry) return entry.cursor;
  }
  return 0;
}

function toCursor(text: string): number {
  const value = Number.parseInt(text.trim(), 10);
  return Number.isSafeInteger(value) && value > 0 ? value : 0;
}

/** `YYYY-MM-DD HH:MM` in `timezone` (nanobot's history timestamp). */
export function formatHistoryTimestamp(date: Date, timezone: string): string {
  if (timezone === 'UTC') return date.toISOString().slice(0, 16).replace('T', ' ');
  try {
    const parts = new Intl.DateTimeFormat('en-CA', {
      timeZone: timezone,
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      hourCycle: 'h23',
    }).formatToParts(date);
    const get = (type: Intl.DateTimeFormatPartTypes) => parts.find((part) => part.type === type)?.value ?? '00';
    return `${get('year')}-${get('month')}-${get('day')} ${get('hour')}:${get('minute')}`;
  } catch {
    return date.toISOString().slice(0, 16).replace('T', ' ');
  }
}
