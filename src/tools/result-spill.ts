/**
 * Oversized tool results go to disk instead of the prompt: the model gets a preview and a path it can page
 * through with read_file, so nothing is lost and one huge result cannot blow the context window.
 */
import { randomBytes } from 'node:crypto';
import { readdir, rm, stat } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { writeFileAtomic } from '../util/fs.js';

export const PREVIEW_CHARS = 1_200;
/** Spilled results older than this are deleted when a new one is written. */
const KEEP_MS = 7 * 24 * 3600 * 1000;

export interface ResultSpillOptions {
  /** Directory for the files, e.g. `<workspace>/.nanobot/tool-results`. */
  dir: string;
  /** The model sees paths relative to this directory (the workspace). */
  relativeTo: string;
  now?: () => Date;
}

export class ResultSpill {
  constructor(private readonly options: ResultSpillOptions) {}

  /** Saves `text` and returns what the model should see instead; undefined if the file could not be written. */
  async spill(text: string, toolName: string): Promise<string | undefined> {
    const now = this.options.now?.() ?? new Date();
    const stamp = now.toISOString().replace(/[:.]/g, '-');
    const file = join(this.options.dir, `${stamp}-${toolName}-${randomBytes(3).toString('hex')}.txt`);
    try {
      await writeFileAtomic(file, text);
    } catch {
      return undefined;
    }
    void this.prune(now.getTime());
    const shown = relative(this.options.relativeTo, file);
    const lines = text.split('\n').length;
    return (
      `${text.slice(0, PREVIEW_CHARS)}\n\n[Result too long for the context: ${text.length} characters, ${lines} lines. ` +
      `The full result is saved at ${shown} — read it with read_file (use offset/limit to page through it) or grep.]`
    );
  }

  private async prune(nowMs: number): Promise<void> {
    try {
      for (const name of await readdir(this.options.dir)) {
        const path = join(this.options.dir, name);
        if (nowMs - (await stat(path)).mtimeMs > KEEP_MS) await rm(path, { force: true });
      }
    } catch {
      // Pruning is housekeeping; a failure here must not affect the tool call.
    }
  }
}
