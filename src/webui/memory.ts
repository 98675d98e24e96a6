/**
 * Settings › Memory (nanobot has no such API; these are ours, in its style):
 *   GET /api/webui/memory                 SOUL.md, USER.md, memory/MEMORY.md as they are on disk (read-only)
 *   GET /api/webui/memory/log             the memory repository's commits, newest first (what /dream-log lists)
 *   GET /api/webui/memory/log/<sha>       one commit: message, changed files with line counts, unified diff
 *   GET /api/webui/memory/history?q=      memory/history.jsonl, newest first, filtered by a plain substring
 *   webui_request memory.restore {sha}    puts back what that commit changed (what /dream-restore does)
 * Every read goes through the workspace-file layer (MemoryGit, HistoryStore, WorkspaceFs): a memory file that is a
 * link out of the workspace is reported as refused, never read.
 */
import { z } from 'zod';
import { countChanges, diffLines, splitLines } from '../memory/dream-line-diff.js';
import { type CommitInfo, firstLine, MEMORY_FILES, MemoryGit } from '../memory/git.js';
import { type HistoryEntry, HistoryStore } from '../memory/history.js';
import { WorkspaceFs, WorkspaceFsError } from '../security/workspace-fs.js';
import { type WebuiApiContext, WebuiApiError, type WebuiApiModule } from './api.js';
import { configOf } from './config-tree.js';

/** A memory file larger than this is shown cut (the agent's prompt never holds more than that either). */
const MAX_FILE_BYTES = 256 * 1024;
const MAX_DIFF_CHARS = 200_000;
const LOG_LIMIT = 50;
const HISTORY_LIMIT = 50;
const MAX_QUERY_CHARS = 200;
const MAX_ENTRY_CHARS = 4_000;
const SHA = /^[0-9a-f]{4,40}$/;

const workspaceOf = (context: WebuiApiContext): string => configOf(context.backend).loaded().workspace;

interface MemoryFileView {
  path: string;
  exists: boolean;
  content: string;
  size: number;
  truncated: boolean;
  /** Why the file was not read (a link out of the workspace, a FIFO…). */
  error: string | null;
}

function readMemoryFile(wfs: WorkspaceFs, path: string): MemoryFileView {
  const empty = { path, exists: false, content: '', size: 0, truncated: false, error: null };
  try {
    const file = wfs.openFile(path);
    try {
      const size = file.size;
      const content = file.read(Math.min(size, MAX_FILE_BYTES), 0).toString('utf8');
      return { path, exists: true, content, size, truncated: size > MAX_FILE_BYTES, error: null };
    } finally {
      file.close();
    }
  } catch (error) {
    if (error instanceof WorkspaceFsError) return { ...empty, error: error.message };
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return empty;
    throw error;
  }
}

const commitRow = (commit: CommitInfo) => ({
  sha: commit.sha,
  short_sha: commit.sha.slice(0, 8),
  title: firstLine(commit.message),
  message: commit.message,
  date: commit.date.toISOString(),
  parent: commit.parent ?? null,
  can_restore: commit.parent !== undefined,
});

/** The `:sha` segment or the payload's `sha`: 4 to 40 hex digits, nothing else reaches git. */
function commitId(raw: unknown): string {
  const sha = typeof raw === 'string' ? raw.trim().toLowerCase() : '';
  if (!SHA.test(sha)) throw new WebuiApiError(400, 'sha must be a commit id: 4 to 40 hex digits (see the Dream log)');
  return sha;
}

/** MemoryGit's "no such commit" is a 404; anything else it refuses is the caller's conflict. */
async function orRefusal<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof WebuiApiError || error instanceof WorkspaceFsError) throw error;
    const message = error instanceof Error ? error.message : String(error);
    if (/^No memory commit/.test(message)) throw new WebuiApiError(404, message);
    if (/first commit/.test(message)) throw new WebuiApiError(409, message);
    throw error;
  }
}

function historyRow(entry: HistoryEntry) {
  const cut = entry.content.length > MAX_ENTRY_CHARS;
  return {
    cursor: entry.cursor,
    timestamp: entry.timestamp,
    content: cut ? `${entry.content.slice(0, MAX_ENTRY_CHARS)}…` : entry.content,
    truncated: cut,
    session_key: entry.session_key ?? null,
  };
}

const restorePayload = z.object({ sha: z.string().max(64) });

export const memoryModule: WebuiApiModule = {
  routes: {
    'webui/memory': async (context) => {
      const workspace = workspaceOf(context);
      const wfs = new WorkspaceFs(workspace);
      return { workspace, files: MEMORY_FILES.map((path) => readMemoryFile(wfs, path)) };
    },
    'webui/memory/log': async (context) => {
      const commits = await new MemoryGit(workspaceOf(context)).log(LOG_LIMIT);
      return { commits: commits.map(commitRow) };
    },
    'webui/memory/log/:sha': async (context, { segments }) => {
      const sha = commitId(segments.sha);
      const detail = await orRefusal(() => new MemoryGit(workspaceOf(context)).show(sha));
      const files = detail.changes.map((change) => {
        const text = (bytes: Uint8Array | undefined) => (bytes ? Buffer.from(bytes).toString('utf8') : '');
        const { added, removed } = countChanges(
          diffLines(splitLines(text(change.before)), splitLines(text(change.after))),
        );
        const status = change.before === undefined ? 'added' : change.after === undefined ? 'deleted' : 'modified';
        return { path: change.path, status, added, removed };
      });
      const cut = detail.diff.length > MAX_DIFF_CHARS;
      return {
        ...commitRow(detail),
        files,
        diff: cut ? detail.diff.slice(0, MAX_DIFF_CHARS) : detail.diff,
        diff_truncated: cut,
      };
    },
    'webui/memory/history': async (context, { query }) => {
      const q = (query.get('q') ?? '').trim();
      if (q.length > MAX_QUERY_CHARS) {
        throw new WebuiApiError(400, `q is too long (${q.length} characters; at most ${MAX_QUERY_CHARS})`);
      }
      const entries = new HistoryStore(workspaceOf(context)).readAll();
      const needle = q.toLocaleLowerCase();
      const matched = needle ? entries.filter((entry) => entry.content.toLocaleLowerCase().includes(needle)) : entries;
      return {
        query: q,
        total: entries.length,
        matched: matched.length,
        entries: matched.slice(-HISTORY_LIMIT).reverse().map(historyRow),
      };
    },
  },
  actions: {
    'memory.restore': async (context, payload) => {
      const parsed = restorePayload.safeParse(payload);
      if (!parsed.success) throw new WebuiApiError(400, 'sha must be a commit id: 4 to 40 hex digits');
      const sha = commitId(parsed.data.sha);
      const git = new MemoryGit(workspaceOf(context));
      const { sha: restoreSha, restored } = await orRefusal(() => git.restore(sha));
      return { restored, commit: restoreSha ?? null };
    },
  },
};
