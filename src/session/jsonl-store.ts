/**
 * nanobot's JSONL session format: a metadata line, then one message per line.
 * Files live outside the workspace (`<data>/sessions/<workspace-id>/<base64url(key)>.jsonl`) so the agent's
 * file tools cannot rewrite its own transcript.
 *
 * Saves append: only the messages added since the session object was loaded or saved, plus a new metadata line
 * when its metadata changed (nanobot's loader lets the last metadata line win wherever it is), in one fsynced
 * O_APPEND write — so a turn in a 10,000-message session writes kilobytes, not the whole file. The file is
 * rewritten atomically when saved messages were removed or replaced, and compacted once superseded metadata lines
 * pile up. Loads are served from a cache while the file's size, mtime and inode are the ones this store last saw.
 * Damaged lines are skipped with a warning; a torn last line is cut off before the next append.
 */
import { constants, type Stats } from 'node:fs';
import { type FileHandle, open, readdir, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { ChatMessage } from '../providers/types.js';
import { writeFileAtomic } from '../util/fs.js';
import { type Logger, silentLogger } from '../util/log.js';
import { newSession, type Session, type SessionStore, type SessionSummary } from './types.js';

interface MetadataLine {
  _type: 'metadata';
  key: string;
  created_at: string;
  updated_at: string;
  metadata: Record<string, unknown>;
  last_consolidated: number;
}

export interface JsonlSessionStoreOptions {
  /** Rewrite the file once this many metadata lines have accumulated since the last rewrite. */
  compactAfterMetadataLines?: number;
  /** Upper bound on the file bytes whose parsed sessions the load cache keeps (least recently used go first). */
  cacheBytes?: number;
}

/** Identifies one version of a file: a rename changes the inode, an append the size and mtime. */
interface FileStamp {
  size: number;
  mtimeMs: number;
  ino: number;
}

/** What one session object has on disk already: its messages (by identity) and its header. */
interface Persisted {
  /** Shared with the cache snapshot, never mutated: each save replaces it. */
  messages: readonly ChatMessage[];
  header: string;
  preserved: string;
  /** The file as this object last loaded or wrote it; undefined when that is not known exactly. */
  stamp: FileStamp | undefined;
}

/** Metadata lines written since the file was last rewritten (what compaction would reclaim), and the file's size. */
interface MetadataGrowth {
  lines: number;
  bytes: number;
  fileBytes: number;
}

interface CacheEntry {
  stamp: FileStamp;
  snapshot: Session;
}

interface AppendResult {
  /** The file before this append (including any torn tail it cut off). */
  before: FileStamp;
  after: FileStamp;
  /** True when the file holds exactly its old complete lines plus ours: nobody else wrote in between. */
  clean: boolean;
}

const DEFAULT_COMPACT_AFTER_METADATA_LINES = 64;
const DEFAULT_CACHE_BYTES = 128 * 1024 * 1024;
/** Superseded metadata may take up to half of a file (and at least this much) before the file is compacted. */
const MIN_COMPACT_METADATA_BYTES = 1024 * 1024;
const TAIL_SCAN_CHUNK = 64 * 1024;
const NEWLINE = 0x0a;

export const encodeSessionKey = (key: string): string => Buffer.from(key, 'utf8').toString('base64url');
export const decodeSessionKey = (name: string): string => Buffer.from(name, 'base64url').toString('utf8');

/**
 * Callers own one session object per key at a time: `load` hands out a detached copy (its own messages array and
 * metadata; the message objects are shared and treated as immutable once saved), and `save` appends what that
 * object added. After editing a saved message in place, call `rewrite`.
 */
export class JsonlSessionStore implements SessionStore {
  private readonly persisted = new WeakMap<Session, Persisted>();
  private readonly growth = new Map<string, MetadataGrowth>();
  private readonly cache = new Map<string, CacheEntry>();
  private cachedBytes = 0;
  private readonly queues = new Map<string, Promise<void>>();
  private readonly compactAfterMetadataLines: number;
  private readonly cacheBytes: number;

  constructor(
    readonly dir: string,
    private readonly log: Logger = silentLogger,
    options: JsonlSessionStoreOptions = {},
  ) {
    this.compactAfterMetadataLines = options.compactAfterMetadataLines ?? DEFAULT_COMPACT_AFTER_METADATA_LINES;
    this.cacheBytes = options.cacheBytes ?? DEFAULT_CACHE_BYTES;
  }

  pathFor(key: string): string {
    return join(this.dir, `${encodeSessionKey(key)}.jsonl`);
  }

  load(key: string): Promise<Session> {
    const path = this.pathFor(key);
    return this.exclusive(path, async () => {
      const current = await stampOf(path);
      if (!current) {
        this.forget(path);
        return newSession(key);
      }
      const cached = this.cache.get(path);
      if (cached && sameStamp(cached.stamp, current)) {
        this.touch(path, cached);
        return this.handOut(cached.snapshot, cached.stamp);
      }
      return this.readAndParse(key, path);
    });
  }

  save(session: Session): Promise<void> {
    session.updatedAt = new Date().toISOString();
    const path = this.pathFor(session.key);
    return this.exclusive(path, () => this.persist(session, path, false));
  }

  /** Rewrites the whole file atomically, for callers that edited already-saved messages in place. */
  rewrite(session: Session): Promise<void> {
    session.updatedAt = new Date().toISOString();
    const path = this.pathFor(session.key);
    return this.exclusive(path, () => this.persist(session, path, true));
  }

  async list(): Promise<SessionSummary[]> {
    const names = await readdir(this.dir).catch(() => [] as string[]);
    const out: SessionSummary[] = [];
    for (const name of names) {
      if (!name.endsWith('.jsonl')) continue;
      const key = decodeSessionKey(name.slice(0, -'.jsonl'.length));
      const session = await this.load(key);
      out.push({ key, updatedAt: session.updatedAt, messageCount: session.messages.length });
    }
    return out.sort((a, b) => b.updatedAt.localeCompare(a.updatedAt));
  }

  delete(key: string): Promise<void> {
    const path = this.pathFor(key);
    return this.exclusive(path, async () => {
      await rm(path, { force: true });
      this.forget(path);
    });
  }

  private async readAndParse(key: string, path: string): Promise<Session> {
    let handle: FileHandle;
    try {
      handle = await open(path, 'r');
    } catch (err) {
      if (isMissing(err)) return newSession(key);
      throw err;
    }
    let stamp: FileStamp;
    let bytes: Buffer;
    try {
      stamp = toStamp(await handle.stat());
      bytes = await handle.readFile();
    } finally {
      await handle.close();
    }
    const parsed = parseSessionLines(bytes.toString('utf8'), key, path, this.log);
    this.growth.set(path, { ...parsed.metadata, fileBytes: bytes.length });
    // Another process may have appended between the stat and the read: then the stamp does not describe the text.
    // A stamp is also withheld from a file that does not end in a newline (a torn tail): a stamp vouches for the file
    // ending with a complete line, so appends can skip reading its tail.
    if (bytes.length !== stamp.size || (bytes.length > 0 && bytes[bytes.length - 1] !== NEWLINE)) {
      this.dropCached(path);
      return this.handOut(parsed.session, undefined);
    }
    this.remember(path, stamp, parsed.session);
    return this.handOut(parsed.session, stamp);
  }

  private async persist(session: Session, path: string, forceRewrite: boolean): Promise<void> {
    const header = headerOf(session);
    const preserved = JSON.stringify(session.preserved ?? []);
    const before = this.persisted.get(session);
    const lines = forceRewrite || !before ? undefined : linesToAppend(session, before, header, preserved);
    if (lines === undefined || (lines.hasMetadata && this.metadataOverflows(path, lines.metadataBytes))) {
      await this.rewriteFile(session, path, header, preserved);
      return;
    }
    if (lines.text === '') return; // Nothing new since this object was loaded or saved.

    const appended = await appendToSessionFile(path, lines.text, before?.stamp, session.key, this.log);
    if (!appended) {
      await this.rewriteFile(session, path, header, preserved); // Missing, empty or unreadable: start it afresh.
      return;
    }
    const growth = this.growth.get(path) ?? { lines: 1, bytes: 0, fileBytes: 0 };
    const added = lines.hasMetadata ? 1 : 0;
    this.growth.set(path, {
      lines: growth.lines + added,
      bytes: growth.bytes + lines.metadataBytes,
      fileBytes: appended.after.size,
    });
    // The cache may only describe the file if it held exactly what this object had saved, plus our lines.
    const exact = appended.clean && before?.stamp !== undefined && sameStamp(before.stamp, appended.before);
    this.recordWrite(session, path, exact ? appended.after : undefined, header, preserved);
  }

  private async rewriteFile(session: Session, path: string, header: string, preserved: string): Promise<void> {
    const text = serializeSession(session);
    await writeFileAtomic(path, text, 0o600);
    const size = Buffer.byteLength(text);
    this.growth.set(path, { lines: 1, bytes: text.indexOf('\n') + 1, fileBytes: size });
    const written = await stampOf(path);
    // A size other than ours means another process replaced or extended the file right after our rename.
    const exact = written !== undefined && written.size === size;
    this.recordWrite(session, path, exact ? written : undefined, header, preserved);
  }

  /** Notes what `session` now has on disk; `stamp` is set only when the file holds exactly that. */
  private recordWrite(
    session: Session,
    path: string,
    stamp: FileStamp | undefined,
    header: string,
    preserved: string,
  ): void {
    const snapshot = detachedCopy(session);
    if (stamp) this.remember(path, stamp, snapshot);
    else this.dropCached(path);
    this.persisted.set(session, { messages: snapshot.messages, header, preserved, stamp });
  }

  private metadataOverflows(path: string, nextBytes: number): boolean {
    const growth = this.growth.get(path);
    if (!growth) return false;
    return (
      growth.lines + 1 > this.compactAfterMetadataLines ||
      growth.bytes + nextBytes > Math.max(MIN_COMPACT_METADATA_BYTES, growth.fileBytes / 2)
    );
  }

  /** A copy the caller may mutate, registered as already persisted up to `stamp`. */
  private handOut(snapshot: Session, stamp: FileStamp | undefined): Session {
    const session = detachedCopy(snapshot);
    this.persisted.set(session, {
      messages: snapshot.messages,
      header: headerOf(session),
      preserved: JSON.stringify(session.preserved ?? []),
      stamp,
    });
    return session;
  }

  private remember(path: string, stamp: FileStamp, snapshot: Session): void {
    this.dropCached(path);
    this.cache.set(path, { stamp, snapshot });
    this.cachedBytes += stamp.size;
    // Evict least recently used sessions, but always keep the one just stored.
    for (const oldPath of [...this.cache.keys()]) {
      if (this.cachedBytes <= this.cacheBytes || oldPath === path) break;
      this.dropCached(oldPath);
    }
  }

  private touch(path: string, entry: CacheEntry): void {
    this.cache.delete(path);
    this.cache.set(path, entry);
  }

  private dropCached(path: string): void {
    const entry = this.cache.get(path);
    if (!entry) return;
    this.cachedBytes -= entry.stamp.size;
    this.cache.delete(path);
  }

  private forget(path: string): void {
    this.dropCached(path);
    this.growth.delete(path);
  }

  /** Runs file operations on one session one at a time, so two saves never append the same lines twice. */
  private exclusive<T>(path: string, task: () => Promise<T>): Promise<T> {
    const previous = this.queues.get(path) ?? Promise.resolve();
    const run = previous.then(task);
    const tail = run.then(
      () => undefined,
      () => undefined,
    );
    this.queues.set(path, tail);
    void tail.then(() => {
      if (this.queues.get(path) === tail) this.queues.delete(path);
    });
    return run;
  }
}

interface PendingLines {
  text: string;
  hasMetadata: boolean;
  metadataBytes: number;
}

/**
 * The lines that bring the file from what `before` saved to `session`, or undefined when that takes a rewrite:
 * saved messages were removed or replaced by different ones, or the typed state lines changed.
 */
function linesToAppend(
  session: Session,
  before: Persisted,
  header: string,
  preserved: string,
): PendingLines | undefined {
  const { messages } = session;
  if (preserved !== before.preserved || messages.length < before.messages.length) return undefined;
  for (let i = 0; i < before.messages.length; i++) {
    const now = messages[i];
    const then = before.messages[i];
    // A replaced object with the same content (a re-spliced checkpoint) still needs no rewrite.
    if (now !== then && JSON.stringify(now) !== JSON.stringify(then)) return undefined;
  }
  const lines = messages.slice(before.messages.length).map((m) => JSON.stringify(m));
  // Metadata goes last: if the write is torn, the messages before it are kept.
  const metadata = header === before.header ? undefined : JSON.stringify(metadataLineOf(session));
  if (metadata !== undefined) lines.push(metadata);
  const metadataBytes = metadata === undefined ? 0 : Buffer.byteLength(metadata) + 1;
  return { text: lines.length ? `${lines.join('\n')}\n` : '', hasMetadata: metadata !== undefined, metadataBytes };
}

/**
 * Appends whole lines with one O_APPEND write and an fdatasync. A torn last line left by a crash is cut off first, so
 * our lines never glue onto it; a last line that is complete JSON but lacks its newline gets one. When the file is
 * still exactly as this store last wrote it (`known`), it ends with our newline and its tail need not be read.
 * Returns undefined when there is nothing to append to (missing or empty file, or a file that is one torn line).
 */
async function appendToSessionFile(
  path: string,
  text: string,
  known: FileStamp | undefined,
  key: string,
  log: Logger,
): Promise<AppendResult | undefined> {
  let handle: FileHandle;
  try {
    handle = await open(path, constants.O_RDWR | constants.O_APPEND);
  } catch (err) {
    if (isMissing(err)) return undefined;
    throw err;
  }
  try {
    const before = toStamp(await handle.stat());
    if (before.size === 0) return undefined;
    const end = known && sameStamp(known, before) ? before.size : await endOfLastLine(handle, before.size);
    let prefix = '';
    if (end < before.size) {
      const tail = (await readRange(handle, end, before.size)).toString('utf8');
      if (isJson(tail)) prefix = '\n';
      else if (end === 0) return undefined;
      else {
        log.warn(`session ${key}: cut a torn last line (an interrupted write) off ${path} before appending`);
        await handle.truncate(end);
      }
    }
    const data = Buffer.from(prefix + text, 'utf8');
    await handle.write(data);
    await handle.datasync();
    const after = toStamp(await handle.stat());
    const base = prefix ? before.size : end;
    return { before, after, clean: after.size === base + data.length };
  } finally {
    await handle.close();
  }
}

/** The offset just past the file's last newline (0 when it has none). */
async function endOfLastLine(handle: FileHandle, size: number): Promise<number> {
  const last = await readRange(handle, size - 1, size);
  if (last[0] === NEWLINE) return size; // The usual case: one byte read.
  let end = size;
  while (end > 0) {
    const start = Math.max(0, end - TAIL_SCAN_CHUNK);
    const chunk = await readRange(handle, start, end);
    const at = chunk.lastIndexOf(NEWLINE);
    if (at !== -1) return start + at + 1;
    end = start;
  }
  return 0;
}

async function readRange(handle: FileHandle, start: number, end: number): Promise<Buffer> {
  const buffer = Buffer.alloc(end - start);
  const { bytesRead } = await handle.read(buffer, 0, buffer.length, start);
  return buffer.subarray(0, bytesRead);
}

function isJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

async function stampOf(path: string): Promise<FileStamp | undefined> {
  try {
    return toStamp(await stat(path));
  } catch (err) {
    if (isMissing(err)) return undefined;
    throw err;
  }
}

const toStamp = (s: Stats): FileStamp => ({ size: s.size, mtimeMs: s.mtimeMs, ino: s.ino });
const sameStamp = (a: FileStamp, b: FileStamp): boolean =>
  a.size === b.size && a.mtimeMs === b.mtimeMs && a.ino === b.ino;
const isMissing = (err: unknown): boolean => (err as NodeJS.ErrnoException | undefined)?.code === 'ENOENT';

/** Everything the metadata line records except `updated_at`, which alone is no reason to append a line. */
function headerOf(session: Session): string {
  return JSON.stringify([session.key, session.createdAt, session.lastConsolidated, session.metadata]);
}

function metadataLineOf(session: Session): MetadataLine {
  return {
    _type: 'metadata',
    key: session.key,
    created_at: session.createdAt,
    updated_at: session.updatedAt,
    metadata: session.metadata,
    last_consolidated: session.lastConsolidated,
  };
}

/** A session whose array and metadata are its own; message objects are shared (immutable once saved). */
function detachedCopy(session: Session): Session {
  const copy: Session = { ...session, metadata: structuredClone(session.metadata), messages: session.messages.slice() };
  if (session.preserved) copy.preserved = structuredClone(session.preserved);
  return copy;
}

export function serializeSession(session: Session): string {
  const lines = [
    JSON.stringify(metadataLineOf(session)),
    ...(session.preserved ?? []).map((line) => JSON.stringify(line)),
    ...session.messages.map((m) => JSON.stringify(m)),
  ];
  return `${lines.join('\n')}\n`;
}

export function parseSessionFile(text: string, key: string, path: string, log: Logger): Session {
  return parseSessionLines(text, key, path, log).session;
}

function parseSessionLines(
  text: string,
  key: string,
  path: string,
  log: Logger,
): { session: Session; metadata: { lines: number; bytes: number } } {
  const session = newSession(key);
  const metadata = { lines: 0, bytes: 0 };
  const lines = text.split('\n');
  const lastIndex = lines.findLastIndex((l) => l.trim() !== '');
  lines.forEach((line, index) => {
    if (line.trim() === '') return;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      const where = index === lastIndex ? 'a torn last line (an interrupted write)' : `a corrupt line ${index + 1}`;
      log.warn(`session ${key}: dropped ${where} in ${path}`);
      return;
    }
    if (typeof value !== 'object' || value === null) return;
    const record = value as Record<string, unknown>;
    if (record._type === 'metadata') {
      const meta = record as Partial<MetadataLine>;
      session.createdAt = meta.created_at ?? session.createdAt;
      session.updatedAt = meta.updated_at ?? session.updatedAt;
      session.metadata = meta.metadata ?? {};
      session.lastConsolidated = meta.last_consolidated ?? 0;
      metadata.lines += 1;
      metadata.bytes += line.length + 1;
    } else if (record._type === undefined && typeof record.role === 'string') {
      session.messages.push(record as unknown as ChatMessage);
    } else if (typeof record._type === 'string') {
      session.preserved = [...(session.preserved ?? []), record];
    }
  });
  session.lastConsolidated = Math.min(session.lastConsolidated, session.messages.length);
  return { session, metadata };
}
