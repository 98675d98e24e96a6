/**
 * Searches one file for grep. Reads at most 2 MB, skips binary files (a NUL byte in the first 8 KB),
 * and finds the matching lines in one bounded call (a literal pre-filter first), then adds their context.
 */
import fs from 'node:fs';
import type { CompiledPattern } from './grep-pattern.js';

export const MAX_GREP_FILE_BYTES = 2 * 1024 * 1024;
const BINARY_SNIFF_BYTES = 8192;
/** Lines longer than this (minified code, data) are cut around the match. */
export const MAX_LINE_CHARS = 400;

export interface NumberedLine {
  line: number;
  text: string;
}

export interface MatchHit extends NumberedLine {
  before: NumberedLine[];
  after: NumberedLine[];
}

export type FileScan =
  | { kind: 'skipped'; reason: 'binary' | 'large' | 'unreadable' }
  | { kind: 'scanned'; matchCount: number; hits: MatchHit[] };

export interface ScanOptions {
  pattern: CompiledPattern;
  /** Collect at most this many hits (with their context); 0 only counts. */
  maxHits: number;
  /** Stop at the first matching line (files_with_matches). */
  firstMatchOnly: boolean;
  contextBefore: number;
  contextAfter: number;
}

// One buffer for every read (the scan is synchronous, so never shared); one byte over the limit tells
// a large file without an fstat per file. Allocated on first use.
let sharedBuffer: Buffer | undefined;

/**
 * The file's bytes as a view of the shared buffer, valid until the next call. Synchronous on purpose
 * (see TimeSlicer in search-common.ts). `open` is the walk's anchored open (O_NOFOLLOW | O_NONBLOCK, regular
 * files only), so a file swapped for a link or a FIFO after the walk listed it is skipped, never followed.
 */
function readSmallFile(open: () => number): Buffer | 'large' | 'unreadable' {
  sharedBuffer ??= Buffer.allocUnsafe(MAX_GREP_FILE_BYTES + 1);
  const readBuffer = sharedBuffer;
  let fd: number | undefined;
  try {
    fd = open();
    let filled = 0;
    while (filled < readBuffer.length) {
      const bytesRead = fs.readSync(fd, readBuffer, filled, readBuffer.length - filled, null);
      if (bytesRead === 0) break;
      filled += bytesRead;
    }
    return filled > MAX_GREP_FILE_BYTES ? 'large' : readBuffer.subarray(0, filled);
  } catch {
    return 'unreadable';
  } finally {
    if (fd !== undefined) fs.closeSync(fd);
  }
}

/** Cuts a long line to MAX_LINE_CHARS, keeping the part around `at` visible. */
export function clipLine(text: string, at = 0): string {
  if (text.length <= MAX_LINE_CHARS) return text;
  const start = Math.max(0, Math.min(at - Math.floor(MAX_LINE_CHARS / 3), text.length - MAX_LINE_CHARS));
  const end = start + MAX_LINE_CHARS;
  return `${start > 0 ? '…' : ''}${text.slice(start, end)}${end < text.length ? '…' : ''}`;
}

const stripCr = (line: string): string => (line.endsWith('\r') ? line.slice(0, -1) : line);

/** Scans the file `open` opens (it returns an fd, which is closed here). */
export function scanFile(open: () => number, options: ScanOptions): FileScan {
  const data = readSmallFile(open);
  if (data === 'large' || data === 'unreadable') return { kind: 'skipped', reason: data };
  if (data.subarray(0, BINARY_SNIFF_BYTES).includes(0)) return { kind: 'skipped', reason: 'binary' };
  if (options.pattern.literal && !data.includes(options.pattern.literal)) {
    return { kind: 'scanned', matchCount: 0, hits: [] };
  }
  const text = data.toString('utf8');
  const matches = options.pattern.regex.matchLines(text, options.firstMatchOnly);
  if (matches.length === 0) return { kind: 'scanned', matchCount: 0, hits: [] };

  const lines = text.split('\n');
  if (lines.length > 1 && lines.at(-1) === '') lines.pop();
  const { contextBefore, contextAfter } = options;
  const hits: MatchHit[] = [];
  let matchCount = 0;
  for (const [index, at] of matches) {
    const content = stripCr(lines[index] as string);
    matchCount++;
    if (hits.length < options.maxHits) {
      const context = (from: number, to: number): NumberedLine[] => {
        const out: NumberedLine[] = [];
        for (let i = Math.max(0, from); i < Math.min(lines.length, to); i++) {
          out.push({ line: i + 1, text: clipLine(stripCr(lines[i] as string)) });
        }
        return out;
      };
      hits.push({
        line: index + 1,
        text: clipLine(content, at),
        before: context(index - contextBefore, index),
        after: context(index + 1, index + 1 + contextAfter),
      });
    }
  }
  return { kind: 'scanned', matchCount, hits };
}
