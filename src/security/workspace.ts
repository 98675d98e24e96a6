/**
 * Path policy for file tools: turns a model-supplied path into an absolute real path, or a refusal the
 * model can read. Containment is decided on real paths (symlinks resolved), never on string prefixes,
 * so `/ws-evil` is not inside `/ws` and a symlink in the workspace cannot point the agent outside it.
 */
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { expandHome as expandHomeIn } from '../util/fs.js';

export type PathAccess = 'read' | 'write';

export type PathResolution = { ok: true; path: string } | { ok: false; error: string };

export interface PathPolicyOptions {
  workspace: string;
  /** When true, every path must resolve inside the workspace (or an extra read dir, for reads). */
  restrictToWorkspace: boolean;
  /** Directories readable even when restricted (e.g. built-in skills). */
  extraReadDirs?: string[];
  /** Directories inside the allowed area that may be read but never written (e.g. the media dir). */
  readOnlyDirs?: string[];
  /** Home directory used for `~` expansion; defaults to the user's home. */
  homeDir?: string;
}

export interface PathPolicy {
  readonly workspace: string;
  readonly restrictToWorkspace: boolean;
  /** Resolves a model-supplied path for the given access; never throws. */
  resolve(input: string, access: PathAccess): PathResolution;
}

export const WORKSPACE_BOUNDARY_NOTE =
  'This is a hard boundary: do not try to get around it with symlinks, encoded paths, other tools or the shell. ' +
  'Work inside the workspace, or ask the user to move the file there.';

/** True when `child` is `parent` or lies beneath it (both absolute, already normalised). */
export function isPathInside(child: string, parent: string): boolean {
  const relative = path.relative(parent, child);
  return relative === '' || (!relative.startsWith(`..${path.sep}`) && relative !== '..' && !path.isAbsolute(relative));
}

/**
 * Real path of `target`, or, when it does not exist yet, the real path of its nearest existing ancestor
 * with the missing tail appended. Dangling symlinks are followed through their target, so a link to a
 * not-yet-existing file outside the workspace still resolves outside.
 */
export function realpathNearest(target: string, depth = 0): string {
  const absolute = path.resolve(target);
  try {
    return fs.realpathSync.native(absolute);
  } catch {
    // Falls through: the path (or part of it) does not exist.
  }
  if (depth < 40) {
    try {
      if (fs.lstatSync(absolute).isSymbolicLink()) {
        const linkTarget = fs.readlinkSync(absolute);
        return realpathNearest(path.resolve(path.dirname(absolute), linkTarget), depth + 1);
      }
    } catch {
      // Not there at all: resolve the parent instead.
    }
  }
  const parent = path.dirname(absolute);
  if (parent === absolute) return absolute;
  return path.join(realpathNearest(parent, depth), path.basename(absolute));
}

/** Expands a leading `~` or `~/` (not `~user`) to the home directory. */
export function expandHome(input: string, homeDir: string = os.homedir()): string {
  return expandHomeIn(input, homeDir);
}

// Device files hang or stream forever (/dev/zero, /dev/random); environ files hold the agent's secrets.
function isForbiddenSystemPath(realPath: string): boolean {
  return isPathInside(realPath, '/dev') || /^\/proc\/[^/]+\/environ$/.test(realPath);
}

export function createPathPolicy(options: PathPolicyOptions): PathPolicy {
  const workspace = path.resolve(expandHome(options.workspace, options.homeDir));
  const homeDir = options.homeDir ?? os.homedir();

  const resolve = (input: string, access: PathAccess): PathResolution => {
    if (typeof input !== 'string' || input.trim() === '') {
      return { ok: false, error: 'Error: path must be a non-empty string.' };
    }
    if (input.includes('\0')) return { ok: false, error: 'Error: path contains a NUL byte.' };

    const absolute = path.resolve(workspace, expandHome(input.trim(), homeDir));
    const real = realpathNearest(absolute);

    if (isForbiddenSystemPath(real) || isForbiddenSystemPath(absolute)) {
      return { ok: false, error: `Error: access to '${input}' is blocked: device and process files cannot be opened.` };
    }

    // Real paths of the roots too: the workspace itself may sit behind a symlink (macOS /tmp).
    const realWorkspace = realpathNearest(workspace);
    const inReadOnlyDir = (options.readOnlyDirs ?? []).some((dir) =>
      isPathInside(real, realpathNearest(path.resolve(workspace, expandHome(dir, homeDir)))),
    );
    if (access === 'write' && inReadOnlyDir) {
      return { ok: false, error: `Error: '${input}' is in a read-only directory and cannot be written.` };
    }

    if (!options.restrictToWorkspace || isPathInside(real, realWorkspace)) return { ok: true, path: real };

    const inExtraReadDir =
      access === 'read' &&
      (options.extraReadDirs ?? []).some((dir) =>
        isPathInside(real, realpathNearest(path.resolve(workspace, expandHome(dir, homeDir)))),
      );
    if (inExtraReadDir || (access === 'read' && inReadOnlyDir)) return { ok: true, path: real };

    const via = real === absolute ? '' : ` (it resolves to ${real})`;
    return {
      ok: false,
      error: `Error: path '${input}' is outside the workspace ${realWorkspace}${via}. ${WORKSPACE_BOUNDARY_NOTE}`,
    };
  };

  return { workspace, restrictToWorkspace: options.restrictToWorkspace, resolve };
}

