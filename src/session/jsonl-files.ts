/**
 * File operations of the JSONL session store: durable whole-line appends, and reading only what was appended to a
 * file this process already knows.
 */
import { constants, fdatasyncSync, type Stats, writeSync } from 'node:fs';
import { type FileHandle, open, stat } from 'node:fs/promises';
import { appendWholeSync, type WriteSyscall, writeWholeSync } from '../security/workspace-file-ops.js';
import { FileWriteError } from '../util/errors.js';
import type { Logger } from '../util/log.js';

/** Identifies one version of a file: a rename changes the inode, an append the size and mtime. */
export interface FileStamp {
  size: number;
  mtimeMs: number;
  ino: number;
}

/**
 * A version of a file known byte for byte, ending with a complete line: the end of its first line (the metadata
 * line, which may be overwritten in place), the first bytes after it and the last bytes. A later file that still has
 * a first line of that width and those bytes after it and at the old size, under the same inode, is this one with
 * lines appended (and maybe its first line updated).
 */
export interface FileVersion {
  stamp: FileStamp;
  /** The offset just past the first line's newline. */
  bodyStart: number;
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
  const bodyStart = bytes.indexOf(NEWLINE) + 1;
  // Copies, so the whole file's buffer is not kept alive by them.
  return {
    stamp,
    bodyStart,
    head: Buffer.from(bytes.subarray(bodyStart, bodyStart + EDGE_BYTES)),
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
  return { stamp, bodyStart: version.bodyStart, head, tail: Buffer.from(tail) };
}

/**
 * What was appended to `known`: the new bytes (whole lines) and the file's version now. Undefined when the file is
 * not `known` plus appended lines (replaced, rewritten in place, shrunk) or its last line is still being written;
 * then it must be read whole.
 */
export async function readAppended(
  path: string,
  known: FileVersion,
): Promise<{ version: FileVersion; appended: Buffer; firstLine: string } | undefined> {
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
    const start = await readRange(handle, 0, known.bodyStart + known.head.length);
    if (known.bodyStart === 0 || start[known.bodyStart - 1] !== NEWLINE) return undefined;
    if (start.indexOf(NEWLINE) !== known.bodyStart - 1 || !start.subarray(known.bodyStart).equals(known.head)) {
      return undefined;
    }
    const bytes = await readRange(handle, from, stamp.size);
    if (bytes.length !== stamp.size - from || !bytes.subarray(0, known.tail.length).equals(known.tail)) {
      return undefined;
    }
    if (bytes[bytes.length - 1] !== NEWLINE) return undefined;
    const appended = bytes.subarray(known.tail.length);
    const firstLine = start.subarray(0, known.bodyStart - 1).toString('utf8');
    return { version: extendVersion(known, stamp, appended), appended, firstLine };
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

/** How far the first line is looked for: a metadata line longer than this is kept current by rewriting the file. */
const FIRST_LINE_SCAN = 64 * 1024 * 1024;

export interface FirstLineWrite {
  before: FileStamp;
  after: FileStamp;
  /** The first line's bytes as written now (padded, with its newline). */
  first: Buffer;
}

/**
 * Overwrites the file's first line in place (nanobot's readers take a session's metadata from line 1) with `line`
 * padded by spaces to the old line's width — JSON allows trailing whitespace — and fdatasyncs. Nothing after the
 * first line is touched, so no message can be lost. Returns undefined, writing nothing, when the first line is not a
 * metadata line or `line` does not fit in it. A short or failed write puts the old bytes back and throws.
 */
export async function overwriteFirstLine(
  path: string,
  line: string,
  write?: WriteSyscall,
): Promise<FirstLineWrite | undefined> {
  let handle: FileHandle;
  try {
    handle = await open(path, constants.O_RDWR);
  } catch (err) {
    if (isMissing(err)) return undefined;
    throw FileWriteError.of(err, path);
  }
  try {
    const before = toStamp(await handle.stat());
    const wanted = Buffer.from(line, 'utf8');
    const head = await readFirstLine(handle, Math.min(before.size, FIRST_LINE_SCAN));
    const width = head.indexOf(NEWLINE);
    if (width === -1 || wanted.length > width || !isMetadataLine(head.subarray(0, width))) return undefined;
    const first = Buffer.alloc(width + 1, 0x20);
    wanted.copy(first);
    first[width] = NEWLINE;
    const old = Buffer.from(head.subarray(0, width + 1));
    try {
      writeWholeSync(handle.fd, first, path, write);
      fdatasyncSync(handle.fd);
    } catch (error) {
      try {
        restoreFirstLine(handle.fd, old);
      } catch {
        // The file keeps a torn first line; the loader falls back to a later metadata line.
      }
      throw error;
    }
    return { before, after: toStamp(await handle.stat()), first };
  } finally {
    await handle.close();
  }
}

/** The file's bytes up to its first newline (included), or up to `limit` when there is none before it. */
async function readFirstLine(handle: FileHandle, limit: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for (let at = 0; at < limit; ) {
    const chunk = await readRange(handle, at, Math.min(limit, at + TAIL_SCAN_CHUNK));
    if (chunk.length === 0) break;
    const newline = chunk.indexOf(NEWLINE);
    chunks.push(newline === -1 ? chunk : chunk.subarray(0, newline + 1));
    if (newline !== -1) break;
    at += chunk.length;
  }
  return Buffer.concat(chunks);
}

/** Puts the old first line back (positioned writes: the failed write left the fd's offset anywhere). */
function restoreFirstLine(fd: number, old: Buffer): void {
  for (let done = 0; done < old.length; ) {
    const written = writeSync(fd, old, done, old.length - done, done);
    if (!(written > 0)) return;
    done += written;
  }
  fdatasyncSync(fd);
}

function isMetadataLine(bytes: Buffer): boolean {
  try {
    const value: unknown = JSON.parse(bytes.toString('utf8'));
    return typeof value === 'object' && value !== null && (value as { _type?: unknown })._type === 'metadata';
  } catch {
    return false;
  }
}

/** `version` after its first line was overwritten in place; undefined when its recorded tail overlaps that line. */
export function patchFirstLine(version: FileVersion, stamp: FileStamp, first: Buffer): FileVersion | undefined {
  if (first.length !== version.bodyStart || version.stamp.size - version.tail.length < first.length) return undefined;
  return { ...version, stamp };
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
