/** What Dream needs from the history log: entries after a cursor, and its own cursor (HistoryStore.asDreamSource). */
import type { HistoryEntry } from './history.js';

export type { HistoryEntry } from './history.js';

export interface HistorySource {
  /** Up to `limit` entries with a cursor greater than `cursor`, oldest first. */
  entriesAfter(cursor: number, limit: number): Promise<HistoryEntry[]>;
  /** The cursor of the last entry Dream processed; 0 when it never ran. */
  readDreamCursor(): Promise<number>;
  writeDreamCursor(cursor: number): Promise<void>;
}
