/**
 * nanobot's JSONL session format: a metadata line, then one message per line. nanobot's session list and WebUI read
 * the first line only, so it is kept current (padded with spaces, so it can be overwritten in place). More metadata
 * lines may follow anywhere (the last one wins, as in nanobot's loader, but the first line wins over them unless
 * it is older); lines with another `_type` are kept and written back as they are. Parsing can resume: the lines appended to a file are
 * applied to what its earlier lines gave.
 */
import { isAscii } from 'node:buffer';
import type { ChatMessage } from '../providers/types.js';
import type { Logger } from '../util/log.js';
import { newSession, type Session } from './types.js';

export interface MetadataLine {
  _type: 'metadata';
  key: string;
  created_at: string;
  updated_at: string;
  metadata: Record<string, unknown>;
  last_consolidated: number;
}

/** Metadata lines met while parsing, and their size (what a compaction would reclaim). */
export interface MetadataCount {
  lines: number;
  bytes: number;
}

export interface ParsedSession {
  session: Session;
  metadata: MetadataCount;
}

/** Everything the metadata line records except `updated_at`, which alone is no reason to append a line. */
export function headerOf(session: Session): string {
  return JSON.stringify([session.key, session.createdAt, session.lastConsolidated, session.metadata]);
}

export function metadataLineOf(session: Session): MetadataLine {
  return {
    _type: 'metadata',
    key: session.key,
    created_at: session.createdAt,
    updated_at: session.updatedAt,
    metadata: session.metadata,
    last_consolidated: session.lastConsolidated,
  };
}

/**
 * The first line's width: room for the metadata to grow (usage counters, a longer summary) before overwriting it in
 * place no longer fits and the file must be rewritten.
 */
export function reservedWidth(length: number): number {
  return Math.ceil((length + 256 + length / 4) / 256) * 256 - 1;
}

export function serializeSession(session: Session): string {
  const first = JSON.stringify(metadataLineOf(session));
  const lines = [
    first.padEnd(reservedWidth(Buffer.byteLength(first)) - (Buffer.byteLength(first) - first.length)),
    ...(session.preserved ?? []).map((line) => JSON.stringify(line)),
    ...session.messages.map((m) => JSON.stringify(m)),
  ];
  return `${lines.join('\n')}\n`;
}

/** UTF-8 text; pure ASCII (the usual session file: JSON escapes nothing else, but most text is English) decodes faster. */
export function decodeText(bytes: Buffer): string {
  return isAscii(bytes) ? bytes.toString('latin1') : bytes.toString('utf8');
}

export function parseSessionFile(text: string, key: string, path: string, log: Logger): Session {
  return parseSessionText(text, key, path, log).session;
}

/**
 * Parses session lines. With `onto` (the session the file's earlier lines gave, left untouched), `text` holds the
 * lines appended after those and the result is what parsing the whole file would give. Damaged lines are skipped
 * with a warning.
 */
export function parseSessionText(text: string, key: string, path: string, log: Logger, onto?: Session): ParsedSession {
  const session: Session = onto
    ? { ...onto, messages: onto.messages.slice(), ...(onto.preserved ? { preserved: onto.preserved.slice() } : {}) }
    : newSession(key);
  const metadata: MetadataCount = { lines: 0, bytes: 0 };
  let firstLine: Partial<MetadataLine> | undefined;
  for (let start = 0, lineNumber = 1; start < text.length; lineNumber++) {
    let end = text.indexOf('\n', start);
    if (end === -1) end = text.length;
    const line = text.slice(start, end);
    start = end + 1;
    if (line.length === 0) continue;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      if (line.trim() === '') continue;
      const last = text.slice(start).trim() === '';
      const corrupt = onto ? 'a corrupt line among the appended ones' : `a corrupt line ${lineNumber}`;
      const where = last ? 'a torn last line (an interrupted write)' : corrupt;
      log.warn(`session ${key}: dropped ${where} in ${path}`);
      continue;
    }
    if (typeof value !== 'object' || value === null) continue;
    const record = value as Record<string, unknown>;
    if (record._type === 'metadata') {
      const meta = record as Partial<MetadataLine>;
      if (lineNumber === 1 && !onto) firstLine = meta;
      applyMetadata(session, meta);
      metadata.lines += 1;
      metadata.bytes += line.length + 1;
    } else if (record._type === undefined && typeof record.role === 'string') {
      session.messages.push(record as unknown as ChatMessage);
    } else if (typeof record._type === 'string') {
      session.preserved = [...(session.preserved ?? []), record];
    }
  }
  // Line 1 is overwritten in place after each append, and nanobot edits it alone: it wins unless a later line is newer.
  if (firstLine && metadata.lines > 1) applyFirstLine(session, firstLine);
  session.lastConsolidated = Math.min(session.lastConsolidated, session.messages.length);
  return { session, metadata };
}

function applyMetadata(session: Session, meta: Partial<MetadataLine>): void {
  session.createdAt = meta.created_at ?? session.createdAt;
  session.updatedAt = meta.updated_at ?? session.updatedAt;
  session.metadata = meta.metadata ?? {};
  session.lastConsolidated = meta.last_consolidated ?? 0;
}

/**
 * Applies the file's first line over what the lines after it gave, unless it is older than them (a crash between an
 * append and the first line's update leaves it behind).
 */
export function applyFirstLine(session: Session, meta: Partial<MetadataLine>): void {
  const at = Date.parse(meta.updated_at ?? '');
  const after = Date.parse(session.updatedAt);
  if (Number.isNaN(at) || at < after) return;
  applyMetadata(session, meta);
}

/** The first line of a session file when it is a metadata line. */
export function metadataOf(line: string): Partial<MetadataLine> | undefined {
  try {
    const value: unknown = JSON.parse(line);
    if (typeof value !== 'object' || value === null) return undefined;
    return (value as { _type?: unknown })._type === 'metadata' ? (value as Partial<MetadataLine>) : undefined;
  } catch {
    return undefined;
  }
}
