/**
 * The one workspace-file layer: every host-side read, write, rename, delete, listing and stat that nanobot's own
 * code makes on a path under the workspace goes through here. Paths are resolved beneath the root without ever
 * following a symlink out of it (see workspace-resolve.ts), files are opened O_NOFOLLOW | O_NONBLOCK and must be
 * regular files, and entries are created, renamed and unlinked through an anchor bound to their opened parent.
 *
 * The syscalls are synchronous (nanobot's own workspace files are small and local); the async methods wrap them
 * so callers need not care. Tools that stream big files take an fd from `openFile` and read it themselves.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { FileWriteError } from '../util/errors.js';
import {
  appendWholeSync,
  defaultWriteSyscall,
  type ReadOptions,
  realPathOfFd,
  removeEntry,
  syncDir,
  toBuffer,
  type WorkspaceDirent,
  WorkspaceFileHandle,
  type WorkspaceFsOptions,
  type WriteOptions,
  type WriteSyscall,
  writeWholeSync,
} from './workspace-file-ops.js';
import {
  closeDir,
  type DirRef,
  entryPath,
  errorCode,
  isInsideRoot,
  kindOf,
  openDirRef,
  openRoot,
  type Resolved,
  type Root,
  resolveBeneath,
  WorkspaceEscapeError,
  WorkspaceFileTypeError,
} from './workspace-resolve.js';

export {
  type ReadOptions,
  type WorkspaceDirent,
  WorkspaceFileHandle,
  type WorkspaceFsOptions,
  type WriteOptions,
  type WriteSyscall,
} from './workspace-file-ops.js';
export {
  closeDir as closeDirectory,
  type DirRef,
  entryPath,
  isNotFound,
  WorkspaceEscapeError,
  WorkspaceFileTypeError,
  WorkspaceFsError,
} from './workspace-resolve.js';

const {
  O_RDONLY,
  O_RDWR,
  O_WRONLY,
  O_CREAT,
  O_EXCL,
  O_APPEND,
  O_NOFOLLOW = 0,
  O_NONBLOCK = 0,
  O_NOCTTY = 0,
} = fs.constants;

/** Modes for what holds the user's conversations and memory (memory/, history.jsonl, cursors): owner only. */
export const PRIVATE_FILE_MODE = 0o600;
export const PRIVATE_DIR_MODE = 0o700;

export class WorkspaceFs {
  readonly root: string;
  private readonly writeSyscall: WriteSyscall;

  constructor(root: string, options: WorkspaceFsOptions = {}) {
    this.root = path.resolve(root);
    this.writeSyscall = options.writeSync ?? defaultWriteSyscall;
  }

  /** Absolute (unverified) path of `rel`, for messages and for handing to code that stays inside the layer. */
  pathOf(rel: string): string {
    return path.resolve(this.root, rel);
  }

  // ---- core: run `use` with the resolved entry, closing every fd afterwards ----

  private at<T>(rel: string, follow: boolean, createDirs: number | undefined, use: (r: Resolved, root: Root) => T): T {
    const root = this.openRootFor(createDirs);
    try {
      const resolved = resolveBeneath(root, rel, { followLast: follow, createDirs });
      try {
        return use(resolved, root);
      } finally {
        if (resolved.parent !== root) closeDir(resolved.parent);
      }
    } finally {
      closeDir(root);
    }
  }

  /** The root itself comes from the config, not the workspace: a write creates it when missing. */
  private openRootFor(createMode: number | undefined): Root {
    try {
      return openRoot(this.root);
    } catch (error) {
      if (createMode === undefined || errorCode(error) !== 'ENOENT') throw error;
      fs.mkdirSync(this.root, { recursive: true, mode: createMode });
      return openRoot(this.root);
    }
  }

  private shown(rel: string): string {
    return this.pathOf(rel);
  }

