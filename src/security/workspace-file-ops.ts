/**
 * Pieces of the workspace-file layer (workspace-fs.ts): option types, the opened-file handle, and the fd-level
 * helpers for recursive removal, fd real paths and directory fsync. Nothing here resolves a path by itself.
 */
import fs from 'node:fs';
import { FileWriteError } from '../util/errors.js';
import { closeDir, type DirRef, entryPath, openDirRef, WorkspaceEscapeError } from './workspace-resolve.js';

const { O_RDONLY } = fs.constants;

export interface WriteOptions {
  /** Mode of a file this call creates (atomic writes also chmod to it). Default: the old file's mode, else 0644. */
  mode?: number;
  /** Mode of directories this call creates. Default 0755. */
  dirMode?: number;
  /** Appends: fsync before returning (atomic writes always fsync). */
  fsync?: boolean;
}

export interface ReadOptions {
  /** Refuse files larger than this many bytes (a planted huge file must not be read into memory). */
  maxBytes?: number;
}

export interface WorkspaceDirent {
  name: string;
  kind: 'file' | 'directory' | 'symlink' | 'other';
}

/** Test seam: the write syscall, so a short write can be simulated. */
export type WriteSyscall = (fd: number, data: Uint8Array, offset: number, length: number) => number;

export interface WorkspaceFsOptions {
  writeSync?: WriteSyscall;
}

/** An opened regular file inside the workspace (its size as opened). The caller closes it. */
export class WorkspaceFileHandle {
  constructor(
    readonly fd: number,
    readonly realPath: string,
    readonly size: number,
  ) {}

  /** Up to `length` bytes from `position` (fewer at end of file). */
  read(length: number, position: number): Buffer {
    const buffer = Buffer.alloc(length);
    let done = 0;
    while (done < length) {
      const n = fs.readSync(this.fd, buffer, done, length - done, position + done);
      if (n === 0) break;
      done += n;
    }
    return buffer.subarray(0, done);
  }

  readAll(): Buffer {
    return fs.readFileSync(this.fd);
  }

  write(data: string | Uint8Array, position: number): void {
    const buffer = toBuffer(data);
    let done = 0;
    while (done < buffer.length) done += fs.writeSync(this.fd, buffer, done, buffer.length - done, position + done);
  }

  truncate(length: number): void {
    fs.ftruncateSync(this.fd, length);
  }

  sync(): void {
    fs.fsyncSync(this.fd);
  }

  close(): void {
    fs.closeSync(this.fd);
  }
}

export const defaultWriteSyscall: WriteSyscall = (fd, data, offset, length) => fs.writeSync(fd, data, offset, length);

/**
 * Writes all of `buffer` at the fd's position, looping over short writes (a full disk returns a short count first,
 * then ENOSPC). Fails with a FileWriteError naming `path`; a write that makes no progress counts as EIO.
 */
export function writeWholeSync(fd: number, buffer: Buffer, path: string, write = defaultWriteSyscall): void {
  let offset = 0;
  while (offset < buffer.length) {
    let written: number;
    try {
      written = write(fd, buffer, offset, buffer.length - offset);
    } catch (error) {
      throw FileWriteError.of(error, path);
    }
    if (!(written > 0)) throw new FileWriteError('EIO', path, `short write: ${offset} of ${buffer.length} bytes`);
    offset += written;
  }
}

/**
 * The one "append all or nothing": writes `buffer` to an O_APPEND fd (and fsyncs when asked); when any of it fails,
 * truncates the file back to `restoreTo` (its length before) and throws, so no part of a line is left behind.
 */
export function appendWholeSync(
  fd: number,
  buffer: Buffer,
  options: { path: string; restoreTo: number; fsync?: boolean; write?: WriteSyscall },
): void {
  try {
    writeWholeSync(fd, buffer, options.path, options.write);
    if (options.fsync) fs.fdatasyncSync(fd);
  } catch (error) {
    fs.ftruncateSync(fd, options.restoreTo);
    throw FileWriteError.of(error, options.path);
  }
}

export const toBuffer = (data: string | Uint8Array): Buffer =>
  typeof data === 'string' ? Buffer.from(data, 'utf8') : Buffer.from(data.buffer, data.byteOffset, data.byteLength);

export function removeEntry(parent: DirRef, name: string, stats: fs.Stats | undefined): void {
  if (stats === undefined) return;
  const at = entryPath(parent, name);
  if (!stats.isDirectory()) {
    fs.unlinkSync(at);
    return;
  }
  const dir = openDirRef(at, false, at);
  try {
    for (const child of fs.readdirSync(dir.anchor)) {
      const childStats = fs.lstatSync(entryPath(dir, child));
      removeEntry(dir, child, childStats);
    }
  } finally {
    closeDir(dir);
  }
  fs.rmdirSync(at);
}

/** Where an open fd really is: /proc/self/fd on Linux, else the path we opened (checked by dev/ino). */
export function realPathOfFd(fd: number, opened: string): string {
  try {
    return fs.readlinkSync(`/proc/self/fd/${fd}`);
  } catch {
    const real = fs.realpathSync.native(opened);
    const a = fs.fstatSync(fd);
    const b = fs.statSync(real);
    if (a.ino !== b.ino || a.dev !== b.dev) throw new WorkspaceEscapeError(opened, real, 'it changed while opening');
    return real;
  }
}

export function syncDir(dir: DirRef): void {
  try {
    const fd = fs.openSync(dir.anchor, O_RDONLY);
    try {
      fs.fsyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
  } catch {
    // Some filesystems refuse fsync on directories; the rename is still atomic there.
  }
}
