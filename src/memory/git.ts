/**
 * The workspace's memory repository (`<workspace>/.git`, isomorphic-git): it versions only the files Dream may change
 * (SOUL.md, USER.md, memory/MEMORY.md, skills/<name>/SKILL.md) and Dream's cursor, never history.jsonl or sessions,
 * so every memory edit can be listed, shown as a diff and undone (`/dream-log`, `/dream-restore`).
 * Operations are serialised: a scheduled Dream and a `/dream-restore` must not interleave their staging.
 */
import git from 'isomorphic-git';
import { WorkspaceFs } from '../security/workspace-fs.js';
import { countChanges, diffLines, splitLines, unifiedDiff } from './dream-line-diff.js';
import { gitFsFor } from './git-fs.js';

export const DREAM_CURSOR_PATH = 'memory/.dream_cursor';
/** Files Dream edits; a shrink of more than half needs explicit confirmation. */
export const MEMORY_FILES = ['SOUL.md', 'USER.md', 'memory/MEMORY.md'] as const;
const FIXED_TRACKED = [...MEMORY_FILES, DREAM_CURSOR_PATH];
const SKILL_FILE = /^skills\/(?:[^/]+\/)+SKILL\.md$/;
const MAX_SKILL_DEPTH = 4;

export const GIT_AUTHOR = { name: 'nanobot', email: 'nanobot@localhost' };

// Keeps `git status` in the workspace quiet: everything but the tracked files is ignored. (Cosmetic: tracked files
// are staged with force, so a nested skills/a/b/SKILL.md, hidden here, is still versioned.)
const EXCLUDE_RULES = [
  '/*',
  '!/SOUL.md',
  '!/USER.md',
  '!/memory',
  '/memory/*',
  '!/memory/MEMORY.md',
  '!/memory/.dream_cursor',
  '!/skills',
  '/skills/*/*',
  '!/skills/*/SKILL.md',
];

/** True for workspace-relative POSIX paths the memory repository versions. */
export function isTrackedMemoryPath(relative: string): boolean {
  return (FIXED_TRACKED as readonly string[]).includes(relative) || isSkillFile(relative);
}

export function isSkillFile(relative: string): boolean {
  return SKILL_FILE.test(relative) && !relative.split('/').some((part) => part === '..' || part === '.');
}

export interface FileChange {
  path: string;
  /** Content before; undefined when the file did not exist. */
  before: Uint8Array | undefined;
  after: Uint8Array | undefined;
}

export interface CommitInfo {
  sha: string;
  message: string;
  date: Date;
  parent: string | undefined;
}

export interface CommitDetail extends CommitInfo {
  changes: FileChange[];
  /** Unified diff of every changed file against the parent commit. */
  diff: string;
}

/**
 * One queue per workspace for the whole process: Dream's instance, the WebUI's and a command's each have their own
 * MemoryGit, and their staging must still never interleave.
 */
const queues = new Map<string, Promise<unknown>>();

export class MemoryGit {
  /** Every read and write of the repository and the tracked files goes through the workspace-file layer. */
  private readonly wfs: WorkspaceFs;
  private readonly gitFs: ReturnType<typeof gitFsFor>;

  constructor(readonly workspace: string) {
    this.wfs = new WorkspaceFs(workspace);
    this.gitFs = gitFsFor(this.wfs);
  }

  private get repo() {
    return { fs: this.gitFs, dir: this.workspace };
  }

  /** Creates the repository when missing and commits the current files as a baseline. */
  init(): Promise<void> {
    return this.serialised(async () => {
      if (this.wfs.lstatSync('.git') === undefined) {
        await git.init({ ...this.repo, defaultBranch: 'main' });
        this.wfs.writeFileAtomicSync('.git/info/exclude', `${EXCLUDE_RULES.join('\n')}\n`);
      }
      if ((await this.head()) === undefined) await this.commitUnlocked('memory: baseline');
    });
  }

  /** Tracked files whose content differs from HEAD. */
  pendingChanges(): Promise<FileChange[]> {
    return this.serialised(() => this.pendingUnlocked());
  }

