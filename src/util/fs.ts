/** Crash-safe file writes: temp file + fsync + rename, then fsync the directory. */
import { randomBytes } from 'node:crypto';
import { mkdir, open, rename, rm, stat } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { FileWriteError } from './errors.js';

/**
 * Replaces `path` atomically: a crash leaves the old file or the new one, never half of each.
 * The new file gets `mode`, else the old file's mode (editing a script keeps its execute bit), else 0644.
 */
export async function writeFileAtomic(path: string, data: string | Uint8Array, mode?: number): Promise<void> {
  try {
    await replaceFile(path, data, mode);
  } catch (error) {
    throw FileWriteError.of(error, path); // the bare system error does not say which file
  }
}

async function replaceFile(path: string, data: string | Uint8Array, mode?: number): Promise<void> {
  const dir = dirname(path);
  await mkdir(dir, { recursive: true });
  const tmp = join(dir, `.${basename(path)}.${randomBytes(6).toString('hex')}.tmp`);
  const fileMode =
    mode ??
    (await stat(path).then(
      (s) => s.mode & 0o7777,
      () => 0o644,
    ));
  const handle = await open(tmp, 'wx', fileMode);
  try {
    await handle.writeFile(data);
    await handle.chmod(fileMode);
    await handle.sync();
  } catch (err) {
    await handle.close();
    await rm(tmp, { force: true });
    throw err;
  }
  await handle.close();
  try {
    await rename(tmp, path);
  } catch (err) {
    await rm(tmp, { force: true });
    throw err;
  }
  await syncDir(dir);
}

async function syncDir(dir: string): Promise<void> {
  try {
    const handle = await open(dir, 'r');
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
  } catch {
    // Some filesystems refuse fsync on directories; the rename is still atomic there.
  }
}

export function expandHome(path: string, home: string): string {
  if (path === '~') return home;
  if (path.startsWith('~/')) return join(home, path.slice(2));
  return path;
}
