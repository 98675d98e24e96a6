/**
 * Moving sessions between nanobot's two layouts, as nanobot does: v0.3.0 kept them in `<workspace>/sessions/`,
 * later versions (and we) in `<data>/sessions/<workspace-id>/`, under the same base64url file names.
 *
 * `migrateWorkspaceSessions` copies each old file over and removes the original only once the copy is fsynced and
 * reads back byte for byte, and only if the original did not change meanwhile. Every step can be repeated, so a
 * process killed anywhere leaves nothing lost: the next start finds the copy identical and just removes the
 * original. When both places hold a different version, the one with the later `updated_at` wins and the other is
 * kept in `.migration-conflicts/` (named by its digest, so a rerun does not archive it twice).
 *
 * The workspace is writable by the agent's sandboxed shell, so a file planted there must not become trusted chat
 * history on some later start: a namespace imports from its workspace once, and records that it did.
 * `restoreSessionsToWorkspace` (the downgrade path) clears that record.
 */
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import { join } from 'node:path';
import { writeWholeSync } from '../security/workspace-file-ops.js';
import { type DirRef, entryPath, type WorkspaceDirent, WorkspaceFs } from '../security/workspace-fs.js';
import { errorMessage } from '../util/errors.js';
import { type Logger, silentLogger } from '../util/log.js';

const OLD_DIR = 'sessions';
const CONFLICTS_DIR = '.migration-conflicts';
/** In the namespace (outside the workspace): this namespace has imported its workspace's `sessions/` once. */
export const MIGRATED_MARKER = '.migrated-from-workspace';
/** A session file bigger than this in the workspace is left there (a planted huge file must not be read whole). */
const MAX_SESSION_BYTES = 512 * 1024 * 1024;

/** One version of a session file, known byte for byte. */
interface Snapshot {
  bytes: Buffer;
  digest: string;
  dev: number;
  ino: number;
  size: number;
  mtimeMs: number;
  /** `updated_at` of the last metadata line (ms), else the file's mtime. */
  updatedAt: number;
}

export type MigrationStep = 'installed' | 'archived' | 'verified';

export interface MigrationHooks {
  /** Test seam: runs after each step for one file; throwing stops the migration there, as a kill would. */
  after?(step: MigrationStep, name: string): void;
}

/** What a hook threw: it stops the whole migration (unlike a failure with one file, which keeps that file). */
export class MigrationInterrupted extends Error {}

export interface MigrationResult {
  /** File names whose workspace version is now in the namespace. */
  migrated: string[];
  /** Archived copies of the version that lost a conflict. */
  conflicts: string[];
  /** Old files left in the workspace (invalid, changing, unreadable), with why. */
  kept: string[];
}

/** Imports `<workspace>/sessions/*.jsonl` into `sessionsDir` (see the file comment). Callers hold the lock. */
export function migrateWorkspaceSessions(
  workspace: string,
  sessionsDir: string,
  log: Logger = silentLogger,
  hooks: MigrationHooks = {},
): MigrationResult {
  const result: MigrationResult = { migrated: [], conflicts: [], kept: [] };
  const marker = join(sessionsDir, MIGRATED_MARKER);
  const wfs = new WorkspaceFs(workspace);
  const names = oldSessionFiles(wfs, log);
  if (names === undefined) return result;
  if (fs.existsSync(marker)) {
    if (names.length > 0) {
      log.warn(
        `${wfs.pathOf(OLD_DIR)} holds ${names.length} session file(s) that were not imported: this workspace's ` +
          `sessions were imported once already, and files written in the workspace since could come from the ` +
          `agent. To import them anyway, delete ${marker} and start nanobot again.`,
      );
    }
    return result;
  }
  for (const entry of names) {
    const rel = `${OLD_DIR}/${entry.name}`;
    const keep = (why: string) => {
      result.kept.push(entry.name);
      log.warn(`kept ${wfs.pathOf(rel)} where it is (${why}); nanobot does not read it there`);
    };
    if (entry.kind !== 'file') {
      keep(`a ${entry.kind}, not a regular file`);
      continue;
    }
    try {
      const why = migrateOne(wfs, rel, entry.name, sessionsDir, result, log, interruptible(hooks));
      if (why) keep(why);
    } catch (error) {
      if (error instanceof MigrationInterrupted) throw error;
      keep(errorMessage(error));
    }
  }
  // Once everything is in (or there was nothing), later files in the workspace are not trusted.
  if (result.kept.length === 0) writeDurably(marker, Buffer.from(`${new Date().toISOString()}\n`));
  if (result.migrated.length > 0) {
    log.info(`imported ${result.migrated.length} session(s) from ${wfs.pathOf(OLD_DIR)} into ${sessionsDir}`);
  }
  return result;
}

/** The `*.jsonl` entries of `<workspace>/sessions/` ([] when it is missing); undefined when it is not a folder. */
function oldSessionFiles(wfs: WorkspaceFs, log: Logger): WorkspaceDirent[] | undefined {
  const old = wfs.lstatSync(OLD_DIR);
  if (!old) return [];
  if (!old.isDirectory()) {
    log.warn(`${wfs.pathOf(OLD_DIR)} is not a directory (a link?): no sessions were imported from it`);
    return undefined;
  }
  return wfs.readdirSync(OLD_DIR).filter((entry) => entry.name.endsWith('.jsonl') && !entry.name.startsWith('.'));
}

