/**
 * The JSONL session store (format in jsonl-format.ts). Files live outside the workspace
 * (`<data>/sessions/<workspace-id>/<base64url(key)>.jsonl`) so the agent's file tools cannot rewrite its own transcript.
 *
 * Saves append: only the messages added since the session object was loaded or saved, plus a new metadata line
 * when its metadata changed, in one fdatasynced O_APPEND write — so a turn in a 10,000-message session writes
 * kilobytes, not the whole file. Then the first line, which nanobot's own readers take the metadata from, is
 * overwritten in place (it is padded for that); a torn first line falls back to the appended metadata line. The file is rewritten atomically when saved messages were removed or replaced, and
 * compacted once superseded metadata lines are worth a rewrite. Loads are served from a cache while the file's size,
 * mtime and inode are the ones this store last saw; when the file only grew (another store appended), just the new
 * lines are read. Damaged lines are skipped with a warning; a torn last line is cut off before the next append.
 */
import { type FileHandle, open, readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { ChatMessage } from '../providers/types.js';
import type { WriteSyscall } from '../security/workspace-file-ops.js';
import { writeFileAtomic } from '../util/fs.js';
import { type Logger, silentLogger } from '../util/log.js';
import {
  appendToSessionFile,
  extendVersion,
  type FileStamp,
  type FileVersion,
  isMissing,
  overwriteFirstLine,
  patchFirstLine,
  readAppended,
  sameStamp,
  stampOf,
  toStamp,
  versionOf,
} from './jsonl-files.js';
import {
  applyFirstLine,
  decodeText,
  headerOf,
  type MetadataCount,
  metadataLineOf,
  metadataOf,
  parseSessionText,
  serializeSession,
} from './jsonl-format.js';
import {
  newSession,
  type Session,
  type SessionStore,
  type SessionSummary,
  sessionPreview,
  sessionTitle,
} from './types.js';

export { parseSessionFile, serializeSession } from './jsonl-format.js';

export interface JsonlSessionStoreOptions {
  /**
   * Metadata lines written since the last rewrite before the file is compacted — once they also take an eighth of
   * the file, so that rewriting a long session's file stays rare next to the appends it saves.
   */
  compactAfterMetadataLines?: number;
  /** Upper bound on the file bytes whose parsed sessions the load cache keeps (least recently used go first). */
  cacheBytes?: number;
  /** Test seam: the write syscall of appends, so a full disk's short write can be simulated. */
  writeSync?: WriteSyscall;
}

/** What one session object has on disk already: its messages (by identity) and its header. */
interface Persisted {
  /** Shared with the cache snapshot, never mutated: each save replaces it. */
  messages: readonly ChatMessage[];
  header: string;
  preserved: string;
  /** The file as this object last loaded or wrote it; undefined when that is not known exactly. */
  version: FileVersion | undefined;
}

/** Metadata lines written since the file was last rewritten (what compaction would reclaim), and the file's size. */
interface MetadataGrowth extends MetadataCount {
  fileBytes: number;
}

interface CacheEntry {
  version: FileVersion;
  snapshot: Session;
}

const DEFAULT_COMPACT_AFTER_METADATA_LINES = 64;
/** Superseded metadata must take this share of the file before that many lines trigger a rewrite. */
const COMPACT_MIN_SHARE = 1 / 8;
const DEFAULT_CACHE_BYTES = 128 * 1024 * 1024;
/** Superseded metadata may take up to half of a file (and at least this much) before the file is compacted. */
const MIN_COMPACT_METADATA_BYTES = 1024 * 1024;
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
  private readonly writeSync: WriteSyscall | undefined;

  constructor(
    readonly dir: string,
    private readonly log: Logger = silentLogger,
    options: JsonlSessionStoreOptions = {},
  ) {
    this.compactAfterMetadataLines = options.compactAfterMetadataLines ?? DEFAULT_COMPACT_AFTER_METADATA_LINES;
    this.cacheBytes = options.cacheBytes ?? DEFAULT_CACHE_BYTES;
    this.writeSync = options.writeSync;
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
      if (cached && sameStamp(cached.version.stamp, current)) {
        this.touch(path, cached);
        return this.handOut(cached.snapshot, cached.version);
      }
      if (cached && cached.version.stamp.ino === current.ino && current.size > cached.version.stamp.size) {
        const grown = await this.readGrowth(key, path, cached);
        if (grown) return grown;
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
      const stem = name.slice(0, -'.jsonl'.length);
      const key = decodeSessionKey(stem);
      if (encodeSessionKey(key) !== stem) continue; // not a name this store gives (e.g. an old `cli_direct.jsonl`)
      const session = await this.load(key);
      const title = sessionTitle(session.metadata);
      const preview = sessionPreview(session.messages);
      out.push({
        key,
        updatedAt: session.updatedAt,
        messageCount: session.messages.length,
        ...(title ? { title } : {}),
        ...(preview ? { preview } : {}),
      });
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
    const parsed = parseSessionText(decodeText(bytes), key, path, this.log);
    this.growth.set(path, { ...parsed.metadata, fileBytes: bytes.length });
    // Another process may have appended between the stat and the read: then the stamp does not describe the text.
    // A version is also withheld from a file that does not end in a newline (a torn tail): it vouches for the file
    // ending with a complete line, so appends can skip reading its tail.
    if (bytes.length !== stamp.size || (bytes.length > 0 && bytes[bytes.length - 1] !== NEWLINE)) {
      this.dropCached(path);
      return this.handOut(parsed.session, undefined);
    }
    const version = versionOf(stamp, bytes);
    this.remember(path, version, parsed.session);
    return this.handOut(parsed.session, version);
  }

  /** The cached session plus the lines another writer appended since; undefined when the file must be read whole. */
  private async readGrowth(key: string, path: string, cached: CacheEntry): Promise<Session | undefined> {
    const read = await readAppended(path, cached.version);
    if (!read) return undefined;
    const parsed = parseSessionText(decodeText(read.appended), key, path, this.log, cached.snapshot);
    // Another store overwrote the first line in place after its append (nanobot's readers take metadata from there).
    const first = metadataOf(read.firstLine);
    if (first) applyFirstLine(parsed.session, first);
    const growth = this.growth.get(path);
    if (growth) {
      this.growth.set(path, {
        lines: growth.lines + parsed.metadata.lines,
        bytes: growth.bytes + parsed.metadata.bytes,
        fileBytes: read.version.stamp.size,
      });
    }
    this.remember(path, read.version, parsed.session);
    return this.handOut(parsed.session, read.version);
  }

  private async persist(session: Session, path: string, forceRewrite: boolean): Promise<void> {
    const header = headerOf(session);
    const preserved = JSON.stringify(session.preserved ?? []);
    const before = this.persisted.get(session);
    // A first line overwritten in place needs a metadata line after it to fall back on, should that write be torn.
    const backedUp = (this.growth.get(path)?.lines ?? 0) > 1;
    const lines = forceRewrite || !before ? undefined : linesToAppend(session, before, header, preserved, backedUp);
    if (lines === undefined || (lines.hasMetadata && this.metadataOverflows(path, lines.metadataBytes))) {
      await this.rewriteFile(session, path, header, preserved);
      return;
    }
    if (lines.text === '') return; // Nothing new since this object was loaded or saved.

    const known = before?.version;
    const appended = await appendToSessionFile(path, lines.text, known?.stamp, session.key, this.log, this.writeSync);
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
    const exact = appended.clean && known !== undefined && sameStamp(known.stamp, appended.before);
    const version = exact ? extendVersion(known, appended.after, appended.data) : undefined;
    await this.refreshFirstLine(session, path, version, header, preserved);
  }

  /**
   * Brings line 1 (where nanobot's session list and WebUI read a session's metadata) up to date after an append, in
   * place; when the metadata outgrew that line, the file is rewritten. The appended lines are already durable.
   */
  private async refreshFirstLine(
    session: Session,
    path: string,
    version: FileVersion | undefined,
    header: string,
    preserved: string,
  ): Promise<void> {
    let written: Awaited<ReturnType<typeof overwriteFirstLine>>;
    try {
      written = await overwriteFirstLine(path, JSON.stringify(metadataLineOf(session)), this.writeSync);
    } catch (error) {
      // The messages are on disk; only nanobot's view of the metadata stays stale until the next save.
      this.log.warn(`session ${session.key}: could not update the first line of ${path}: ${String(error)}`);
      this.recordWrite(session, path, undefined, header, preserved);
      return;
    }
    if (!written) {
      await this.rewriteFile(session, path, header, preserved);
      return;
    }
    const exact = version !== undefined && sameStamp(version.stamp, written.before);
    const patched = exact ? patchFirstLine(version, written.after, written.first) : undefined;
    this.recordWrite(session, path, patched, header, preserved);
  }

  private async rewriteFile(session: Session, path: string, header: string, preserved: string): Promise<void> {
    const bytes = Buffer.from(serializeSession(session), 'utf8');
    await writeFileAtomic(path, bytes, 0o600);
    this.growth.set(path, { lines: 1, bytes: bytes.indexOf(NEWLINE) + 1, fileBytes: bytes.length });
    const written = await stampOf(path);
    // A size other than ours means another process replaced or extended the file right after our rename.
    const exact = written !== undefined && written.size === bytes.length;
    this.recordWrite(session, path, exact ? versionOf(written, bytes) : undefined, header, preserved);
  }

  /** Notes what `session` now has on disk; `version` is set only when the file holds exactly that. */
  private recordWrite(
    session: Session,
    path: string,
    version: FileVersion | undefined,
    header: string,
    preserved: string,
  ): void {
    const snapshot = detachedCopy(session);
    if (version) this.remember(path, version, snapshot);
    else this.dropCached(path);
    this.persisted.set(session, { messages: snapshot.messages, header, preserved, version });
  }

  /**
   * A rewrite costs the whole file, so superseded metadata is compacted once it takes half the file (at least 1 MB),
   * or once there are many such lines and they take a fair share of it.
   */
  private metadataOverflows(path: string, nextBytes: number): boolean {
    const growth = this.growth.get(path);
    if (!growth) return false;
    const lines = growth.lines + 1;
    const bytes = growth.bytes + nextBytes;
    if (bytes > Math.max(MIN_COMPACT_METADATA_BYTES, growth.fileBytes / 2)) return true;
    return lines > this.compactAfterMetadataLines && bytes > growth.fileBytes * COMPACT_MIN_SHARE;
  }

  /** A copy the caller may mutate, registered as already persisted up to `version`. */
  private handOut(snapshot: Session, version: FileVersion | undefined): Session {
    const session = detachedCopy(snapshot);
    this.persisted.set(session, {
      messages: snapshot.messages,
      header: headerOf(session),
      preserved: JSON.stringify(session.preserved ?? []),
      version,
    });
    return session;
  }

  private remember(path: string, version: FileVersion, snapshot: Session): void {
    this.dropCached(path);
    this.cache.set(path, { version, snapshot });
    this.cachedBytes += version.stamp.size;
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
    this.cachedBytes -= entry.version.stamp.size;
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
  backedUp: boolean,
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
  const changed = header !== before.header || (!backedUp && lines.length > 0);
  const metadata = changed ? JSON.stringify(metadataLineOf(session)) : undefined;
  if (metadata !== undefined) lines.push(metadata);
  const metadataBytes = metadata === undefined ? 0 : Buffer.byteLength(metadata) + 1;
  return { text: lines.length ? `${lines.join('\n')}\n` : '', hasMetadata: metadata !== undefined, metadataBytes };
}

/** A session whose array and metadata are its own; message objects are shared (immutable once saved). */
function detachedCopy(session: Session): Session {
  const copy: Session = { ...session, metadata: structuredClone(session.metadata), messages: session.messages.slice() };
  if (session.preserved) copy.preserved = structuredClone(session.preserved);
  return copy;
}
