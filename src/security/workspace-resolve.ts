/**
 * Resolution beneath a root that never follows a symlink out of it. The sandboxed shell can replace any path in
 * the workspace with a symlink, FIFO or swapped directory; nanobot's own (unsandboxed) code must still only ever
 * touch what lies inside. Each component is looked at with lstat through an anchor bound to an already-opened
 * directory (`/proc/self/fd/N` on Linux) and opened with O_NOFOLLOW, so a component swapped for a link between
 * the look and the open fails (ELOOP/ENOTDIR) instead of being followed. Symlinks are resolved here, by us: a
 * link whose target stays inside the root is followed, one that leaves it is an escape.
 *
 * Without `/proc/self/fd` (macOS, BSD) the anchor is the verified real path: the check-to-use window is narrowed
 * to one syscall per component, not closed.
 */
import fs from 'node:fs';
import path from 'node:path';

const FD_DIR = '/proc/self/fd';
const MAX_LINK_HOPS = 40;
const SEPARATORS = process.platform === 'win32' ? /[/\\]+/ : /\/+/;
const { O_RDONLY, O_NOFOLLOW = 0, O_DIRECTORY = 0 } = fs.constants;

/** Base class of every refusal by the workspace-file layer. */
export class WorkspaceFsError extends Error {
  constructor(
    message: string,
    readonly path: string,
    readonly code: string,
  ) {
    super(message);
    this.name = new.target.name;
  }
}

/** The path (or a symlink in it) leads outside the workspace, or changed while it was being opened. */
export class WorkspaceEscapeError extends WorkspaceFsError {
  constructor(
    filePath: string,
    readonly resolvesTo: string | undefined,
    reason?: string,
  ) {
    const detail =
      reason ?? (resolvesTo ? `it resolves to ${resolvesTo}, outside the workspace` : 'it leaves the workspace');
    super(`refusing ${filePath}: ${detail}`, filePath, 'EWORKSPACEESCAPE');
  }
}

/** The path exists but is not the kind of entry asked for (a FIFO, device or socket where a file was expected). */
export class WorkspaceFileTypeError extends WorkspaceFsError {
  constructor(filePath: string, found: string, wanted: string) {
    super(`refusing ${filePath}: it is a ${found}, not a ${wanted}`, filePath, 'EWORKSPACEFILETYPE');
  }
}

export function errorCode(error: unknown): string | undefined {
  return error instanceof Error && 'code' in error ? String((error as { code: unknown }).code) : undefined;
}

/** True for "no such file" (ENOENT, or ENOTDIR when an ancestor is a plain file). */
export function isNotFound(error: unknown): boolean {
  const code = errorCode(error);
  return code === 'ENOENT' || code === 'ENOTDIR';
}

let fdAnchors: boolean | undefined;
export function canAnchorByFd(): boolean {
  fdAnchors ??= process.platform === 'linux' && fs.existsSync(FD_DIR);
  return fdAnchors;
}

/** Tests run the non-Linux fallback (real-path anchors) on Linux with `false`; `undefined` restores detection. */
export function useFdAnchorsForTests(value: boolean | undefined): void {
  fdAnchors = value;
}

/** Names what an lstat found, for error messages. */
export function kindOf(stats: fs.Stats): string {
  if (stats.isFile()) return 'regular file';
  if (stats.isDirectory()) return 'directory';
  if (stats.isSymbolicLink()) return 'symbolic link';
  if (stats.isFIFO()) return 'FIFO';
  if (stats.isSocket()) return 'socket';
  return 'device';
}

/** An opened, verified directory. `anchor` names it for every operation on its entries. */
export interface DirRef {
  fd: number | undefined;
  anchor: string;
  real: string;
}

export function closeDir(dir: DirRef): void {
  if (dir.fd !== undefined) {
    try {
      fs.closeSync(dir.fd);
    } catch {
      // Already closed.
    }
  }
}

export function entryPath(dir: DirRef, name: string): string {
  return canAnchorByFd() ? `${dir.anchor}/${name}` : path.join(dir.anchor, name);
}

/** Opens a directory (following links only when `follow`) and records where it really is. */
export function openDirRef(dirPath: string, follow: boolean, shownAs: string): DirRef {
  if (!canAnchorByFd()) {
    const stats = fs.lstatSync(dirPath);
    if (!follow && stats.isSymbolicLink()) throw new WorkspaceEscapeError(shownAs, undefined, 'it changed into a link');
    const real = fs.realpathSync.native(dirPath);
    if (!fs.statSync(real).isDirectory()) throw new WorkspaceFileTypeError(shownAs, kindOf(stats), 'directory');
    return { fd: undefined, anchor: real, real };
  }
  let fd: number;
  try {
    fd = fs.openSync(dirPath, O_RDONLY | O_DIRECTORY | (follow ? 0 : O_NOFOLLOW));
  } catch (error) {
    // Swapped for a link (ELOOP) or a file (ENOTDIR) since we looked: never follow it.
    if (errorCode(error) === 'ELOOP') throw new WorkspaceEscapeError(shownAs, undefined, 'it changed into a link');
    throw error;
  }
  const anchor = `${FD_DIR}/${fd}`;
  return { fd, anchor, real: fs.readlinkSync(anchor) };
}

/** A root (the workspace) opened for one operation; `real` is its real path. */
export interface Root extends DirRef {
  shown: string;
}

export function openRoot(root: string): Root {
  return { ...openDirRef(root, true, root), shown: root };
}

