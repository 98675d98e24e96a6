/**
 * Atomic file replacement: write a temp file in the same directory, fsync it, rename it over the target.
 * A crash leaves either the old file or the new one, never half of each. The old file's mode is kept so
 * editing a script does not drop its execute bit.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';

export async function writeFileAtomic(target: string, data: string | Uint8Array): Promise<void> {
  const dir = path.dirname(target);
  await fs.mkdir(dir, { recursive: true });
  const temp = path.join(dir, `.${path.basename(target)}.${randomBytes(6).toString('hex')}.tmp`);
  const mode = await fs.stat(target).then(
    (stat) => stat.mode & 0o7777,
    () => undefined,
  );
  let handle: fs.FileHandle | undefined;
  try {
    handle = await fs.open(temp, 'wx', mode ?? 0o644);
    await handle.writeFile(data);
    await handle.sync();
    await handle.close();
    handle = undefined;
    if (mode !== undefined) await fs.chmod(temp, mode);
    await fs.rename(temp, target);
  } catch (error) {
    await handle?.close().catch(() => undefined);
    await fs.rm(temp, { force: true }).catch(() => undefined);
    throw error;
  }
  await syncDirectory(dir);
}

// Makes the rename itself durable; some platforms cannot open directories, which is fine to ignore.
async function syncDirectory(dir: string): Promise<void> {
  try {
    const handle = await fs.open(dir, 'r');
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
  } catch {
    // Best effort.
  }
}
