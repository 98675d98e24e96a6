/**
 * nanobot's JSONL session format: a metadata line, then one message per line. More metadata lines may follow
 * anywhere (the last one wins, as in nanobot's loader); lines with another `_type` are kept and written back as they
 * are. Parsing can resume: the lines appended to a file are applied to what its earlier lines gave.
 */
import { isAscii } from 'node:buffer';
import type { ChatMessage } from '../providers/types.js';
import type { Logger } from '../util/log.js';
import { newSession, type Session } from './types.js';

interface MetadataLine {
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

export function serializeSession(session: Session): string {
  const lines = [
    JSON.stringify(metadataLineOf(session)),
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
      session.createdAt = meta.created_at ?? session.createdAt;
      session.updatedAt = meta.updated_at ?? session.updatedAt;
      session.metadata = meta.metadata ?? {};
      session.lastConsolidated = meta.last_consolidated ?? 0;
      metadata.lines += 1;
      metadata.bytes += line.length + 1;
    } else if (record._type === undefined && typeof record.role === 'string') {
      session.messages.push(record as unknown as ChatMessage);
    } else if (typeof record._type === 'string') {
      session.preserved = [...(session.preserved ?? []), record];
    }
  }
  session.lastConsolidated = Math.min(session.lastConsolidated, session.messages.length);
  return { session, metadata };
}