  /** Opens the final entry O_NOFOLLOW | O_NONBLOCK and requires a regular file; the fd's real path is verified. */
  private openIn(r: Resolved, root: Root, rel: string, flags: number, mode?: number): WorkspaceFileHandle {
    let fd: number;
    try {
      fd = fs.openSync(entryPath(r.parent, r.name), flags | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY, mode);
    } catch (error) {
      if (errorCode(error) === 'ELOOP') {
        throw new WorkspaceEscapeError(this.shown(rel), undefined, 'it is a symbolic link (it changed while opening)');
      }
      if (errorCode(error) === 'ENXIO') throw new WorkspaceFileTypeError(this.shown(rel), 'FIFO or socket', 'file');
      throw error;
    }
    try {
      const stats = fs.fstatSync(fd);
      if (!stats.isFile()) throw new WorkspaceFileTypeError(this.shown(rel), kindOf(stats), 'regular file');
      const realPath = realPathOfFd(fd, path.join(r.parent.real, r.name));
      if (!isInsideRoot(root, realPath)) throw new WorkspaceEscapeError(this.shown(rel), realPath);
      return new WorkspaceFileHandle(fd, realPath, stats.size);
    } catch (error) {
      fs.closeSync(fd);
      throw error;
    }
  }

  /** Opens an existing regular file for reading (or reading and writing: `update`); the caller closes the fd. */
  openFile(rel: string, access: 'read' | 'update' = 'read'): WorkspaceFileHandle {
    return this.at(rel, true, undefined, (r, root) => this.openIn(r, root, rel, access === 'read' ? O_RDONLY : O_RDWR));
  }

  // ---- reads ----

  readFileSync(rel: string, options: ReadOptions = {}): Buffer {
    const file = this.openFile(rel);
    try {
      if (options.maxBytes !== undefined && file.size > options.maxBytes) {
        throw new WorkspaceFileTypeError(
          this.shown(rel),
          `file of ${file.size} bytes`,
          `file of at most ${options.maxBytes} bytes`,
        );
      }
      return fs.readFileSync(file.fd);
    } finally {
      fs.closeSync(file.fd);
    }
  }

  readTextSync(rel: string, options?: ReadOptions): string {
    return this.readFileSync(rel, options).toString('utf8');
  }

  /** Text of `rel`, or undefined when it does not exist. Refusals (links out, FIFOs) still throw. */
  readTextIfExistsSync(rel: string, options?: ReadOptions): string | undefined {
    try {
      return this.readTextSync(rel, options);
    } catch (error) {
      if (errorCode(error) === 'ENOENT' || errorCode(error) === 'ENOTDIR') return undefined;
      throw error;
    }
  }

  async readFile(rel: string, options?: ReadOptions): Promise<Buffer> {
    return this.readFileSync(rel, options);
  }

  async readText(rel: string, options?: ReadOptions): Promise<string> {
    return this.readTextSync(rel, options);
  }

  async readTextIfExists(rel: string, options?: ReadOptions): Promise<string | undefined> {
    return this.readTextIfExistsSync(rel, options);
  }

  // ---- metadata ----

  /** lstat of the entry itself (a link is reported as a link), or undefined when missing. */
  lstatSync(rel: string): fs.Stats | undefined {
    try {
      return this.at(rel, false, undefined, (r) => r.stats);
    } catch (error) {
      if (errorCode(error) === 'ENOENT' || errorCode(error) === 'ENOTDIR') return undefined;
      throw error;
    }
  }

  /** stat following links that stay inside, or undefined when missing. A link out throws WorkspaceEscapeError. */
  statSync(rel: string): fs.Stats | undefined {
    try {
      return this.at(rel, true, undefined, (r) => r.stats);
    } catch (error) {
      if (errorCode(error) === 'ENOENT' || errorCode(error) === 'ENOTDIR') return undefined;
      throw error;
    }
  }

  async stat(rel: string): Promise<fs.Stats | undefined> {
    return this.statSync(rel);
  }

  async lstat(rel: string): Promise<fs.Stats | undefined> {
    return this.lstatSync(rel);
  }

  /** True when `rel` is a regular file reachable inside the workspace (a link out counts as absent). */
  isFileSync(rel: string): boolean {
    try {
      return this.statSync(rel)?.isFile() ?? false;
    } catch (error) {
      if (error instanceof WorkspaceEscapeError) return false;
      throw error;
    }
  }

  // ---- directories ----