  /** Stages and commits the tracked files that changed; undefined (no commit) when nothing did. */
  commitChanges(message: string): Promise<string | undefined> {
    return this.serialised(() => this.commitUnlocked(message));
  }

  /** Newest first. An empty repository has no log. */
  log(limit = 20): Promise<CommitInfo[]> {
    return this.serialised(async () => {
      if ((await this.head()) === undefined) return [];
      const entries = await git.log({ ...this.repo, depth: limit });
      return entries.map(({ oid, commit }) => ({
        sha: oid,
        message: commit.message.trimEnd(),
        date: new Date(commit.author.timestamp * 1000),
        parent: commit.parent[0],
      }));
    });
  }

  /** One commit with its diff against its parent. `sha` may be abbreviated (≥4 hex digits). */
  show(sha: string): Promise<CommitDetail> {
    return this.serialised(async () => {
      const info = await this.readCommitInfo(sha);
      const changes = await this.changesBetween(info.parent, info.sha);
      const diff = changes
        .map((change) => unifiedDiff(change.path, decode(change.before), decode(change.after)))
        .filter(Boolean)
        .join('\n');
      return { ...info, changes, diff };
    });
  }

  /**
   * Puts back the memory files a commit changed as they were before it (its parent), atomically, and commits that.
   * Dream's cursor is left where it is: rewinding it would make the next Dream re-apply the edits just undone.
   * Edits made since the last commit are committed first, so a restore never destroys anything unrecorded.
   */
  restore(sha: string): Promise<{ sha: string | undefined; restored: string[] }> {
    return this.serialised(async () => {
      const info = await this.readCommitInfo(sha);
      if (!info.parent)
        throw new Error(`${short(info.sha)} is the first commit; there is nothing before it to restore.`);
      await this.commitUnlocked('memory: edits made outside Dream');
      const changes = (await this.changesBetween(info.parent, info.sha)).filter((c) => c.path !== DREAM_CURSOR_PATH);
      for (const change of changes) {
        if (change.before === undefined) this.wfs.rmSync(change.path);
        else this.wfs.writeFileAtomicSync(change.path, change.before);
      }
      const restored = changes.map((change) => change.path);
      const message = `restore: ${restored.join(', ') || 'nothing'} as before ${short(info.sha)}\n\nUndoes "${firstLine(info.message)}" (${info.sha}).`;
      return { sha: await this.commitUnlocked(message), restored };
    });
  }

  // --- internals (callers hold the queue) ---

  private serialised<T>(operation: () => Promise<T>): Promise<T> {
    const key = this.wfs.root;
    const result = (queues.get(key) ?? Promise.resolve()).then(operation, operation);
    const settled = result.catch(() => undefined);
    queues.set(key, settled);
    void settled.then(() => {
      if (queues.get(key) === settled) queues.delete(key);
    });
    return result;
  }

  private async head(): Promise<string | undefined> {
    try {
      return await git.resolveRef({ ...this.repo, ref: 'HEAD' });
    } catch {
      return undefined;
    }
  }

  private async commitUnlocked(message: string): Promise<string | undefined> {
    const changes = await this.pendingUnlocked();
    if (changes.length === 0) return undefined;
    for (const change of changes) {
      // force: the exclude rules must never stop a tracked file from being staged.
      if (change.after === undefined) await git.remove({ ...this.repo, filepath: change.path });
      else await git.add({ ...this.repo, filepath: change.path, force: true });
    }
    return git.commit({ ...this.repo, message, author: GIT_AUTHOR, committer: GIT_AUTHOR });
  }

  private async pendingUnlocked(): Promise<FileChange[]> {
    const head = await this.head();
    const committed = head ? await this.trackedPathsAt(head) : [];
    const paths = [...new Set([...committed, ...(await this.trackedPathsOnDisk())])].sort();
    const changes: FileChange[] = [];
    for (const file of paths) {
      const before = head ? await this.blobAt(head, file) : undefined;
      const after = await this.wfs.readFile(file).catch(() => undefined);
      if (!sameBytes(before, after)) changes.push({ path: file, before, after: after && new Uint8Array(after) });
    }
    return changes;
  }