function interruptible(hooks: MigrationHooks): MigrationHooks {
  const { after } = hooks;
  if (!after) return hooks;
  return {
    after: (step, name) => {
      try {
        after(step, name);
      } catch (error) {
        throw new MigrationInterrupted(`stopped after ${step} ${name}: ${errorMessage(error)}`);
      }
    },
  };
}

/** Imports one file; returns why it stays in the workspace, or undefined once it is in and the original gone. */
function migrateOne(
  wfs: WorkspaceFs,
  rel: string,
  name: string,
  sessionsDir: string,
  result: MigrationResult,
  log: Logger,
  hooks: MigrationHooks,
): string | undefined {
  const source = snapshotInWorkspace(wfs, rel);
  if (typeof source === 'string') return source;
  const dst = join(sessionsDir, name);
  const existing = fs.existsSync(dst) ? snapshotOutside(dst) : undefined;
  if (typeof existing === 'string') return `the copy already at ${dst} is ${existing}`;

  let selected = source.digest;
  if (!existing) {
    install(dst, source);
    hooks.after?.('installed', name);
  } else if (existing.digest !== source.digest) {
    const sourceWins = source.updatedAt > existing.updatedAt;
    const loser = sourceWins ? existing : source;
    const archived = archive(sessionsDir, name, loser, sourceWins ? 'destination' : 'workspace');
    result.conflicts.push(archived);
    log.warn(`two versions of session ${name}: kept the newer one, the other is in ${archived}`);
    hooks.after?.('archived', name);
    if (sourceWins) {
      install(dst, source);
      hooks.after?.('installed', name);
    } else {
      selected = existing.digest;
    }
  }
  const now = snapshotOutside(dst);
  if (typeof now === 'string' || now.digest !== selected) return `its copy at ${dst} did not read back as written`;
  hooks.after?.('verified', name);
  result.migrated.push(name);
  // A version written meanwhile (an older nanobot still running) is looked at again at the next start.
  if (!removeIfUnchanged(wfs, rel, name, source)) return 'it changed while it was imported, or could not be removed';
  return undefined;
}

/** The workspace copy, read through the layer (no link is followed), or why it cannot be imported. */
function snapshotInWorkspace(wfs: WorkspaceFs, rel: string): Snapshot | string {
  const file = wfs.openFile(rel);
  try {
    if (file.size > MAX_SESSION_BYTES) return `larger than ${MAX_SESSION_BYTES / 1024 / 1024} MB`;
    return snapshotOf(file.fd);
  } finally {
    file.close();
  }
}

/** A file in the sessions folder (nanobot's own state, outside the workspace), or why it is unusable. */
function snapshotOutside(path: string): Snapshot | string {
  let fd: number;
  try {
    fd = fs.openSync(path, fs.constants.O_RDONLY | (fs.constants.O_NOFOLLOW ?? 0));
  } catch (error) {
    return `unreadable (${errorMessage(error)})`;
  }
  try {
    if (!fs.fstatSync(fd).isFile()) return 'not a regular file';
    return snapshotOf(fd);
  } finally {
    fs.closeSync(fd);
  }
}

function snapshotOf(fd: number): Snapshot | string {
  const before = fs.fstatSync(fd);
  const bytes = fs.readFileSync(fd);
  const after = fs.fstatSync(fd);
  if (bytes.length !== after.size || before.size !== after.size || before.mtimeMs !== after.mtimeMs) {
    return 'being written to';
  }
  const updated = lastUpdatedAt(bytes);
  if (typeof updated === 'string') return updated;
  return {
    bytes,
    digest: createHash('sha256').update(bytes).digest('hex'),
    dev: after.dev,
    ino: after.ino,
    size: after.size,
    mtimeMs: after.mtimeMs,
    updatedAt: updated ?? after.mtimeMs,
  };
}

/**
 * `updated_at` of the last metadata line, undefined when there is none, or why the file is not a session: every
 * line must be a JSON object (a torn last line, left by a crash mid-append, is allowed: readers drop it).
 */
function lastUpdatedAt(bytes: Buffer): number | undefined | string {
  const lines = bytes.toString('utf8').split('\n');
  let updated: number | undefined;
  let records = 0;
  for (const [index, line] of lines.entries()) {
    if (!line.trim()) continue;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      if (index === lines.length - 1) continue; // torn last line (no newline after it)
      return `line ${index + 1} is not JSON`;
    }
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      return `line ${index + 1} is not a JSON object`;
    }
    records++;
    const record = value as Record<string, unknown>;
    if (record._type === 'metadata' && typeof record.updated_at === 'string') {
      const at = Date.parse(record.updated_at);
      if (!Number.isNaN(at)) updated = at;
    }
  }
  return records === 0 ? 'empty' : updated;
}

