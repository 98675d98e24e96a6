/** Reply texts for `/dream`, `/dream-log [sha]` and `/dream-restore [sha]`; the command router calls these. */
import { type Dream, type DreamRunOptions, formatDreamReport } from './dream.js';
import { firstLine, type MemoryGit, short } from './git.js';

const LOG_LIMIT = 10;
/** Diffs longer than this are cut in chat replies. */
const MAX_DIFF_CHARS = 6_000;

export async function dreamCommand(dream: Dream, run: DreamRunOptions): Promise<string> {
  try {
    return formatDreamReport(await dream.run(run));
  } catch (error) {
    return `Dream failed: ${messageOf(error)}`;
  }
}

/** Without a sha: the recent memory commits. With one: that commit's diff. */
export async function dreamLogCommand(git: MemoryGit, sha?: string): Promise<string> {
  try {
    if (!sha?.trim()) {
      const commits = await git.log(LOG_LIMIT);
      if (commits.length === 0) return 'No memory commits yet. Dream commits its changes after each run.';
      const lines = commits.map((c) => `${short(c.sha)}  ${formatDate(c.date)}  ${firstLine(c.message)}`);
      return `Recent memory commits (newest first):\n${lines.join('\n')}\n\nShow one with /dream-log <sha>.`;
    }
    const detail = await git.show(sha);
    const diff =
      detail.diff.length > MAX_DIFF_CHARS
        ? `${detail.diff.slice(0, MAX_DIFF_CHARS)}\n[… diff cut at ${MAX_DIFF_CHARS} of ${detail.diff.length} characters]`
        : detail.diff || '(no changes to memory files)';
    return `commit ${detail.sha}\nDate: ${formatDate(detail.date)}\n\n${detail.message}\n\n${diff}`;
  } catch (error) {
    return messageOf(error);
  }
}

/** Without a sha: commits that can be undone. With one: put the files back as they were before it. */
export async function dreamRestoreCommand(git: MemoryGit, sha?: string): Promise<string> {
  try {
    if (!sha?.trim()) {
      const candidates = (await git.log(LOG_LIMIT)).filter((commit) => commit.parent !== undefined);
      if (candidates.length === 0) return 'There is no memory commit to undo yet.';
      const lines = candidates.map((c) => `${short(c.sha)}  ${formatDate(c.date)}  ${firstLine(c.message)}`);
      return (
        `Commits you can undo (newest first):\n${lines.join('\n')}\n\n` +
        '/dream-restore <sha> puts the files that commit changed back as they were before it (see /dream-log <sha>).'
      );
    }
    const { sha: restoreSha, restored } = await git.restore(sha);
    if (!restoreSha) return `The files ${short(sha)} changed are already as they were before it; nothing to restore.`;
    return `Restored ${restored.join(', ')} as before ${short(sha)}. Commit ${short(restoreSha)} records the restore.`;
  } catch (error) {
    return messageOf(error);
  }
}

const formatDate = (date: Date): string => date.toISOString().slice(0, 16).replace('T', ' ');
const messageOf = (error: unknown): string => (error instanceof Error ? error.message : String(error));
