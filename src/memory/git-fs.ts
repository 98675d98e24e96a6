/**
 * The `fs` isomorphic-git is given for the memory repository: every call goes through the workspace-file layer, so
 * the sandboxed shell cannot point `.git/`, an object directory or a tracked file at a host path and have nanobot
 * read, write or delete there. Links are never read or written as links (nanobot versions plain files only).
 */
import { WorkspaceEscapeError, type WorkspaceFs } from '../security/workspace-fs.js';

type Encoding = { encoding?: string | null } | string | undefined;

const notFound = (p: string): Error =>
  Object.assign(new Error(`ENOENT: no such file or directory, ${p}`), { code: 'ENOENT' });

const wantsText = (options: Encoding): boolean =>
  (typeof options === 'string' ? options : options?.encoding) === 'utf8';

/** An object with `promises` as isomorphic-git expects (it binds readFile, writeFile, … from there). */
export function gitFsFor(wfs: WorkspaceFs) {
  const promises = {
    async readFile(p: string, options?: Encoding): Promise<Buffer | string> {
      const data = wfs.readFileSync(p);
      return wantsText(options) ? data.toString('utf8') : data;
    },
    async writeFile(p: string, data: string | Uint8Array, options?: { mode?: number } | string): Promise<void> {
      const mode = typeof options === 'object' ? options.mode : undefined;
      wfs.writeFileAtomicSync(p, data, mode === undefined ? {} : { mode });
    },
    async unlink(p: string): Promise<void> {
      if (wfs.lstatSync(p) === undefined) throw notFound(p);
      wfs.unlinkSync(p);
    },
    async readdir(p: string): Promise<string[]> {
      return wfs.readdirSync(p).map((entry) => entry.name);
    },
    async mkdir(p: string): Promise<void> {
      wfs.mkdirSync(p);
    },
    async rmdir(p: string): Promise<void> {
      wfs.rmdirSync(p);
    },
    async rm(p: string): Promise<void> {
      wfs.rmSync(p);
    },
    async stat(p: string) {
      return wfs.statSync(p) ?? Promise.reject(notFound(p));
    },
    async lstat(p: string) {
      return wfs.lstatSync(p) ?? Promise.reject(notFound(p));
    },
    async readlink(p: string): Promise<never> {
      throw new WorkspaceEscapeError(p, undefined, 'the memory repository does not version symbolic links');
    },
    async symlink(_target: string, p: string): Promise<never> {
      throw new WorkspaceEscapeError(p, undefined, 'the memory repository does not write symbolic links');
    },
    async chmod(p: string, mode: number): Promise<void> {
      wfs.chmodSync(p, mode);
    },
  };
  return { promises };
}
