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
const sortKey = (child: Dirent): string => (child.isDirectory() ? `${child.name}/` : child.name);
const bySortKey = (a: Dirent, b: Dirent): number => {
  const ka = sortKey(a);
  const kb = sortKey(b);
  return ka < kb ? -1 : ka > kb ? 1 : 0;
};

const notADirectory = (): number => {
  throw Object.assign(new Error('a directory is not opened as a file'), { code: 'EISDIR' });
};

/** What to search under a resolved root: the file itself, or every entry of the walked directory. */
export async function* walkSearchRoot(
  target: SearchRoot,
  options: WalkOptions = {},
  state: WalkState = { truncated: false },
): AsyncGenerator<WalkEntry> {
  if (target.isFile) {
    const name = path.basename(target.root);
    yield { relative: name, name, isDir: false, open: () => openCheckedFile(target.root, target.check).fd };
    return;
  }
  const maxEntries = options.maxEntries ?? DEFAULT_MAX_WALK_ENTRIES;
  const slicer = new TimeSlicer(options.signal);
  const root = openCheckedDirectory(target.root, target.check);
  let count = 0;

  async function* visit(dir: DirRef, relativeDir: string, inherited: IgnoreRules): AsyncGenerator<WalkEntry> {
    await slicer.tick();
    let children: Dirent[];
    try {
      children = fs.readdirSync(dir.anchor, { withFileTypes: true });
    } catch {
      return; // unreadable or vanished directory: search the rest
    }
    const gitignore = readGitignore(dir, children);
    const rules = gitignore === undefined ? inherited : inherited.withFile(relativeDir, gitignore);
    for (const child of children.sort(bySortKey)) {
      if (state.truncated) return;
      // Symlinks, sockets, FIFOs and devices are skipped: only real files and directories are searched.
      const isDir = child.isDirectory();
      if (!isDir && !child.isFile()) continue;
      if (isDir && SKIPPED_DIRS.has(child.name)) continue;
      const relative = relativeDir === '' ? child.name : `${relativeDir}/${child.name}`;
      if (rules.ignores(relative, isDir)) continue;
      if (!isDir || options.includeDirs) {
        if (count >= maxEntries) {
          state.truncated = true;
          return;
        }
        count++;
        const mtimeMs = options.withMtime ? mtimeOf(dir, child.name) : undefined;
        const open = isDir ? notADirectory : () => openChildFile(dir, child.name).fd;
        yield { relative, name: child.name, isDir, open, ...(mtimeMs === undefined ? {} : { mtimeMs }) };
      }
      if (!isDir) continue;
      let sub: DirRef;
      try {
        sub = openChildDirectory(dir, child.name, root);
      } catch {
        continue; // vanished, or swapped for a link or a file since it was listed: never followed
      }
      try {
        yield* visit(sub, relative, rules);
      } finally {
        closeDir(sub);
      }
    }
  }

  try {
    yield* visit(root, '', IgnoreRules.forAncestorsOf(target.root, target.realWorkspace));
  } finally {
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
