/**
 * What `/restart` does once the gateway has shut down, by `gateway.restartMode` (nanobot's values):
 * - `exec`: the new gateway keeps this process's pid, so a supervisor (systemd, Docker) never sees it exit. Node 20 has
 *   no execve: this process stays as a small keeper that runs the gateway as its child, forwards SIGTERM/SIGINT/SIGHUP
 *   to it, starts it again when it asks (exit code 75 after its own `/restart`) and exits with its status otherwise.
 * - `spawn`: start a new detached gateway process, then exit 0.
 * - `exit`: exit 0 and let the supervisor start it again (it must restart on any exit, e.g. Docker `restart: always`).
 * - `auto`: `spawn` on Windows, `exec` elsewhere, as nanobot does.
 */
import { spawn } from 'node:child_process';
import type { Logger } from '../../util/log.js';

export type RestartMode = 'auto' | 'exec' | 'spawn' | 'exit';

/** The keeper's child asks for a fresh start with this exit code (EX_TEMPFAIL). */
export const RESTART_EXIT_CODE = 75;
/** Hidden flag the keeper passes its child. */
export const UNDER_KEEPER_FLAG = '--under-keeper';

export function resolveRestartMode(mode: RestartMode, platform: NodeJS.Platform = process.platform) {
  if (mode !== 'auto') return mode;
  return platform === 'win32' ? 'spawn' : 'exec';
}

export interface RestartContext {
  log: Logger;
  /** True in a gateway the keeper runs: it exits 75 and the keeper starts the next one. */
  underKeeper: boolean;
  argv?: string[];
  exit?: (code: number) => void;
}

export function restartAfterShutdown(mode: RestartMode, context: RestartContext): void {
  const exit = context.exit ?? ((code: number) => process.exit(code));
  const argv = context.argv ?? [...process.execArgv, ...process.argv.slice(1)];
  const resolved = resolveRestartMode(mode);
  if (resolved === 'exit') {
    context.log.info('gateway: restart (restartMode exit): exiting for the supervisor to start it again');
    exit(0);
    return;
  }
  if (resolved === 'spawn') {
    context.log.info('gateway: restart (restartMode spawn): starting a new gateway process');
    spawn(process.execPath, argv, { detached: true, stdio: 'inherit' }).unref();
    exit(0);
    return;
  }
  if (context.underKeeper) {
    exit(RESTART_EXIT_CODE);
    return;
  }
  context.log.info(`gateway: restart (restartMode exec): pid ${process.pid} keeps running the new gateway`);
  keep(withoutFlag(argv), exit);
}

/** Runs the gateway as a child for as long as it asks to be restarted. */
function keep(argv: string[], exit: (code: number) => void): void {
  // The keeper must outlive its own signal handlers (the gateway's were removed at shutdown): forward, never die.
  let child = start(argv);
  const forward = (signal: NodeJS.Signals) => {
    child.kill(signal);
  };
  for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) process.on(signal, forward);
  const onExit = (code: number | null, signal: NodeJS.Signals | null) => {
    if (code === RESTART_EXIT_CODE) {
      child = start(argv);
      child.on('exit', onExit);
      return;
    }
    exit(code ?? (signal ? 1 : 0));
  };
  child.on('exit', onExit);
}

function start(argv: string[]) {
  // Its own process group, so a terminal's Ctrl+C reaches it once (forwarded), not twice.
  return spawn(process.execPath, [...argv, UNDER_KEEPER_FLAG], { detached: true, stdio: 'inherit' });
}

function withoutFlag(argv: string[]): string[] {
  return argv.filter((arg) => arg !== UNDER_KEEPER_FLAG);
}
