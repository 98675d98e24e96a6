/**
 * Where a workspace's sessions live: `<data>/sessions/<workspace-id>/`, private to the user (0700).
 * Compatible with nanobot: the id is 32 hex characters kept in `<workspace>/.nanobot/workspace-id`, and each
 * session folder records its workspace in a `.workspace` marker, so a lost id file is recovered and a copied
 * workspace gets sessions of its own instead of sharing (and overwriting) the original's. v0.3.0's sessions, kept in
 * `<workspace>/sessions/`, are imported on first use (migrate.ts). Choosing the folder and importing run under one
 * cross-process lock, so two processes starting at once agree on the id and never import a file twice.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, realpathSync, statSync } from 'node:fs';
import { chmod, mkdir } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { isPathInside } from '../security/workspace.js';
import { WorkspaceFs } from '../security/workspace-fs.js';
import { FileWriteError, UserError } from '../util/errors.js';
import { writeFileAtomic } from '../util/fs.js';
import { lockFile } from '../util/lock.js';
import { type Logger, silentLogger } from '../util/log.js';
import { MIGRATED_MARKER, type MigrationHooks, migrateWorkspaceSessions } from './migrate.js';

const ID_PATTERN = /^[0-9a-f]{32}$/;
const newId = () => randomBytes(16).toString('hex');

/** Lock directory (ours; nanobot's own `.workspace-migration.lock` is an flock file Node cannot take). */
const LOCK_NAME = '.workspace-migration.nanobot-ts.lock';

export interface SessionsDirOptions {
  log?: Logger;
  /** Test seam for the import of v0.3.0 sessions. */
  migration?: MigrationHooks;
}

/** Creates (if needed) and returns the sessions directory for `workspace`, with v0.3.0's sessions imported. */
export async function sessionsDirFor(
  dataDir: string,
  workspace: string,
  options: SessionsDirOptions = {},
): Promise<string> {
  const root = join(dataDir, 'sessions');
  const canonical = canonicalPath(workspace);
  if (isPathInside(resolve(root), canonical)) {
    throw new UserError(
      `Sessions (${root}) would be inside the workspace (${workspace}), where the agent's tools could rewrite them.`,
      'Use a workspace that does not contain the config directory, or a --config outside the workspace.',
    );
  }
  await createDir(root, true);
  await chmod(root, 0o700).catch(() => undefined);
  const log = options.log ?? silentLogger;
  // The usual start: the namespace is claimed and imported already, and nothing will be written, so no lock.
  const settled = settledNamespace(root, canonical);
  if (settled) {
    migrateWorkspaceSessions(canonical, settled, log, options.migration); // only warns about files found there
    return settled;
  }
  return withSessionsLock(root, log, async () => {
    const dir = await claimNamespace(root, canonical);
    migrateWorkspaceSessions(canonical, dir, log, options.migration);
    return dir;
  });
}

function settledNamespace(root: string, canonical: string): string | undefined {
  const id = readWorkspaceId(canonical);
  if (id === undefined) return undefined;
  const dir = join(root, id);
  return readMarker(dir) === canonical && existsSync(join(dir, MIGRATED_MARKER)) ? dir : undefined;
}

/** Runs `fn` holding the sessions root's lock (waits up to ~30 s for another process, as nanobot does). */
export async function withSessionsLock<T>(root: string, log: Logger, fn: () => Promise<T>): Promise<T> {
  const release = await (await lockFile())(root, {
    realpath: false,
    lockfilePath: join(root, LOCK_NAME),
    // A process killed while holding it (the import is short) delays the next start by this much, no more.
    stale: 5_000,
    retries: { retries: 200, minTimeout: 20, maxTimeout: 250, factor: 1.3 },
    onCompromised: (error) => log.warn(`${root}: sessions lock compromised: ${error.message}`),
  }).catch((error: unknown) => {
    // A read-only or full disk keeps its own code, and so its own message and fix.
    if ((error as NodeJS.ErrnoException).code !== 'ELOCKED') throw FileWriteError.of(error, join(root, LOCK_NAME));
    throw new UserError(
      `Could not lock ${root} (${(error as Error).message}).`,
      `Another nanobot may be starting; if none is, remove ${join(root, LOCK_NAME)}.`,
    );
  });
  try {
    return await fn();
  } finally {
    await release().catch(() => undefined);
  }
}

async function claimNamespace(root: string, canonical: string): Promise<string> {
  let id = readWorkspaceId(canonical) ?? findNamespace(root, canonical) ?? newId();
  for (let attempt = 0; attempt < 3; attempt++) {
    const dir = join(root, id);
    const recorded = readMarker(dir);
    const ours =
      recorded === undefined || recorded === canonical || !existsSync(recorded) || sameFile(recorded, canonical);
    if (ours) {
      await createDir(dir, false);
      if (recorded !== canonical) await writeFileAtomic(join(dir, '.workspace'), `${canonical}\n`, 0o600);
      await writeWorkspaceId(canonical, id);
      return dir;
    }
    id = newId(); // Both workspaces exist: this one is a copy and needs its own namespace.
  }
  throw new Error(`could not allocate a session folder for ${canonical}`);
}

/**
 * Creates a private directory. The leaf is made without `recursive`, whose ENOENT hides the real cause (EROFS,
 * EACCES, ENOSPC); a failure names the directory.
 */
async function createDir(dir: string, parents: boolean): Promise<void> {
  try {
    if (parents) await mkdir(dirname(dir), { recursive: true, mode: 0o700 });
    await mkdir(dir, { mode: 0o700 });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return;
    throw FileWriteError.of(error, dir);
  }
}

function canonicalPath(path: string): string {
  try {
    return realpathSync.native(path);
  } catch {
    return resolve(path);
  }
}

const WORKSPACE_ID = '.nanobot/workspace-id';

/** The id file is in the workspace, where the sandboxed shell can plant links: read and written through the layer. */
function readWorkspaceId(workspace: string): string | undefined {
  const file = join(workspace, WORKSPACE_ID);
  const text = new WorkspaceFs(workspace).readTextIfExistsSync(WORKSPACE_ID, { maxBytes: 4096 });
  if (text === undefined) return undefined;
  const id = text.trim();
  if (!ID_PATTERN.test(id)) {
    throw new UserError(
      `${file} does not hold a valid workspace id (32 hex characters).`,
      'Restore the original id, or delete the file to start a new session history for this workspace.',
    );
  }
  return id;
}

async function writeWorkspaceId(workspace: string, id: string): Promise<void> {
  if (readWorkspaceId(workspace) === id) return;
  await new WorkspaceFs(workspace).writeFileAtomic(WORKSPACE_ID, `${id}\n`, { mode: 0o600, dirMode: 0o700 });
}

function readMarker(dir: string): string | undefined {
  const marker = join(dir, '.workspace');
  if (!existsSync(marker)) return undefined;
  const text = readFileSync(marker, 'utf8').trim();
  return text ? canonicalPath(text) : undefined;
}

/** The namespace whose marker names this workspace (its id file was deleted), if exactly one does. */
function findNamespace(root: string, workspace: string): string | undefined {
  if (!existsSync(root)) return undefined;
  const matches = readdirSync(root).filter(
    (name) => ID_PATTERN.test(name) && readMarker(join(root, name)) === workspace,
  );
  return matches.length === 1 ? matches[0] : undefined;
}

function sameFile(a: string, b: string): boolean {
  try {
    const [sa, sb] = [statSync(a), statSync(b)];
    return sa.dev === sb.dev && sa.ino === sb.ino;
  } catch {
    return false;
  }
}
