/**
 * "Open, then check": for paths a PathPolicy (not a single root) decides on — file tools reading outside the
 * workspace when allowed, extra read dirs, media. The path is opened first (O_NONBLOCK | O_NOCTTY, so a planted
 * FIFO cannot hang the open), and the decision is made on where the opened fd really is
 * (readlink /proc/self/fd/N), so a symlink or directory swapped in after a pre-check cannot redirect the read.
 * Without /proc the real path is taken by realpath and tied to the fd by dev/ino (narrows the window only).
 */
import fs from 'node:fs';
import path from 'node:path';
import type { PathAccess, PathPolicy } from './workspace.js';
import {
  canAnchorByFd,
  type DirRef,
  errorCode,
  kindOf,
  WorkspaceEscapeError,
  WorkspaceFileTypeError,
} from './workspace-resolve.js';

const { O_RDONLY, O_DIRECTORY = 0, O_NONBLOCK = 0, O_NOCTTY = 0 } = fs.constants;

/** Decides on the real path of what was opened: return true to allow, or a refusal message. */
export type RealPathCheck = (realPath: string) => true | string;

export interface CheckedFile {
  fd: number;
  realPath: string;
  stats: fs.Stats;
}

function realOf(fd: number, opened: string): string {
  if (canAnchorByFd()) return fs.readlinkSync(`/proc/self/fd/${fd}`);
  const real = fs.realpathSync.native(opened);
  const a = fs.fstatSync(fd);
  const b = fs.statSync(real);
  if (a.ino !== b.ino || a.dev !== b.dev) throw new WorkspaceEscapeError(opened, real, 'it changed while opening');
  return real;
}

function refuse(opened: string, real: string, verdict: string): never {
  throw new WorkspaceEscapeError(opened, real, verdict);
}

/** Opens `filePath` read-only, checks the fd's real path, and requires a regular file. The caller closes `fd`. */
export function openCheckedFile(filePath: string, check: RealPathCheck): CheckedFile {
  const absolute = path.resolve(filePath);
  const fd = fs.openSync(absolute, O_RDONLY | O_NONBLOCK | O_NOCTTY);
  try {
    const realPath = realOf(fd, absolute);
    const verdict = check(realPath);
    if (verdict !== true) refuse(absolute, realPath, verdict);
    const stats = fs.fstatSync(fd);
    if (!stats.isFile()) throw new WorkspaceFileTypeError(absolute, kindOf(stats), 'regular file');
    return { fd, realPath, stats };
  } catch (error) {
    fs.closeSync(fd);
    throw error;
  }
}

/** Reads a whole file through `openCheckedFile`, refusing files above `maxBytes`. */
export function readCheckedFile(filePath: string, check: RealPathCheck, maxBytes?: number): Buffer {
  const file = openCheckedFile(filePath, check);
  try {
    if (maxBytes !== undefined && file.stats.size > maxBytes) {
      throw new WorkspaceFileTypeError(
        filePath,
        `file of ${file.stats.size} bytes`,
        `file of at most ${maxBytes} bytes`,
      );
    }
    return fs.readFileSync(file.fd);
  } finally {
    fs.closeSync(file.fd);
  }
}

/**
 * Opens directory `dirPath`, checks its real path, and runs `use` with an anchor bound to the opened directory
 * (list it, walk it, open entries as `${anchor}/${name}`) so a swap of the path after the check changes nothing.
 */
export function withCheckedDirectory<T>(dirPath: string, check: RealPathCheck, use: (dir: DirRef) => T): T {
  const absolute = path.resolve(dirPath);
  if (!canAnchorByFd()) {
    const real = fs.realpathSync.native(absolute);
    const verdict = check(real);
    if (verdict !== true) refuse(absolute, real, verdict);
    if (!fs.statSync(real).isDirectory()) throw new WorkspaceFileTypeError(absolute, 'file', 'directory');
    return use({ fd: undefined, anchor: real, real });
  }
  let fd: number;
  try {
    fd = fs.openSync(absolute, O_RDONLY | O_DIRECTORY | O_NONBLOCK);
  } catch (error) {
    if (errorCode(error) === 'ENOTDIR') throw new WorkspaceFileTypeError(absolute, 'file', 'directory');
    throw error;
  }
  try {
    const anchor = `/proc/self/fd/${fd}`;
    const real = fs.readlinkSync(anchor);
    const verdict = check(real);
    if (verdict !== true) refuse(absolute, real, verdict);
    return use({ fd, anchor, real });
  } finally {
    fs.closeSync(fd);
  }
}

/** A RealPathCheck from a PathPolicy: the opened object's real path must itself be allowed, unchanged. */
export function policyCheck(policy: PathPolicy, access: PathAccess): RealPathCheck {
  return (realPath) => {
    const verdict = policy.resolve(realPath, access);
    if (!verdict.ok) return verdict.error;
    return verdict.path === realPath ? true : `Error: '${realPath}' changed while it was being opened.`;
  };
}

/**
 * Removes the empty directory `dirPath` through its opened, checked parent (rmdir never follows the last component),
 * so a parent swapped for a symlink after a check cannot make it remove a directory elsewhere. A directory that is
 * gone already is fine; one that is not empty stays.
 */
export function removeCheckedEmptyDir(dirPath: string, check: RealPathCheck): void {
  const absolute = path.resolve(dirPath);
  withCheckedDirectory(path.dirname(absolute), check, (parent) => {
    try {
      fs.rmdirSync(`${parent.anchor}/${path.basename(absolute)}`);
    } catch (error) {
      if (errorCode(error) !== 'ENOENT') throw error;
    }
  });
}
