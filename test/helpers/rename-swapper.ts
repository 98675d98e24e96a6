/**
 * The attacker of the read-race tests: a separate process that swaps two directory entries with
 * renameat2(RENAME_EXCHANGE) in a tight loop, as a background `exec` in the sandbox can. One entry is a real
 * directory in the workspace, the other a symlink to a directory outside it, so a reader that checks a path and
 * then opens it again by name sees the outside directory about half the time.
 *
 * The loop is bounded (it exits by itself after `maxSwaps`), and `stop()` kills it; tests call `stop()` in
 * afterEach too. Linux only (x86_64, aarch64); `renameSwapSupported()` says whether it can run here.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import os from 'node:os';

const SYSCALL_RENAMEAT2: Record<string, number> = { x64: 316, arm64: 276 };

const SCRIPT = `
import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
nr, a, b, n = int(sys.argv[1]), sys.argv[2].encode(), sys.argv[3].encode(), int(sys.argv[4])
for i in range(n):
    if libc.syscall(nr, -100, a, -100, b, 2) != 0:
        sys.exit('renameat2 failed: errno %d' % ctypes.get_errno())
    if i == 0:
        print('ready', flush=True)
`;

export function renameSwapSupported(): boolean {
  if (process.platform !== 'linux' || SYSCALL_RENAMEAT2[os.arch()] === undefined) return false;
  return spawnSync('python3', ['-c', 'import ctypes'], { stdio: 'ignore' }).status === 0;
}

export interface Swapper {
  /** Kills the loop (if still running) and waits for it to exit. */
  stop(): Promise<void>;
}

/** Starts swapping `a` and `b`; resolves once the first swap has happened. */
export function startSwapper(a: string, b: string, maxSwaps = 20_000_000): Promise<Swapper> {
  const nr = SYSCALL_RENAMEAT2[os.arch()];
  if (nr === undefined) throw new Error(`renameat2 syscall number unknown on ${os.arch()}`);
  const child: ChildProcess = spawn('python3', ['-c', SCRIPT, String(nr), a, b, String(maxSwaps)], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await exited;
  };
  return new Promise((resolve, reject) => {
    let stderr = '';
    child.stderr?.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    child.stdout?.once('data', () => resolve({ stop }));
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`swapper exited (${code}) before its first swap: ${stderr}`)));
  });
}
