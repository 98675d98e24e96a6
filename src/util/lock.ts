/** Cross-process file locks. proper-lockfile (and the graceful-fs it patches in) loads on first use, not at start-up. */
import { setTimeout as sleep } from 'node:timers/promises';
import type { LockOptions } from 'proper-lockfile';

export interface LockRetries {
  retries: number;
  minTimeout: number;
  maxTimeout: number;
  factor: number;
}

export type Lock = (
  file: string,
  options: Omit<LockOptions, 'retries'> & { retries?: LockRetries },
) => Promise<() => Promise<void>>;

/**
 * proper-lockfile's `lock`, retrying only while another process holds the lock. Its own retries also repeat a
 * read-only or full disk for as long as they last; here EROFS, ENOSPC or EACCES fail at once with their own code.
 */
export async function lockFile(): Promise<Lock> {
  // A CommonJS package: the build gives its lazy chunk the same named exports as Node (scripts/cjs-facade.mjs).
  const { lock } = await import('proper-lockfile');
  return async (file, { retries, ...options }) => {
    for (let attempt = 0; ; attempt++) {
      try {
        return await lock(file, { ...options, retries: 0 });
      } catch (error) {
        const held = (error as NodeJS.ErrnoException).code === 'ELOCKED';
        if (!held || !retries || attempt >= retries.retries) throw error;
        await sleep(Math.min(retries.maxTimeout, retries.minTimeout * retries.factor ** attempt));
      }
    }
  };
}
