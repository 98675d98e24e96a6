/**
 * Who a sandboxed command runs as, and the resource limits it runs under.
 *
 * Identity: uid 0 keeps owner rights on every root-owned file without any capability, so as root the sandbox
 * could read /etc/ssl/private, /var/lib/… and every other 0600 file that is not masked. A user namespace does not
 * help (the mapped uid is still kernel uid 0), so when nanobot runs as root the command itself drops to an
 * unprivileged uid inside bubblewrap (setpriv, with only CAP_SETUID/SETGID/SETPCAP granted for that one step; the
 * kernel clears them on the switch and no_new_privs keeps setuid binaries from giving them back). The workspace must
 * stay writable: the command runs as the workspace's owner when that is not root; a root-owned workspace is handed
 * to the sandbox uid once (lchown of root-owned entries, never following symlinks, never into the data dir).
 * Root on the host still reads and edits every file there.
 *
 * Limits (prlimit, inside the sandbox, so they bind the unprivileged uid): RLIMIT_NPROC stops fork bombs
 * (the kernel ignores it for uid 0, one more reason to drop root), RLIMIT_DATA bounds one process's heap without
 * breaking runtimes that reserve large address ranges (RLIMIT_AS would), RLIMIT_CORE=0 keeps core dumps out of the
 * workspace. RLIMIT_NPROC counts every process of the uid, so for a non-root user it is set above what they run now.
 */
import fs from 'node:fs';
import path from 'node:path';
import { isPathInside } from './workspace.js';

export interface SandboxLimits {
  /** Processes (threads included) the sandboxed uid may have at once; 0 = no limit. */
  processes: number;
  /** Heap and other private writable memory of one process, in bytes; 0 = no limit. */
  dataBytes: number;
}

export const DEFAULT_SANDBOX_LIMITS: SandboxLimits = { processes: 512, dataBytes: 4 * 1024 ** 3 };
/** The unprivileged identity for a root-owned workspace: `nobody`/`nogroup` on Debian, Fedora, Alpine. */
export const SANDBOX_FALLBACK_ID = 65534;

export interface SandboxIdentity {
  uid: number;
  gid: number;
  /** Absolute path of setpriv (util-linux). */
  setpriv: string;
}

/** What choosing an identity asks of the host; tests replace it. */
export interface IdentityHost {
  uid(): number;
  which(program: string): string | undefined;
  /** Owner of a path (not following a final symlink), or undefined when it does not exist. */
  ownerOf(target: string): { uid: number; gid: number } | undefined;
  /** Gives root-owned entries under `dir` to uid/gid; returns an error message on failure. */
  handOver(dir: string, uid: number, gid: number): string | undefined;
}

export type IdentityChoice = { identity?: SandboxIdentity; note?: string };

/**
 * The uid sandboxed commands run as when nanobot is root, or none (not root: the command already runs unprivileged).
 * Refuses to hand over a workspace that holds more than the agent's files (the home dir, `/`, the data dir).
 */
export function chooseSandboxIdentity(
  layout: { workspace: string; homeDir: string; dataDir: string },
  host: IdentityHost,
): IdentityChoice {
  if (host.uid() !== 0) return {};
  const setpriv = host.which('setpriv');
  if (!setpriv) return { note: 'setpriv (util-linux) is not installed, so sandboxed commands keep uid 0' };
  const workspace = path.resolve(layout.workspace);
  const owner = host.ownerOf(workspace);
  if (owner && owner.uid !== 0) return { identity: { uid: owner.uid, gid: owner.gid, setpriv } };
  const shared = [path.resolve(layout.homeDir), path.resolve(layout.dataDir)].some((dir) =>
    isPathInside(dir, workspace),
  );
  if (workspace === '/' || shared) {
    return {
      note: `the workspace ${workspace} holds the home or data dir, so it is not handed to an unprivileged uid`,
    };
  }
  const id = SANDBOX_FALLBACK_ID;
  const error = host.handOver(workspace, id, id);
  if (error) return { note: `could not hand the workspace to uid ${id} (${error}), so sandboxed commands keep uid 0` };
  return { identity: { uid: id, gid: id, setpriv } };
}

/** Arguments that switch to `identity` and apply `limits` before running `command` (inside bwrap). */
export function identityAndLimitsPrefix(
  identity: SandboxIdentity | undefined,
  limits: SandboxLimits,
  prlimit: string | undefined,
  nprocBase: number,
): string[] {
  const prefix: string[] = [];
  if (identity) {
    prefix.push(identity.setpriv, '--reuid', String(identity.uid), '--regid', String(identity.gid));
    prefix.push('--clear-groups', '--inh-caps=-all', '--bounding-set=-all', '--');
  }
  if (prlimit) {
    prefix.push(prlimit, '--core=0');
    if (limits.processes > 0) prefix.push(`--nproc=${nprocBase + limits.processes}`);
    if (limits.dataBytes > 0) prefix.push(`--data=${limits.dataBytes}`);
    prefix.push('--');
  }
  return prefix;
}

/** Tasks (processes and threads) `uid` runs now: the base RLIMIT_NPROC counts from for a non-root user. */
export function countTasksOf(uid: number): number {
  let count = 0;
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const status = fs.readFileSync(`/proc/${name}/status`, 'utf8');
      const owner = /^Uid:\s+(\d+)/m.exec(status)?.[1];
      if (Number(owner) === uid) count += Number(/^Threads:\s+(\d+)/m.exec(status)?.[1] ?? 1);
    } catch {
      // Gone meanwhile.
    }
  }
  return count;
}

const MAX_HANDOVER_ENTRIES = 200_000;

/**
 * lchown of root-owned entries below `dir` (itself included); no symlink is followed, no other filesystem entered,
 * no hard-linked file changed.
 * The caller has made sure the data dir (config.json) is not below `dir`.
 */
export function handOverTree(dir: string, uid: number, gid: number): string | undefined {
  const root = fs.lstatSync(dir);
  const pending = [dir];
  let seen = 0;
  try {
    while (pending.length > 0) {
      const current = pending.pop() as string;
      const stat = fs.lstatSync(current);
      if (stat.dev !== root.dev) continue;
      // A hard link may be another name of a host file (an earlier root sandbox could link /etc/shadow here).
      const shared = !stat.isDirectory() && stat.nlink > 1;
      if (stat.uid === 0 && !shared) fs.lchownSync(current, uid, stat.gid === 0 ? gid : stat.gid);
      if (++seen > MAX_HANDOVER_ENTRIES) return `more than ${MAX_HANDOVER_ENTRIES} entries`;
      if (stat.isDirectory()) for (const name of fs.readdirSync(current)) pending.push(path.join(current, name));
    }
  } catch (error) {
    return (error as Error).message;
  }
  return undefined;
}

export const realIdentityHost = (which: (program: string) => string | undefined): IdentityHost => ({
  uid: () => process.getuid?.() ?? -1,
  which,
  ownerOf(target) {
    try {
      const stat = fs.lstatSync(target);
      return { uid: stat.uid, gid: stat.gid };
    } catch {
      return undefined;
    }
  },
  handOver: handOverTree,
});
