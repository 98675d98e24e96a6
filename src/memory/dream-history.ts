/**
 * What Dream needs from the history log: entries after a cursor, and its own cursor. The real HistoryStore
 * (src/memory/history.ts) can satisfy this interface; the file-backed version here reads nanobot's formats directly
 * (`memory/history.jsonl` lines, `memory/.dream_cursor` holding an integer) and serves tests and early wiring.
 */
import fsp from 'node:fs/promises';
import path from 'node:path';
import { writeFileAtomic } from '../util/fs.js';
import { DREAM_CURSOR_PATH } from './git.js';

export interface HistoryEntry {
  cursor: number;
  /** `YYYY-MM-DD HH:MM`, as nanobot writes it. */
  timestamp: string;
  content: string;
  session_key?: string;
}

export interface HistorySource {
  /** Up to `limit` entries with a cursor greater than `cursor`, oldest first. */
  entriesAfter(cursor: number, limit: number): Promise<HistoryEntry[]>;
  /** The cursor of the last entry Dream processed; 0 when it never ran. */
  readDreamCursor(): Promise<number>;
  writeDreamCursor(cursor: number): Promise<void>;
}

export const HISTORY_PATH = 'memory/history.jsonl';

export class JsonlHistorySource implements HistorySource {
  constructor(private readonly workspace: string) {}

  async entriesAfter(cursor: number, limit: number): Promise<HistoryEntry[]> {
    const text = await fsp.readFile(path.join(this.workspace, HISTORY_PATH), 'utf8').catch(() => '');
    const entries: HistoryEntry[] = [];
    for (const line of text.split('\n')) {
      const entry = parseEntry(line);
      if (entry && entry.cursor > cursor) entries.push(entry);
    }
    return entries.sort((a, b) => a.cursor - b.cursor).slice(0, limit);
  }

  async readDreamCursor(): Promise<number> {
    const text = await fsp.readFile(path.join(this.workspace, DREAM_CURSOR_PATH), 'utf8').catch(() => '0');
    const value = Number.parseInt(text.trim(), 10);
    return Number.isSafeInteger(value) && value > 0 ? value : 0;
  }

  async writeDreamCursor(cursor: number): Promise<void> {
    await writeFileAtomic(path.join(this.workspace, DREAM_CURSOR_PATH), `${cursor}\n`);
  }
}

/** One history line, or undefined for blank and corrupt lines (a crash can leave a partial last line). */
function parseEntry(line: string): HistoryEntry | undefined {
  if (!line.trim()) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null) return undefined;
  const { cursor, timestamp, content, session_key } = value as Record<string, unknown>;
  if (typeof cursor !== 'number' || !Number.isSafeInteger(cursor) || typeof content !== 'string') return undefined;
  return {
    cursor,
    timestamp: typeof timestamp === 'string' ? timestamp : '',
    content,
    ...(typeof session_key === 'string' ? { session_key } : {}),
  };
}
