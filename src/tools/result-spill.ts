/**
 * Oversized tool results go to disk instead of the prompt: the model gets a preview and a path it can page
 * through with read_file, so nothing is lost and one huge result cannot blow the context window.
 */
import { randomBytes } from 'node:crypto';
import { join, relative } from 'node:path';
import { WorkspaceFs } from '../security/workspace-fs.js';

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

/**
 * The directory is under the workspace, where the sandboxed shell can plant links: every write, listing and delete
 * goes through the workspace-file layer, so a `tool-results` link out is refused and the prune never leaves it.
 */
export class ResultSpill {
  private readonly wfs: WorkspaceFs;
  private readonly dir: string;

  constructor(private readonly options: ResultSpillOptions) {
    this.wfs = new WorkspaceFs(options.relativeTo);
    this.dir = relative(options.relativeTo, options.dir);
  }

  /** Saves `text` and returns what the model should see instead; undefined if the file could not be written. */
  async spill(text: string, toolName: string): Promise<string | undefined> {
    const now = this.options.now?.() ?? new Date();
    const stamp = now.toISOString().replace(/[:.]/g, '-');
    const shown = join(this.dir, `${stamp}-${toolName}-${randomBytes(3).toString('hex')}.txt`);
    try {
      await this.wfs.writeFileAtomic(shown, text, { mode: 0o600, dirMode: 0o700 });
    } catch {
      return undefined;
    }
    void this.prune(now.getTime());
    const lines = text.split('\n').length;
    return (
      `${text.slice(0, PREVIEW_CHARS)}\n\n[Result too long for the context: ${text.length} characters, ${lines} lines. ` +
      `The full result is saved at ${shown} — read it with read_file (use offset/limit to page through it) or grep.]`
    );
  }

  private async prune(nowMs: number): Promise<void> {
    try {
      for (const entry of await this.wfs.readdir(this.dir)) {
        if (entry.kind !== 'file') continue;
        const rel = join(this.dir, entry.name);
        const stat = await this.wfs.lstat(rel);
        if (stat?.isFile() && nowMs - stat.mtimeMs > KEEP_MS) await this.wfs.unlink(rel);
      }
    } catch {
      // Pruning is housekeeping; a failure here must not affect the tool call.
    }
  }
}
