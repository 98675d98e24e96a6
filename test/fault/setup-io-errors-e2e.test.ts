/**
 * Setup I/O errors of the built CLI on real small or read-only file systems (tmpfs; needs root, skipped otherwise):
 * every one names the path and the fix on one line, with no stack unless --verbose.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, statfsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { editConfig, runCli, tempHome } from '../cli/cli-helpers.js';

function canMount(): boolean {
  if (process.getuid?.() !== 0) return false;
  const probe = join(tempHome(), 'probe');
  mkdirSync(probe);
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=64k', 'tmpfs', probe], { stdio: 'ignore' });
    execFileSync('umount', [probe], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

const mounted: string[] = [];
afterEach(() => {
  for (const dir of mounted.splice(0).reverse()) execFileSync('umount', [dir], { stdio: 'ignore' });
});

function mountTmpfs(dir: string, options: string): void {
  mkdirSync(dir, { recursive: true });
  execFileSync('mount', ['-t', 'tmpfs', '-o', options, 'tmpfs', dir]);
  mounted.push(dir);
}

/** The error output without the data-dir permission note: must be exactly one `Error:` line. */
function errorLines(stderr: string): string[] {
  return stderr.split('\n').filter((line) => line.trim() !== '' && !line.startsWith('nanobot: '));
}

async function configuredHome(): Promise<string> {
  const home = tempHome();
  expect((await runCli(['onboard'], home)).code).toBe(0);
  editConfig(home, (c) => {
    c.agents.defaults.provider = 'custom';
    c.agents.defaults.model = 'test-model';
    c.providers.custom = { apiKey: 'k', apiBase: 'http://127.0.0.1:9/v1' }; // never reached
  });
  return home;
}

describe.skipIf(!canMount())('setup I/O errors name the path and the fix (real tmpfs)', () => {
  it.each([
    ['agent', '-m', 'hi'],
    ['gateway', '--port', '0'],
  ])('a read-only sessions folder: %s', async (...args) => {
    const home = await configuredHome();
    const sessions = join(home, '.nanobot', 'sessions');
    mountTmpfs(sessions, 'ro,size=64k');
    const result = await runCli(args, home);
    expect(result.code).toBe(1);
    const lines = errorLines(result.stderr);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      new RegExp(
        `^Error: read-only file system \\(EROFS\\) at ${sessions}/\\S+; remount its file system read-write .* and run again$`,
      ),
    );
    const verbose = await runCli([...args, '--verbose'], home);
    expect(verbose.stderr).toMatch(/\n\s+at /); // the stack, only when asked for
  });

  // Fill a small data dir to different levels: the first start fails at a different file each time.
  it.each([4, 8, 12, 16])('a full disk at first start (%i KiB free)', async (kib) => {
    const home = tempHome();
    const data = join(home, '.nanobot');
    mountTmpfs(data, 'size=64k,mode=0700');
    const { bavail, bsize } = statfsSync(data);
    writeFileSync(join(data, 'filler'), Buffer.alloc(bavail * bsize - kib * 1024));
    const result = await runCli(['agent', '-m', 'hi'], home);
    expect(result.code).toBe(1);
    const lines = errorLines(result.stderr);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(new RegExp(`^Error: disk full \\(ENOSPC\\) at ${data}/\\S+; free space and run again$`));
  });
});