  private async changesBetween(parent: string | undefined, sha: string): Promise<FileChange[]> {
    const paths = new Set([...(parent ? await this.trackedPathsAt(parent) : []), ...(await this.trackedPathsAt(sha))]);
    const changes: FileChange[] = [];
    for (const file of [...paths].sort()) {
      const before = parent ? await this.blobAt(parent, file) : undefined;
      const after = await this.blobAt(sha, file);
      if (!sameBytes(before, after)) changes.push({ path: file, before, after });
    }
    return changes;
  }

  private async readCommitInfo(sha: string): Promise<CommitInfo> {
    const wanted = sha.trim().toLowerCase();
    if (!/^[0-9a-f]{4,40}$/.test(wanted)) throw new Error(`'${sha}' is not a commit id (4 to 40 hex digits).`);
    let oid: string;
    try {
      oid = await git.expandOid({ ...this.repo, oid: wanted });
    } catch {
      throw new Error(`No memory commit matches '${sha}'.`);
    }
    const { commit } = await git.readCommit({ ...this.repo, oid });
    return {
      sha: oid,
      message: commit.message.trimEnd(),
      date: new Date(commit.author.timestamp * 1000),
      parent: commit.parent[0],
    };
  }

  private async trackedPathsAt(commit: string): Promise<string[]> {
    return (await git.listFiles({ ...this.repo, ref: commit })).filter(isTrackedMemoryPath);
  }

  private async blobAt(commit: string, filepath: string): Promise<Uint8Array | undefined> {
    try {
      return (await git.readBlob({ ...this.repo, oid: commit, filepath })).blob;
    } catch {
      return undefined;
    }
  }

  private async trackedPathsOnDisk(): Promise<string[]> {
    const found: string[] = [];
    for (const file of FIXED_TRACKED) {
      const stat = await this.wfs.lstat(file).catch(() => undefined);
      if (stat?.isFile()) found.push(file);
    }
    const walk = async (relative: string, depth: number): Promise<void> => {
      if (depth > MAX_SKILL_DEPTH) return;
      const entries = await this.wfs.readdir(relative).catch(() => []);
      for (const entry of entries) {
        const child = `${relative}/${entry.name}`;
        // Symlinked directories are not followed: they could lead out of the workspace or loop.
        if (entry.kind === 'directory') await walk(child, depth + 1);
        else if (entry.kind === 'file' && isSkillFile(child)) found.push(child);
      }
    };
    await walk('skills', 0);
    return found;
  }
}

/** Per-file `+added -removed` line counts and the first changed lines, for commit messages. */
export function summariseChanges(changes: FileChange[]): { stats: string[]; samples: string[] } {
  const stats: string[] = [];
  const samples: string[] = [];
  for (const change of changes) {
    const ops = diffLines(splitLines(decode(change.before) ?? ''), splitLines(decode(change.after) ?? ''));
    const { added, removed } = countChanges(ops);
    const counts = [added ? `+${added}` : '', removed ? `-${removed}` : ''].filter(Boolean).join(' ');
    const label = change.path.startsWith('memory/') ? change.path.slice('memory/'.length) : change.path;
    stats.push(`${label} ${counts || '±0'}`);
    for (const op of ops) if (op.kind !== ' ' && op.line.trim()) samples.push(`${op.kind} ${op.line.trim()}`);
  }
  return { stats, samples };
}

export const short = (sha: string): string => sha.slice(0, 8);
export const firstLine = (text: string): string => text.split('\n', 1)[0] ?? '';

function decode(bytes: Uint8Array | undefined): string | undefined {
  return bytes === undefined ? undefined : Buffer.from(bytes).toString('utf8');
}

function sameBytes(a: Uint8Array | undefined, b: Uint8Array | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  return Buffer.from(a.buffer, a.byteOffset, a.byteLength).equals(b);
}