/** Splits a workspace-relative (or absolute-inside-root) path into components; refuses anything that leaves. */
export function componentsOf(root: Root, input: string): string[] {
  if (typeof input !== 'string' || input.includes('\0')) {
    throw new WorkspaceEscapeError(String(input), undefined, 'the path is not a valid string');
  }
  let rel = input;
  if (path.isAbsolute(input)) {
    const inside = [root.shown, root.real].map((r) => path.relative(r, input)).find((r) => !escapes(r));
    if (inside === undefined) throw new WorkspaceEscapeError(input, input);
    rel = inside;
  }
  const parts = rel.split(SEPARATORS).filter((p) => p !== '' && p !== '.');
  // A plain `..` walk is checked by the resolver as it goes, so `a/../b` works and `../x` is refused.
  return parts;
}

/** True when real path `p` lies inside the root's real path. */
export function isInsideRoot(root: DirRef, p: string): boolean {
  return !escapes(path.relative(root.real, p));
}

function escapes(rel: string): boolean {
  return rel === '..' || rel.startsWith(`..${path.sep}`) || path.isAbsolute(rel);
}

export interface Resolved {
  /** Verified directory holding the final entry (caller closes it with `closeDir`). */
  parent: DirRef;
  /** Final component (never a symlink when resolved with `followLast`, unless it changed since). */
  name: string;
  /** lstat of the final entry, or undefined when it does not exist. */
  stats: fs.Stats | undefined;
  /** Workspace-relative path actually reached, for messages. */
  reached: string;
}

export interface ResolveOptions {
  /** Follow a final symlink whose target stays inside (reads, appends). Otherwise the link itself is the entry. */
  followLast: boolean;
  /** Create missing directories on the way, with this mode. */
  createDirs?: number;
}

/**
 * Walks `input` beneath the root. Intermediate directories are opened one at a time with O_NOFOLLOW; symlinks on
 * the way are resolved against the directory stack so `..` can never climb above the root.
 */
export function resolveBeneath(root: Root, input: string, options: ResolveOptions): Resolved {
  const queue = componentsOf(root, input);
  const stack: DirRef[] = [root];
  const names: string[] = [];
  let hops = 0;
  let linkedTo: string | undefined;
  const fail = (resolvesTo: string | undefined, reason?: string): never => {
    throw new WorkspaceEscapeError(path.join(root.shown, input), resolvesTo, reason);
  };
  try {
    if (queue.length === 0) fail(undefined, 'the workspace root itself is not a file');
    for (;;) {
      const name = queue.shift() as string;
      const current = stack[stack.length - 1] as DirRef;
      if (name === '..') {
        if (stack.length === 1) fail(linkedTo ?? path.resolve(root.real, ...names, '..'));
        closeDir(stack.pop() as DirRef);
        names.pop();
        if (queue.length === 0) {
          // `x/..` as the final component: the entry is the directory we climbed to, named in its parent.
          queue.push(names.pop() ?? fail(undefined, 'the workspace root itself is not a file'));
          closeDir(stack.pop() as DirRef);
        }
        continue;
      }
      const isLast = queue.length === 0;
      let stats: fs.Stats | undefined;
      try {
        stats = fs.lstatSync(entryPath(current, name));
      } catch (error) {
        if (!isNotFound(error)) throw error;
      }
      if (stats?.isSymbolicLink() && (!isLast || options.followLast)) {
        if (++hops > MAX_LINK_HOPS) fail(undefined, 'too many levels of symbolic links');
        const target = fs.readlinkSync(entryPath(current, name));
        if (path.isAbsolute(target)) {
          const inside = [root.shown, root.real].map((r) => path.relative(r, target)).find((r) => !escapes(r));
          if (inside === undefined) fail(target);
          while (stack.length > 1) closeDir(stack.pop() as DirRef);
          names.length = 0;
          queue.unshift(...(inside as string).split(path.sep).filter((p) => p !== '' && p !== '.'));
        } else {
          // Named in a refusal if the link climbs out: where it points, not where the walk stopped.
          linkedTo = path.resolve(current.real, target);
          queue.unshift(...target.split('/').filter((p) => p !== '' && p !== '.'));
        }
        if (queue.length === 0) fail(undefined, 'the link points at the workspace root');
        continue;
      }
      if (isLast) {
        stack.pop();
        return { parent: current, name, stats, reached: path.join(...names, name) };
      }
      if (stats === undefined) {
        if (options.createDirs === undefined) {
          throw Object.assign(new Error(`ENOENT: no such directory, ${path.join(root.shown, ...names, name)}`), {
            code: 'ENOENT',
          });
        }
        try {
          fs.mkdirSync(entryPath(current, name), { mode: options.createDirs });
        } catch (error) {
          if (errorCode(error) !== 'EEXIST') throw error;
        }
      } else if (!stats.isDirectory()) {
        throw Object.assign(new Error(`ENOTDIR: not a directory, ${path.join(root.shown, ...names, name)}`), {
          code: 'ENOTDIR',
        });
      }
      stack.push(openDirRef(entryPath(current, name), false, path.join(root.shown, ...names, name)));
      names.push(name);
      assertInsideReal(root, stack[stack.length - 1] as DirRef, path.join(root.shown, input));
    }
  } finally {
    // Every directory but the root and the returned parent is closed here; the root is closed by the caller.
    for (const dir of stack) if (dir !== root) closeDir(dir);
  }
}

/** Defence in depth: the directory actually opened must lie inside the root's real path. */
export function assertInsideReal(root: DirRef, dir: DirRef, shownAs: string): void {
  if (!isInsideRoot(root, dir.real)) throw new WorkspaceEscapeError(shownAs, dir.real);
}