/** Writes `snapshot` to `dst` (temp + fsync + rename + directory fsync). */
function install(dst: string, snapshot: Snapshot): void {
  writeDurably(dst, snapshot.bytes);
}

/** The losing version, kept under a name made of its digest: archiving it again finds it already there. */
function archive(sessionsDir: string, name: string, snapshot: Snapshot, label: string): string {
  const dir = join(sessionsDir, CONFLICTS_DIR);
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  const path = join(dir, `${name.slice(0, -'.jsonl'.length)}.${label}.${snapshot.digest.slice(0, 12)}.jsonl`);
  const there = fs.existsSync(path) ? snapshotOutside(path) : undefined;
  if (typeof there !== 'object' || there.digest !== snapshot.digest) writeDurably(path, snapshot.bytes);
  return path;
}

export function writeDurably(path: string, bytes: Buffer): void {
  const dir = join(path, '..');
  const tmp = join(dir, `.${path.slice(dir.length + 1)}.${randomBytes(8).toString('hex')}.tmp`);
  const fd = fs.openSync(tmp, fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_EXCL, 0o600);
  try {
    writeWholeSync(fd, bytes, path);
    fs.fsyncSync(fd);
  } catch (error) {
    fs.closeSync(fd);
    fs.rmSync(tmp, { force: true });
    throw error;
  }
  fs.closeSync(fd);
  try {
    fs.renameSync(tmp, path);
  } catch (error) {
    fs.rmSync(tmp, { force: true });
    throw error;
  }
  fsyncDirectory(dir);
}

function fsyncDirectory(dir: string): void {
  try {
    const fd = fs.openSync(dir, fs.constants.O_RDONLY);
    try {
      fs.fsyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
  } catch {
    // Some filesystems refuse fsync on directories; the rename is still atomic there.
  }
}

/** Removes the workspace original if it is still the version that was copied; true when it is gone. */
function removeIfUnchanged(wfs: WorkspaceFs, rel: string, name: string, copied: Snapshot): boolean {
  try {
    return wfs.withDirectorySync(OLD_DIR, (dir) => {
      const now = fs.lstatSync(entryPath(dir, name));
      const same =
        now.isFile() &&
        now.dev === copied.dev &&
        now.ino === copied.ino &&
        now.size === copied.size &&
        now.mtimeMs === copied.mtimeMs;
      if (!same) return false;
      wfs.unlinkSync(rel);
      syncAnchoredDirectory(dir);
      return true;
    });
  } catch {
    return false;
  }
}

function syncAnchoredDirectory(dir: DirRef): void {
  fsyncDirectory(dir.anchor);
}

export interface RestoreResult {
  restored: number;
  unchanged: number;
  /** Files that were not restored: an existing different file in the workspace, or an unreadable session. */
  conflicts: string[];
  /** `<workspace>/sessions`. */
  target: string;
}

/**
 * Copies every session of the namespace back into `<workspace>/sessions/` (for a downgrade to v0.3.0), never
 * overwriting a file there. The namespace keeps its copies; the import record is cleared, so that when the user
 * comes back, what the older version added in the workspace is imported again.
 */
export function restoreSessionsToWorkspace(workspace: string, sessionsDir: string): RestoreResult {
  const wfs = new WorkspaceFs(workspace);
  const result: RestoreResult = { restored: 0, unchanged: 0, conflicts: [], target: wfs.pathOf(OLD_DIR) };
  wfs.mkdirSync(OLD_DIR, { mode: 0o700 });
  const names = fs
    .readdirSync(sessionsDir)
    .filter((name) => name.endsWith('.jsonl') && !name.startsWith('.') && isCanonicalName(name));
  for (const name of names.sort()) {
    const source = snapshotOutside(join(sessionsDir, name));
    const rel = `${OLD_DIR}/${name}`;
    if (typeof source === 'string') {
      result.conflicts.push(join(sessionsDir, name));
      continue;
    }
    if (wfs.lstatSync(rel)) {
      const there = wfs.isFileSync(rel) ? snapshotInWorkspace(wfs, rel) : 'not a file';
      if (typeof there === 'object' && there.digest === source.digest) result.unchanged++;
      else result.conflicts.push(wfs.pathOf(rel));
      continue;
    }
    wfs.writeFileAtomicSync(rel, source.bytes, { mode: 0o600, dirMode: 0o700 });
    const written = snapshotInWorkspace(wfs, rel);
    if (typeof written === 'string' || written.digest !== source.digest) result.conflicts.push(wfs.pathOf(rel));
    else result.restored++;
  }
  fs.rmSync(join(sessionsDir, MIGRATED_MARKER), { force: true });
  return result;
}

/** A name nanobot itself gives a session file: base64url (no padding) of a UTF-8 key. */
function isCanonicalName(name: string): boolean {
  const stem = name.slice(0, -'.jsonl'.length);
  if (!/^[A-Za-z0-9_-]+$/.test(stem)) return false;
  const key = Buffer.from(stem, 'base64url').toString('utf8');
  return Buffer.from(key, 'utf8').toString('base64url') === stem;
}