  /** Runs `use` with a verified anchor for directory `rel` (created with `createMode` when given). */
  withDirectorySync<T>(rel: string, use: (dir: DirRef) => T, createMode?: number): T {
    const dir = this.openDirectorySync(rel, createMode);
    try {
      return use(dir);
    } finally {
      closeDir(dir);
    }
  }

  /**
   * Opens directory `rel` (created with `createMode` when given and missing) and keeps it open: use
   * `entryPath(dir, name)` for anything inside, even across awaits, then `closeDirectory(dir)`.
   */
  openDirectorySync(rel: string, createMode?: number): DirRef {
    if (path.resolve(this.root, rel) === this.root) return this.openRootFor(createMode);
    return this.at(rel, true, createMode, (r, root) => {
      if (r.stats === undefined && createMode !== undefined) {
        try {
          fs.mkdirSync(entryPath(r.parent, r.name), { mode: createMode });
        } catch (error) {
          if (errorCode(error) !== 'EEXIST') throw error;
        }
      }
      const dir = openDirRef(entryPath(r.parent, r.name), false, this.shown(rel));
      if (!isInsideRoot(root, dir.real)) {
        closeDir(dir);
        throw new WorkspaceEscapeError(this.shown(rel), dir.real);
      }
      return dir;
    });
  }

  mkdirSync(rel: string, options: { mode?: number } = {}): void {
    this.withDirectorySync(rel, () => undefined, options.mode ?? 0o755);
  }

  async mkdir(rel: string, options?: { mode?: number }): Promise<void> {
    this.mkdirSync(rel, options);
  }

  /** Entries of directory `rel`, typed without following links. */
  readdirSync(rel: string): WorkspaceDirent[] {
    return this.withDirectorySync(rel, (dir) =>
      fs.readdirSync(dir.anchor, { withFileTypes: true }).map((d) => ({
        name: d.name,
        kind: d.isFile() ? 'file' : d.isDirectory() ? 'directory' : d.isSymbolicLink() ? 'symlink' : 'other',
      })),
    );
  }

  /** Entries of `rel`, or [] when it does not exist. */
  readdirIfExistsSync(rel: string): WorkspaceDirent[] {
    try {
      return this.readdirSync(rel);
    } catch (error) {
      if (errorCode(error) === 'ENOENT' || errorCode(error) === 'ENOTDIR') return [];
      throw error;
    }
  }

  async readdir(rel: string): Promise<WorkspaceDirent[]> {
    return this.readdirSync(rel);
  }

  async readdirIfExists(rel: string): Promise<WorkspaceDirent[]> {
    return this.readdirIfExistsSync(rel);
  }

  // ---- writes ----

  /** Replaces `rel` atomically (temp + fsync + rename in the anchored parent). A link at `rel` is replaced, not followed. */
  writeFileAtomicSync(rel: string, data: string | Uint8Array, options: WriteOptions = {}): void {
    this.namingDiskErrors(rel, () => this.replaceSync(rel, data, options));
  }

  /** A full or read-only disk met anywhere in a write (open, mkdir, fsync, rename) is reported with the path. */
  private namingDiskErrors(rel: string, write: () => void): void {
    try {
      write();
    } catch (error) {
      throw FileWriteError.isDiskError(error) ? FileWriteError.of(error, this.shown(rel)) : error;
    }
  }

  private replaceSync(rel: string, data: string | Uint8Array, options: WriteOptions): void {
    this.at(rel, false, options.dirMode ?? 0o755, (r) => {
      const oldMode = r.stats?.isFile() ? r.stats.mode & 0o7777 : undefined;
      const mode = options.mode ?? oldMode ?? 0o644;
      const tmpName = `.${r.name}.${randomBytes(6).toString('hex')}.tmp`;
      const tmp = entryPath(r.parent, tmpName);
      const fd = fs.openSync(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK, mode);
      try {
        writeWholeSync(fd, toBuffer(data), this.shown(rel), this.writeSyscall);
        fs.fchmodSync(fd, mode);
        fs.fsyncSync(fd);
      } catch (error) {
        fs.closeSync(fd);
        fs.rmSync(tmp, { force: true });
        throw error;
      }
      fs.closeSync(fd);
      try {
        fs.renameSync(tmp, entryPath(r.parent, r.name));
      } catch (error) {
        fs.rmSync(tmp, { force: true });
        throw error;
      }
      syncDir(r.parent);
    });
  }

