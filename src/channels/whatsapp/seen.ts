/**
 * Message ids already handed to the agent, kept on disk (`<dataDir>/whatsapp/seen-ids.json`, 0600): after a
 * reconnect or a restart the server delivers what arrived meanwhile, and may deliver again what this device had
 * not acknowledged yet; each message must be answered once, across restarts too.
 */
import { readFile } from 'node:fs/promises';
import { z } from 'zod';
import { writeFileAtomic } from '../../util/fs.js';

const SeenFile = z.object({ ids: z.array(z.string()) });
const CAPACITY = 5_000;

export class SeenIds {
  private ids = new Set<string>();
  private saving: Promise<void> = Promise.resolve();

  private constructor(private readonly path: string) {}

  static async open(path: string): Promise<SeenIds> {
    const seen = new SeenIds(path);
    try {
      const parsed = SeenFile.safeParse(JSON.parse(await readFile(path, 'utf8')));
      if (parsed.success) seen.ids = new Set(parsed.data.ids.slice(-CAPACITY));
    } catch {
      // none yet, or unreadable: start empty (the framework still drops redeliveries within this run)
    }
    return seen;
  }

  has(id: string): boolean {
    return this.ids.has(id);
  }

  /** Remembers `id` and writes the file (writes are queued, so the last one wins). */
  add(id: string): Promise<void> {
    this.ids.add(id);
    while (this.ids.size > CAPACITY) {
      const oldest = this.ids.values().next().value;
      if (oldest === undefined) break;
      this.ids.delete(oldest);
    }
    const text = JSON.stringify({ ids: [...this.ids] });
    this.saving = this.saving.then(
      () => writeFileAtomic(this.path, text, 0o600),
      () => writeFileAtomic(this.path, text, 0o600),
    );
    return this.saving;
  }
}
