/**
 * nanobot's data dir (`~/.nanobot`) holds the config with API keys, the chats and the pairing approvals: only its
 * owner may enter it. A new one is made 0700; an existing one that others can enter (nanobot made it 0755) is
 * tightened when nanobot starts, and the caller says so once (the next start finds it private).
 */
import { chmod, mkdir, stat } from 'node:fs/promises';
import { basename } from 'node:path';

export interface PrivateDirResult {
  created: boolean;
  /** The mode it had, when it was tightened. */
  tightenedFrom?: number;
  /** Why it could not be tightened (not ours, read-only file system). */
  problem?: string;
}

/**
 * Makes `dir` (and missing parents) 0700, or tightens an existing dir that group or others can reach. A dir of
 * another name than `.nanobot` (a `--config` path in some project folder) is created private but never chmod-ed.
 */
export async function ensurePrivateDir(dir: string): Promise<PrivateDirResult> {
  const before = await stat(dir).catch(() => undefined);
  if (!before) {
    await mkdir(dir, { recursive: true, mode: 0o700 });
    // mkdir's mode passes through the umask; chmod states it.
    await chmod(dir, 0o700);
    return { created: true };
  }
  const mode = before.mode & 0o777;
  if (!before.isDirectory() || (mode & 0o077) === 0 || basename(dir) !== '.nanobot') return { created: false };
  try {
    await chmod(dir, mode & 0o700);
    return { created: false, tightenedFrom: mode };
  } catch (err) {
    return { created: false, problem: (err as NodeJS.ErrnoException).code ?? String(err) };
  }
}

/** The one log line for a tightened (or loose and untouchable) data dir; undefined when there is nothing to say. */
export function describePrivateDir(dir: string, result: PrivateDirResult): string | undefined {
  const octal = (mode: number) => `0${mode.toString(8)}`;
  if (result.tightenedFrom !== undefined)
    return `nanobot: ${dir} was ${octal(result.tightenedFrom)} (others could read your config and chats); it is 0700 now.`;
  if (result.problem)
    return `nanobot: ${dir} can be read by other users and could not be made private (${result.problem}): chmod 700 it.`;
  return undefined;
}
