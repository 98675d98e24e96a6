/**
 * File operations of the JSONL session store: durable whole-line appends, and reading only what was appended to a
 * file this process already knows.
 */
import { constants, type Stats } from 'node:fs';
import { type FileHandle, open, stat } from 'node:fs/promises';
import { appendWholeSync, type WriteSyscall } from '../security/workspace-file-ops.js';
import { FileWriteError } from '../util/errors.js';
import type { Logger } from '../util/log.js';

/** Identifies one version of a file: a rename changes the inode, an append the size and mtime. */
export interface FileStamp {
  size: number;
  mtimeMs: number;
  ino: number;
}

/**
 * A version of a file known byte for byte, ending with a complete line, with its first and last bytes: a later file
 * that still starts and ends (at the old size) with them, under the same inode, is this one with lines appended.
 */
export interface FileVersion {
  stamp: FileStamp;
  head: Buffer;
  tail: Buffer;
}

export interface AppendResult {
  /** The file before this append (including any torn tail it cut off). */
  before: FileStamp;
  after: FileStamp;
  /** True when the file holds exactly its old complete lines plus ours: nobody else wrote in between. */
  clean: boolean;
  /** The bytes written. */
  data: Buffer;
}

/** Bytes of each end of a file kept to recognise it later. */
const EDGE_BYTES = 256;
const TAIL_SCAN_CHUNK = 64 * 1024;
const NEWLINE = 0x0a;

export function versionOf(stamp: FileStamp, bytes: Buffer): FileVersion {
  // Copies, so the whole file's buffer is not kept alive by them.
  return {
    stamp,
    head: Buffer.from(bytes.subarray(0, EDGE_BYTES)),
    tail: Buffer.from(bytes.subarray(Math.max(0, bytes.length - EDGE_BYTES))),
  };
}

/** The version after `data` was appended to `version`. */
export function extendVersion(version: FileVersion, stamp: FileStamp, data: Buffer): FileVersion {
  const head =
    version.head.length < EDGE_BYTES
      ? Buffer.concat([version.head, data.subarray(0, EDGE_BYTES - version.head.length)])
      : version.head;
  const tail =
    data.length >= EDGE_BYTES
      ? Buffer.from(data.subarray(data.length - EDGE_BYTES))
      : Buffer.concat([version.tail, data]).subarray(-EDGE_BYTES);
  return { stamp, head, tail: Buffer.from(tail) };
}

/**
 * What was appended to `known`: the new bytes (whole lines) and the file's version now. Undefined when the file is
 * not `known` plus appended lines (replaced, rewritten in place, shrunk) or its last line is still being written;
 * then it must be read whole.
 */
export async function readAppended(
  path: string,
  known: FileVersion,
): Promise<{ version: FileVersion; appended: Buffer } | undefined> {
  let handle: FileHandle;
  try {
    handle = await open(path, 'r');
  } catch (err) {
    if (isMissing(err)) return undefined;
    throw err;
  }
  try {
    const stamp = toStamp(await handle.stat());
    const from = known.stamp.size - known.tail.length;
    if (stamp.ino !== known.stamp.ino || stamp.size <= known.stamp.size || from < 0) return undefined;
    const head = await readRange(handle, 0, known.head.length);
    if (!head.equals(known.head)) return undefined;
    const bytes = await readRange(handle, from, stamp.size);
    if (bytes.length !== stamp.size - from || !bytes.subarray(0, known.tail.length).equals(known.tail)) {
      return undefined;
    }
    if (bytes[bytes.length - 1] !== NEWLINE) return undefined;
    const appended = bytes.subarray(known.tail.length);
    return { version: extendVersion(known, stamp, appended), appended };
  } finally {
    await handle.close();
  }
}

/**
 * Appends whole lines with one O_APPEND write and an fdatasync, all or nothing: a short or failed write (a full disk
 * writes part of a big line, then fails) truncates the file back and throws a FileWriteError naming the file. A torn last line left by a crash is cut off first, so
 * our lines never glue onto it; a last line that is complete JSON but lacks its newline gets one. When the file is
 * still exactly as this store last wrote it (`known`), it ends with our newline and its tail need not be read.
 * Returns undefined when there is nothing to append to (missing or empty file, or a file that is one torn line).
 */
export async function appendToSessionFile(
  path: string,
  text: string,
  known: FileStamp | undefined,
  key: string,
  log: Logger,
  write?: WriteSyscall,
): Promise<AppendResult | undefined> {
  let handle: FileHandle;
  try {
    handle = await open(path, constants.O_RDWR | constants.O_APPEND);
  } catch (err) {
    if (isMissing(err)) return undefined;
    throw FileWriteError.of(err, path);
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
    const base = prefix ? before.size : end;
    appendWholeSync(handle.fd, data, { path, restoreTo: base, fsync: true, ...(write ? { write } : {}) });
    const after = toStamp(await handle.stat());
    return { before, after, clean: after.size === base + data.length, data };
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
  let filled = 0;
  while (filled < buffer.length) {
    const { bytesRead } = await handle.read(buffer, filled, buffer.length - filled, start + filled);
    if (bytesRead === 0) break;
    filled += bytesRead;
  }
  return buffer.subarray(0, filled);
}

function isJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

export async function stampOf(path: string): Promise<FileStamp | undefined> {
  try {
    return toStamp(await stat(path));
  } catch (err) {
    if (isMissing(err)) return undefined;
    throw err;
  }
}

export const toStamp = (s: Stats): FileStamp => ({ size: s.size, mtimeMs: s.mtimeMs, ino: s.ino });
export const sameStamp = (a: FileStamp, b: FileStamp): boolean =>
  a.size === b.size && a.mtimeMs === b.mtimeMs && a.ino === b.ino;
export const isMissing = (err: unknown): boolean => (err as NodeJS.ErrnoException | undefined)?.code === 'ENOENT';
