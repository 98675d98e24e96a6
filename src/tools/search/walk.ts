/**
 * Directory walk for grep and find_files: honours .gitignore files, skips VCS and dependency folders,
 * and never follows symlinks, so a link inside the workspace cannot lead the search outside it.
 * Directories are read synchronously in time slices (see TimeSlicer for why).
 */
import fs, { type Dirent } from 'node:fs';
import path from 'node:path';
import { SKIPPED_DIRS } from '../filesystem/list-dir.js';
import { IgnoreRules } from './ignore-rules.js';
import { type SearchRoot, TimeSlicer } from './search-common.js';

export interface WalkEntry {
  absolute: string;
  /** Relative to the search root, with `/` separators. */
  relative: string;
  name: string;
  isDir: boolean;
}

export interface WalkOptions {
  /** Also return directories (the root itself is never returned). */
  includeDirs?: boolean;
  /** Directory beyond which ancestor .gitignore files are not read (the real workspace). */
  ignoreStopAt?: string;
  /** Stop collecting after this many entries. */
  maxEntries?: number;
  signal?: AbortSignal;
}

export interface WalkResult {
  /** Sorted by `relative`. */
  entries: WalkEntry[];
  /** True when maxEntries cut the walk short. */
  truncated: boolean;
}

/** Enough for any project tree; a walk of a whole home directory stops here rather than exhaust memory. */
export const DEFAULT_MAX_WALK_ENTRIES = 200_000;

interface PendingDir {
  absolute: string;
  relative: string;
  rules: IgnoreRules;
}

const byRelative = (a: WalkEntry, b: WalkEntry): number =>
  a.relative < b.relative ? -1 : a.relative > b.relative ? 1 : 0;

function readGitignore(dir: string, children: Dirent[]): string | undefined {
  if (!children.some((child) => child.name === '.gitignore' && child.isFile())) return undefined;
  try {
    return fs.readFileSync(path.join(dir, '.gitignore'), 'utf8');
  } catch {
    return undefined;
  }
}

export async function walkTree(root: string, options: WalkOptions = {}): Promise<WalkResult> {
  const maxEntries = options.maxEntries ?? DEFAULT_MAX_WALK_ENTRIES;
  const slicer = new TimeSlicer(options.signal);
  const entries: WalkEntry[] = [];
  const pending: PendingDir[] = [
    { absolute: root, relative: '', rules: await IgnoreRules.forAncestorsOf(root, options.ignoreStopAt) },
  ];
  for (let dir = pending.pop(); dir; dir = pending.pop()) {
    await slicer.tick();
    let children: Dirent[];
    try {
      children = fs.readdirSync(dir.absolute, { withFileTypes: true });
    } catch {
      continue; // unreadable or vanished directory: search the rest
    }
    const gitignore = readGitignore(dir.absolute, children);
    const rules = gitignore === undefined ? dir.rules : dir.rules.withFile(dir.relative, gitignore);
    for (const child of children) {
      // Symlinks, sockets, FIFOs and devices are skipped: only real files and directories are searched.
      const isDir = child.isDirectory();
      if (!isDir && !child.isFile()) continue;
      if (isDir && SKIPPED_DIRS.has(child.name)) continue;
      const relative = dir.relative === '' ? child.name : `${dir.relative}/${child.name}`;
      if (rules.ignores(relative, isDir)) continue;
      const absolute = `${dir.absolute}${path.sep}${child.name}`;
      if (isDir) pending.push({ absolute, relative, rules });
      if (isDir && !options.includeDirs) continue;
      if (entries.length >= maxEntries) return { entries: entries.sort(byRelative), truncated: true };
      entries.push({ absolute, relative, name: child.name, isDir });
    }
  }
  return { entries: entries.sort(byRelative), truncated: false };
}

/** What to search under a resolved root: the file itself, or every entry of the walked directory. */
export async function entriesUnder(
  target: SearchRoot,
  options: Omit<WalkOptions, 'ignoreStopAt'> = {},
): Promise<WalkResult> {
  if (!target.isFile) return walkTree(target.root, { ...options, ignoreStopAt: target.realWorkspace });
  const name = path.basename(target.root);
  return { entries: [{ absolute: target.root, relative: name, name, isDir: false }], truncated: false };
}
