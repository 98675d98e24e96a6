/**
 * Directory walk for grep and find_files: honours .gitignore files, skips VCS and dependency folders,
 * and never follows symlinks, so a link inside the workspace cannot lead the search outside it.
 *
 * The walk is fd-anchored: the root is opened, then checked (its real path must be the one the policy allowed),
 * and every subdirectory and file is opened relative to its already-opened parent with O_NOFOLLOW, so a
 * directory swapped for a link between the listing and the open is skipped, never followed. Only the chain of
 * directories being visited is open at a time. Entries come in sorted path order, so grep can stop as soon as
 * its page is full; directories are read synchronously in time slices (see TimeSlicer for why).
 */
import fs, { type Dirent } from 'node:fs';
import path from 'node:path';
import { openCheckedFile } from '../../security/checked-open.js';
import {
  closeDir,
  type DirRef,
  openCheckedDirectory,
  openChildDirectory,
  openChildFile,
} from '../../security/checked-read.js';
import { entryPath } from '../../security/workspace-resolve.js';
import { SKIPPED_DIRS } from '../filesystem/list-dir.js';
import { IgnoreRules } from './ignore-rules.js';
import { type SearchRoot, TimeSlicer } from './search-common.js';

export interface WalkEntry {
  /** Relative to the search root, with `/` separators. */
  relative: string;
  name: string;
  isDir: boolean;
  /** Modification time, when the walk was asked for it (`withMtime`). */
  mtimeMs?: number;
  /**
   * Opens the file read-only (a regular file, never through a link) and returns its fd; the caller closes it.
   * Only valid while the walk is paused at this entry.
   */
  open(): number;
}

export interface WalkOptions {
  /** Also return directories (the root itself is never returned). */
  includeDirs?: boolean;
  /** Stop after this many entries. */
  maxEntries?: number;
  /** Record each entry's modification time (an lstat through its opened parent). */
  withMtime?: boolean;
  signal?: AbortSignal;
}

export interface WalkState {
  /** Set when maxEntries cut the walk short. */
  truncated: boolean;
}

/** Enough for any project tree; a walk of a whole home directory stops here rather than exhaust memory. */
export const DEFAULT_MAX_WALK_ENTRIES = 200_000;
const MAX_GITIGNORE_BYTES = 1024 * 1024;

function readGitignore(dir: DirRef, children: Dirent[]): string | undefined {
  if (!children.some((child) => child.name === '.gitignore' && child.isFile())) return undefined;
  try {
    const { fd, stats } = openChildFile(dir, '.gitignore');
    try {
      return stats.size > MAX_GITIGNORE_BYTES ? undefined : fs.readFileSync(fd, 'utf8');
    } finally {
      fs.closeSync(fd);
    }
  } catch {
    return undefined;
  }
}

// A directory sorts as `name/`, so a depth-first walk yields files in the order of their sorted relative paths.
interface Child {
  dirent: Dirent;
  key: string;
}
const byKey = (a: Child, b: Child): number => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0);

/** One directory being walked: its anchor (kept open while its subtree is walked), rules and sorted children. */
interface Frame {
  dir: DirRef;
  relativeDir: string;
  rules: IgnoreRules;
  children: Child[];
  next: number;
}

function enter(dir: DirRef, relativeDir: string, inherited: IgnoreRules): Frame | undefined {
  let dirents: Dirent[];
  try {
    dirents = fs.readdirSync(dir.anchor, { withFileTypes: true });
  } catch {
    return undefined; // unreadable or vanished directory: search the rest
  }
  const gitignore = readGitignore(dir, dirents);
  const rules = gitignore === undefined ? inherited : inherited.withFile(relativeDir, gitignore);
  const children = dirents.map((dirent) => ({ dirent, key: dirent.isDirectory() ? `${dirent.name}/` : dirent.name }));
  return { dir, relativeDir, rules, children: children.sort(byKey), next: 0 };
}

const notADirectory = (): number => {
  throw Object.assign(new Error('a directory is not opened as a file'), { code: 'EISDIR' });
};

/** Entries are handed over in batches (one await per batch, not per entry); a batch is flushed before a close. */
const BATCH = 256;

/**
 * What to search under a resolved root: the file itself, or every entry of the walked directory, in sorted path
 * order and in batches. An entry's `open` is valid until the next batch is asked for.
 */
export async function* walkSearchRoot(
  target: SearchRoot,
  options: WalkOptions = {},
  state: WalkState = { truncated: false },
): AsyncGenerator<WalkEntry[]> {
  if (target.isFile) {
    const name = path.basename(target.root);
    yield [{ relative: name, name, isDir: false, open: () => openCheckedFile(target.root, target.check).fd }];
    return;
  }
  const maxEntries = options.maxEntries ?? DEFAULT_MAX_WALK_ENTRIES;
  const slicer = new TimeSlicer(options.signal);
  const root = openCheckedDirectory(target.root, target.check);
  const stack: Frame[] = [];
  const batch: WalkEntry[] = [];
  let count = 0;
  try {
    const top = enter(root, '', IgnoreRules.forAncestorsOf(target.root, target.realWorkspace));
    if (top) stack.push(top);
    for (let frame = stack.at(-1); frame; frame = stack.at(-1)) {
      const child = frame.children[frame.next++];
      if (child === undefined) {
        if (batch.length > 0) yield batch.splice(0);
        stack.pop();
        if (frame.dir !== root) closeDir(frame.dir);
        continue;
      }
      // Symlinks, sockets, FIFOs and devices are skipped: only real files and directories are searched.
      const { dirent } = child;
      const isDir = dirent.isDirectory();
      if (!isDir && !dirent.isFile()) continue;
      if (isDir && SKIPPED_DIRS.has(dirent.name)) continue;
      const relative = frame.relativeDir === '' ? dirent.name : `${frame.relativeDir}/${dirent.name}`;
      if (frame.rules.ignores(relative, isDir)) continue;
      if (!isDir || options.includeDirs) {
        if (count >= maxEntries) {
          state.truncated = true;
          if (batch.length > 0) yield batch;
          return;
        }
        count++;
        const parent = frame.dir;
        const mtimeMs = options.withMtime ? mtimeOf(parent, dirent.name) : undefined;
        const open = isDir ? notADirectory : () => openChildFile(parent, dirent.name).fd;
        batch.push({ relative, name: dirent.name, isDir, open, ...(mtimeMs === undefined ? {} : { mtimeMs }) });
        if (batch.length >= BATCH) yield batch.splice(0);
      }
      if (!isDir) continue;
      await slicer.tick();
      let sub: DirRef;
      try {
        sub = openChildDirectory(frame.dir, dirent.name, root);
      } catch {
        continue; // vanished, or swapped for a link or a file since it was listed: never followed
      }
      const next = enter(sub, relative, frame.rules);
      if (next) stack.push(next);
      else closeDir(sub);
    }
  } finally {
    for (const frame of stack) if (frame.dir !== root) closeDir(frame.dir);
    closeDir(root);
  }
}

function mtimeOf(dir: DirRef, name: string): number {
  try {
    return fs.lstatSync(entryPath(dir, name)).mtimeMs;
  } catch {
    return 0;
  }
}