  async writeFileAtomic(rel: string, data: string | Uint8Array, options?: WriteOptions): Promise<void> {
    this.writeFileAtomicSync(rel, data, options);
  }

  /**
   * Appends `data` whole or not at all: a short or failed write truncates the file back to its old length and
   * throws. Follows a final link only when it stays inside; creates the file with `mode`.
   */
  appendFileSync(rel: string, data: string | Uint8Array, options: WriteOptions = {}): void {
    this.namingDiskErrors(rel, () => this.appendSync(rel, data, options));
  }

  private appendSync(rel: string, data: string | Uint8Array, options: WriteOptions): void {
    this.at(rel, true, options.dirMode ?? 0o755, (r, root) => {
      const file = this.openIn(r, root, rel, O_WRONLY | O_APPEND | O_CREAT, options.mode ?? 0o644);
      try {
        appendWholeSync(file.fd, toBuffer(data), {
          path: this.shown(rel),
          restoreTo: file.size,
          fsync: options.fsync === true,
          write: this.writeSyscall,
        });
      } finally {
        fs.closeSync(file.fd);
      }
    });
  }

  async appendFile(rel: string, data: string | Uint8Array, options?: WriteOptions): Promise<void> {
    this.appendFileSync(rel, data, options);
  }

  /** Sets the mode of an existing regular file (never through a link). */
  chmodSync(rel: string, mode: number): void {
    this.at(rel, false, undefined, (r) => {
      if (!r.stats?.isFile()) return;
      fs.chmodSync(entryPath(r.parent, r.name), mode);
    });
  }

  // ---- deletes and renames ----

  /** Removes the entry itself (a link is removed, never its target). Missing is not an error. */
  unlinkSync(rel: string): void {
    this.at(rel, false, undefined, (r) => {
      if (r.stats === undefined) return;
      if (r.stats.isDirectory()) throw new WorkspaceFileTypeError(this.shown(rel), 'directory', 'file');
      fs.unlinkSync(entryPath(r.parent, r.name));
    });
  }

  async unlink(rel: string): Promise<void> {
    this.unlinkSync(rel);
  }

  /** Removes an empty directory (never through a link: a link there fails with ENOTDIR). */
  rmdirSync(rel: string): void {
    this.at(rel, false, undefined, (r) => {
      if (r.stats === undefined) {
        throw Object.assign(new Error(`ENOENT: no such directory, ${this.shown(rel)}`), { code: 'ENOENT' });
      }
      fs.rmdirSync(entryPath(r.parent, r.name));
    });
  }

  /** Removes `rel` and, for a directory, everything under it, walking only through opened directories. */
  rmSync(rel: string): void {
    try {
      this.at(rel, false, undefined, (r) => removeEntry(r.parent, r.name, r.stats));
    } catch (error) {
      if (errorCode(error) !== 'ENOENT' && errorCode(error) !== 'ENOTDIR') throw error;
    }
  }

  async rm(rel: string): Promise<void> {
    this.rmSync(rel);
  }

  /** Renames an entry (the entry itself, links included) between two anchored parents. */
  renameSync(from: string, to: string, options: WriteOptions = {}): void {
    this.at(from, false, undefined, (src) => {
      if (src.stats === undefined) {
        throw Object.assign(new Error(`ENOENT: no such file, ${this.shown(from)}`), { code: 'ENOENT' });
      }
      this.at(to, false, options.dirMode ?? 0o755, (dst) => {
        fs.renameSync(entryPath(src.parent, src.name), entryPath(dst.parent, dst.name));
      });
    });
  }

  async rename(from: string, to: string, options?: WriteOptions): Promise<void> {
    this.renameSync(from, to, options);
  }
}

/** One WorkspaceFs per workspace root. */
export function workspaceFs(root: string, options?: WorkspaceFsOptions): WorkspaceFs {
  return new WorkspaceFs(root, options);
}
