/**
 * How far each session has been read: MoChat numbers a session's events (`seq`), and a subscribe or long-poll with
 * the last number seen returns only what came after it, so nothing is read twice or missed across reconnects and
 * restarts. Kept in upstream's file and format, `<dataDir>/mochat/session_cursors.json`
 * (`{schemaVersion: 1, updatedAt, cursors: {sessionId: seq}}`), written atomically half a second after a change.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { errorMessage } from '../../util/errors.js';
import { writeFileAtomic } from '../../util/fs.js';
import type { Logger } from '../../util/log.js';
import { isObject } from './events.js';

const SAVE_DEBOUNCE_MS = 500;

export class SessionCursors {
  private readonly cursors = new Map<string, number>();
  private readonly path: string;
  private timer: NodeJS.Timeout | undefined;
  private saving: Promise<void> = Promise.resolve();
  private loaded = false;

  constructor(
    dataDir: string,
    private readonly log: Logger,
  ) {
    this.path = join(dataDir, 'mochat', 'session_cursors.json');
  }

  /** Reads the file once; a missing or broken file leaves every session without a cursor. */
  async load(): Promise<void> {
    if (this.loaded) return;
    this.loaded = true;
    let text: string;
    try {
      text = await readFile(this.path, 'utf8');
    } catch {
      return;
    }
    try {
      const data: unknown = JSON.parse(text);
      const cursors = isObject(data) ? data.cursors : undefined;
      if (!isObject(cursors)) return;
      for (const [id, cursor] of Object.entries(cursors)) {
        if (typeof cursor === 'number' && Number.isSafeInteger(cursor) && cursor >= 0) this.cursors.set(id, cursor);
      }
    } catch (err) {
      this.log.warn(`could not read ${this.path}: ${errorMessage(err)}`);
    }
  }

  has(sessionId: string): boolean {
    return this.cursors.has(sessionId);
  }

  get(sessionId: string): number {
    return this.cursors.get(sessionId) ?? 0;
  }

  all(): Record<string, number> {
    return Object.fromEntries(this.cursors);
  }

  /** Moves a session's cursor forward (never back) and saves soon. */
  mark(sessionId: string, cursor: number): void {
    if (cursor < 0 || cursor < this.get(sessionId)) return;
    if (this.cursors.get(sessionId) === cursor) return;
    this.cursors.set(sessionId, cursor);
    if (this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.save().catch(() => undefined);
    }, SAVE_DEBOUNCE_MS);
    this.timer.unref();
  }

  /** Writes now (a pending debounced save is folded in). */
  async flush(): Promise<void> {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = undefined;
      await this.save();
    }
    await this.saving;
  }

  private save(): Promise<void> {
    const body = `${JSON.stringify({ schemaVersion: 1, updatedAt: new Date().toISOString(), cursors: this.all() }, null, 2)}\n`;
    this.saving = this.saving
      .then(() => writeFileAtomic(this.path, body, 0o600))
      .catch((err: unknown) => this.log.warn(`could not save ${this.path}: ${errorMessage(err)}`));
    return this.saving;
  }
}
