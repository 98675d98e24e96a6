/**
 * Read-side pieces of "open, then check" (checked-open.ts) for the file tools: a checked directory the caller keeps
 * open for a whole walk, entries opened relative to an already-verified parent (never following a link, so a
 * subdirectory swapped for a link mid-walk cannot lead out), and a copy of a checked file into a directory the
 * sandbox cannot write (for attachments a channel re-opens later by path).
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { openCheckedFile, type RealPathCheck, withCheckedDirectory } from './checked-open.js';
import {
  assertInsideReal,
  closeDir,
  type DirRef,
  entryPath,
  errorCode,
  kindOf,
  openDirRef,
  WorkspaceEscapeError,
  WorkspaceFileTypeError,
} from './workspace-resolve.js';

export { closeDir, type DirRef } from './workspace-resolve.js';

const { O_RDONLY, O_WRONLY, O_CREAT, O_EXCL, O_NOFOLLOW = 0, O_NONBLOCK = 0, O_NOCTTY = 0 } = fs.constants;

/**
 * Opens directory `dirPath`, checks the real path of what was opened, and returns an anchor the caller keeps (and
 * closes with `closeDir`) for as long as it works inside: async walks that outlive one callback.
 */
export function openCheckedDirectory(dirPath: string, check: RealPathCheck): DirRef {
  return withCheckedDirectory(dirPath, check, (dir) => {
    if (dir.fd === undefined) return dir;
    // A second fd on the very directory that was checked (through its fd link, not its path): ours to keep.
    const kept = openDirRef(dir.anchor, true, dirPath);
    if (kept.real !== dir.real) {
      closeDir(kept);
      throw new WorkspaceEscapeError(dirPath, kept.real, 'it changed while opening');
    }
    return kept;
  });
}

/** Opens subdirectory `name` of an opened `parent`, never through a link; it must lie inside `root`. */
export function openChildDirectory(parent: DirRef, name: string, root: DirRef): DirRef {
  const shown = path.join(parent.real, name);
  const dir = openDirRef(entryPath(parent, name), false, shown);
  try {
    assertInsideReal(root, dir, shown);
    return dir;
  } catch (error) {
    closeDir(dir);
    throw error;
  }
}

/** Opens file `name` of an opened `parent` read-only, never through a link, never blocking; a regular file only. */
export function openChildFile(parent: DirRef, name: string): { fd: number; stats: fs.Stats } {
  const shown = path.join(parent.real, name);
  let fd: number;
  try {
    fd = fs.openSync(entryPath(parent, name), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
  } catch (error) {
    if (errorCode(error) === 'ELOOP') throw new WorkspaceEscapeError(shown, undefined, 'it is a symbolic link');
    throw error;
  }
  try {
    const stats = fs.fstatSync(fd);
    if (!stats.isFile()) throw new WorkspaceFileTypeError(shown, kindOf(stats), 'regular file');
    return { fd, stats };
  } catch (error) {
    fs.closeSync(fd);
    throw error;
  }
}

const readFd = promisify(fs.read);
const writeFd = promisify(fs.write);

/**
 * Copies a file (opened, then checked) into a fresh private subdirectory of `destDir`, keeping its name, and returns
 * the copy's path. Used for attachments: a channel opens them later by path, and a path under the workspace can be
 * swapped for a link by then; a copy in nanobot's own media dir cannot.
 */
export async function copyCheckedFile(
  source: string,
  check: RealPathCheck,
  destDir: string,
  stamp = Date.now(),
): Promise<string> {
  const file = openCheckedFile(source, check);
  try {
    fs.mkdirSync(destDir, { recursive: true, mode: 0o700 });
    const dir = path.join(destDir, `${stamp}-${randomBytes(6).toString('hex')}`);
    fs.mkdirSync(dir, { mode: 0o700 });
    const target = path.join(dir, path.basename(file.realPath));
    const out = fs.openSync(target, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0o600);
    try {
      const buffer = Buffer.allocUnsafe(64 * 1024);
      for (let position = 0; ; ) {
        const { bytesRead } = await readFd(file.fd, buffer, 0, buffer.length, position);
        if (bytesRead === 0) break;
        for (let done = 0; done < bytesRead; )
          done += (await writeFd(out, buffer, done, bytesRead - done)).bytesWritten;
        position += bytesRead;
      }
    } finally {
      fs.closeSync(out);
    }
    return target;
  } finally {
    fs.closeSync(file.fd);
  }
}
