/**
 * `startDaemon: true`: the gateway runs `signal-cli -a <number> daemon --http <host:port>` itself and stops it when
 * the channel stops. `--receive-mode on-connection` makes signal-cli fetch messages from Signal's servers only while
 * the channel's event stream is open, so whatever arrives while the channel is away stays queued on the servers and
 * comes when it is back. `--no-receive-stdout` keeps message contents out of the daemon's output.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { UserError } from '../../util/errors.js';
import type { Logger } from '../../util/log.js';
import { INSTALL_HINT } from './index.js';
import type { SignalRpc } from './rpc.js';

const START_TIMEOUT_MS = 120_000;
const STOP_GRACE_MS = 10_000;
const TAIL_LINES = 12;

export interface DaemonOptions {
  cliPath: string;
  account: string;
  host: string;
  port: number;
  log: Logger;
  /** Until the daemon answers; the JVM build takes several seconds to start. */
  startTimeoutMs?: number;
  /** Waits between checks (tests shorten it). */
  pollMs?: number;
}

/** The daemon's command line (also shown to people who run it themselves). */
export function daemonArgs(account: string, host: string, port: number): string[] {
  return [
    '-a',
    account,
    'daemon',
    '--http',
    `${host}:${port}`,
    '--receive-mode',
    'on-connection',
    '--no-receive-stdout',
  ];
}

export class SignalDaemon {
  private child?: ChildProcess;
  private exited?: Promise<void>;
  private readonly tail: string[] = [];
  private stopping = false;
  private readonly killOnExit = () => this.child?.kill('SIGKILL');

  constructor(private readonly options: DaemonOptions) {}

  get running(): boolean {
    return this.child !== undefined && this.child.exitCode === null && this.child.signalCode === null;
  }

  /**
   * Spawns the daemon and waits until it answers at /api/v1/check; rejects (and stops it) when the executable is
   * missing, it exits first (its last output says why) or it does not answer in time. `onExit` is told about a
   * later, unexpected exit.
   */
  async start(rpc: SignalRpc, onExit: (error: Error) => void): Promise<void> {
    const { cliPath, account, host, port, log } = this.options;
    this.stopping = false;
    this.tail.length = 0;
    const child = spawn(cliPath, daemonArgs(account, host, port), { stdio: ['ignore', 'pipe', 'pipe'] });
    this.child = child;
    process.once('exit', this.killOnExit);
    for (const stream of [child.stdout, child.stderr]) {
      let partial = '';
      stream?.setEncoding('utf8');
      stream?.on('data', (chunk: string) => {
        const lines = (partial + chunk).split('\n');
        partial = lines.pop() ?? '';
        for (const line of lines.filter((l) => l.trim())) {
          this.tail.push(line.slice(0, 300));
          if (this.tail.length > TAIL_LINES) this.tail.shift();
          log.debug(`signal-cli: ${line.slice(0, 300)}`);
        }
      });
    }
    let spawnError: NodeJS.ErrnoException | undefined;
    let exitedEarly = false;
    let ready = false;
    this.exited = new Promise<void>((resolve) => {
      child.once('error', (err: NodeJS.ErrnoException) => {
        spawnError = err;
        resolve();
      });
      child.once('exit', (code, signal) => {
        exitedEarly = true;
        process.removeListener('exit', this.killOnExit);
        if (this.child === child && !this.stopping && ready)
          onExit(new Error(`signal-cli's daemon exited (${signal ?? `code ${code}`})${this.lastWords()}`));
        resolve();
      });
    });
    const deadline = Date.now() + (this.options.startTimeoutMs ?? START_TIMEOUT_MS);
    for (;;) {
      if (spawnError) throw missingBinary(cliPath, spawnError);
      if (exitedEarly) throw new Error(`signal-cli's daemon stopped while starting${this.lastWords()}`);
      try {
        await rpc.check(2_000);
        ready = true;
        log.info(`started signal-cli's daemon for ${account} at ${rpc.root} (pid ${child.pid})`);
        return;
      } catch (err) {
        if (Date.now() > deadline) {
          await this.stop();
          throw new Error(`signal-cli's daemon did not answer at ${rpc.root} in time${this.lastWords()}`, {
            cause: err,
          });
        }
      }
      await Promise.race([new Promise((resolve) => setTimeout(resolve, this.options.pollMs ?? 500)), this.exited]);
    }
  }

  /** SIGTERM (signal-cli shuts down cleanly), SIGKILL after a grace period; resolves once it is gone. */
  async stop(): Promise<void> {
    const child = this.child;
    if (!child) return;
    this.stopping = true;
    if (this.running) {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), STOP_GRACE_MS);
      await this.exited;
      clearTimeout(timer);
    }
    process.removeListener('exit', this.killOnExit);
    if (this.child === child) this.child = undefined;
  }

  private lastWords(): string {
    return this.tail.length ? `:\n  ${this.tail.slice(-4).join('\n  ')}` : '';
  }
}

/** The executable could not be run: say which, and how to install it. */
export function missingBinary(cliPath: string, err: NodeJS.ErrnoException): UserError {
  if (err.code === 'ENOENT')
    return new UserError(`signal-cli was not found (channels.signal.cliPath is "${cliPath}").`, INSTALL_HINT);
  if (err.code === 'EACCES')
    return new UserError(`signal-cli at "${cliPath}" cannot be run (permission denied).`, INSTALL_HINT);
  return new UserError(`signal-cli ("${cliPath}") could not be started: ${err.message}`, INSTALL_HINT);
}