/**
 * A directory that was checked against the policy *after* it was opened, so swapping one of its
 * ancestors for a symlink between the policy check and the write cannot redirect the write.
 */
export interface ContainedDirectory {
  /**
   * Path to use for every operation inside the directory. On Linux it is `/proc/self/fd/N`, which names
   * the opened directory itself rather than re-walking its path; elsewhere it is the verified real path.
   */
  anchor: string;
  /** Real path of the directory as verified. */
  realPath: string;
  /** Real paths of the directories created to reach it, outermost first (for rollback). */
  created: string[];
}

const FD_DIR = '/proc/self/fd';
let fdAnchorsSupported: boolean | undefined;

function canAnchorByFd(): boolean {
  fdAnchorsSupported ??= process.platform === 'linux' && fs.existsSync(FD_DIR);
  return fdAnchorsSupported;
}

function errorCode(error: unknown): string | undefined {
  return error instanceof Error && 'code' in error ? String(error.code) : undefined;
}

/** Refuses unless the policy grants write access to exactly `real` (no symlink in it, nothing swapped). */
function assertWritableRealDir(policy: PathPolicy, real: string, requested: string): void {
  const check = policy.resolve(real, 'write');
  if (!check.ok || check.path !== real) {
    throw new Error(
      `refusing to write into ${requested}: it resolved to ${real} at write time, which is not allowed ` +
        `(the directory changed after it was checked). ${WORKSPACE_BOUNDARY_NOTE}`,
    );
  }
}

/**
 * Opens `dir` (creating missing components one at a time, never following a symlink in a created
 * component), verifies the directory actually opened against the policy for writing, then runs `use`
 * with an anchor path bound to that directory. Closes the TOCTOU gap between `policy.resolve` and a write.
 */
export async function withContainedDirectory<T>(
  policy: PathPolicy,
  dir: string,
  use: (contained: ContainedDirectory) => Promise<T>,
): Promise<T> {
  const absolute = path.resolve(dir);
  const missing: string[] = [];
  let existing = absolute;
  for (;;) {
    try {
      await fsp.stat(existing);
      break;
    } catch (error) {
      const parent = path.dirname(existing);
      if (errorCode(error) !== 'ENOENT' || parent === existing) throw error;
      missing.unshift(path.basename(existing));
      existing = parent;
    }
  }
  return canAnchorByFd()
    ? withFdAnchor(policy, absolute, existing, missing, use)
    : withRealPathAnchor(policy, absolute, existing, missing, use);
}

async function withFdAnchor<T>(
  policy: PathPolicy,
  requested: string,
  existing: string,
  missing: string[],
  use: (contained: ContainedDirectory) => Promise<T>,
): Promise<T> {
  const { O_RDONLY, O_DIRECTORY, O_NOFOLLOW } = fs.constants;
  let handle = await fsp.open(existing, O_RDONLY | O_DIRECTORY);
  try {
    let anchor = `${FD_DIR}/${handle.fd}`;
    // readlink on the fd names where the opened directory really is, whatever happened to the path since.
    let real = await fsp.readlink(anchor);
    assertWritableRealDir(policy, real, requested);
    const created: string[] = [];
    for (const name of missing) {
      const made = await fsp.mkdir(`${anchor}/${name}`).then(
        () => true,
        (error: unknown) => {
          if (errorCode(error) === 'EEXIST') return false;
          throw error;
        },
      );
      const next = await fsp.open(`${anchor}/${name}`, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
      await handle.close();
      handle = next;
      anchor = `${FD_DIR}/${handle.fd}`;
      real = await fsp.readlink(anchor);
      assertWritableRealDir(policy, real, requested);
      if (made) created.push(real);
    }
    return await use({ anchor, realPath: real, created });
  } finally {
    await handle.close().catch(() => undefined);
  }
}

// Without fd paths the check-to-use window cannot be closed, only narrowed to the time between this
// re-check and the caller's rename.
async function withRealPathAnchor<T>(
  policy: PathPolicy,
  requested: string,
  existing: string,
  missing: string[],
  use: (contained: ContainedDirectory) => Promise<T>,
): Promise<T> {
  let real = await fsp.realpath(existing);
  assertWritableRealDir(policy, real, requested);
  const created: string[] = [];
  for (const name of missing) {
    const next = path.join(real, name);
    const made = await fsp.mkdir(next).then(
      () => true,
      (error: unknown) => {
        if (errorCode(error) === 'EEXIST') return false;
        throw error;
      },
    );
    real = await fsp.realpath(next);
    assertWritableRealDir(policy, real, requested);
    if (made) created.push(real);
  }
  return use({ anchor: real, realPath: real, created });
}
