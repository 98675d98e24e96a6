/**
 * Runs one shell command as its own process group with a scrubbed environment, bounded output memory,
 * an optional timeout, abort support and, when configured, inside the bubblewrap sandbox. Killing the
 * group (not just the shell) is what stops `sleep` and other grandchildren a command starts; inside the
 * sandbox, killing bwrap takes the whole PID namespace down with it (--die-with-parent).
 */
import { type ChildProcess, type StdioOptions, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Readable, Writable } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';
import { attachUserNetwork, type BwrapPlan, buildBwrapArgs, type UserNetwork } from '../security/sandbox.js';
import { countTasksOf } from '../security/sandbox-identity.js';
import { errorMessage } from '../util/errors.js';

const DEFAULT_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';
/** After the shell exits, how long to wait for pipes held open by background children. */
const PIPE_GRACE_MS = 300;
/** How long `terminate` waits after SIGTERM before SIGKILL. */
const TERMINATE_GRACE_MS = 1000;

export interface ChildEnvOptions {
  pathPrepend?: string;
  pathAppend?: string;
  allowedEnvKeys?: string[];
}

/** HOME, LANG, TERM, PATH and the explicitly allowed keys: never the parent's secrets. */
export function buildChildEnv(parent: NodeJS.ProcessEnv, options: ChildEnvOptions = {}): Record<string, string> {
  const env: Record<string, string> = {
    HOME: parent.HOME ?? os.homedir(),
    LANG: parent.LANG ?? 'C.UTF-8',
    TERM: parent.TERM ?? 'dumb',
    PATH: [options.pathPrepend, parent.PATH ?? DEFAULT_PATH, options.pathAppend].filter(Boolean).join(':'),
  };
  for (const key of options.allowedEnvKeys ?? []) {
    const value = parent[key];
    if (value !== undefined) env[key] = value;
  }
  return env;
}

/**
 * bash sources ~/.bashrc when stdin is a socket (it thinks rshd started it), and Node's stdin pipes are
 * socketpairs: secrets and slow startup would come back through the sessions' stdin. --norc stops that.
 */
function shellFlags(shell: string): string[] {
  return path.basename(shell) === 'bash' ? ['--norc', '--noprofile'] : [];
}

/** bash when installed (what models write for), otherwise POSIX sh. */
export function defaultShell(): string {
  return fs.existsSync('/bin/bash') ? '/bin/bash' : '/bin/sh';
}

/** Keeps the first and last `cap` characters of a stream; the middle is counted, not stored. */
export class BoundedOutput {
  private head = '';
  private tail: string[] = [];
  private tailChars = 0;
  private droppedChars = 0;

  constructor(private readonly cap: number) {}

  push(text: string): void {
    let rest = text;
    if (this.head.length < this.cap) {
      const take = this.cap - this.head.length;
      this.head += rest.slice(0, take);
      rest = rest.slice(take);
    }
    if (rest === '') return;
    this.tail.push(rest);
    this.tailChars += rest.length;
    while (this.tailChars > this.cap) {
      const first = this.tail[0] as string;
      const excess = this.tailChars - this.cap;
      const cut = Math.min(first.length, excess);
      if (cut === first.length) this.tail.shift();
      else this.tail[0] = first.slice(cut);
      this.tailChars -= cut;
      this.droppedChars += cut;
    }
  }

  text(): string {
    const tail = this.tail.join('');
    if (this.droppedChars === 0) return this.head + tail;
    return `${this.head}\n... [${this.droppedChars} characters omitted] ...\n${tail}`;
  }

  /** Returns everything held and starts over (sessions read "new output since the last read"). */
  take(): string {
    const text = this.text();
    this.head = '';
    this.tail = [];
    this.tailChars = 0;
    this.droppedChars = 0;
    return text;
  }
}

export interface ShellExit {
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  timedOut: boolean;
  aborted: boolean;
  terminated: boolean;
  spawnError?: string;
}

export interface ShellRun extends ShellExit {
  stdout: string;
  stderr: string;
}

export interface ShellLaunch {
  shell: string;
  command: string;
  cwd: string;
  env: Record<string, string>;
  /** `pipe` for sessions that take input; default `ignore`. */
  stdin?: 'ignore' | 'pipe';
  /** Run inside bubblewrap with this plan. */
  sandbox?: BwrapPlan;
  /** Hard limit; none when undefined. */
  timeoutMs?: number;
  /** Aborting kills the process group. */
  signal?: AbortSignal;
  /** Characters kept from each end of each stream between reads. */
  captureChars: number;
}

/** shutdown is a terminate that does not wait: SIGKILL at once. */
export type KillReason = 'timeout' | 'abort' | 'terminate' | 'shutdown';

/** Process groups still running; killed if this process exits first, so no command outlives nanobot. */
const liveGroups = new Set<number>();
let exitHookInstalled = false;

function killGroup(pid: number | undefined, signal: NodeJS.Signals = 'SIGKILL'): void {
  if (pid === undefined) return;
  try {
    process.kill(-pid, signal);
  } catch {
    // Already gone.
  }
}

/** SIGKILLs every command still running (one-shot and sessions). Synchronous, so it works in an exit hook. */
export function killAllShellProcesses(): void {
  for (const pid of liveGroups) killGroup(pid);
  liveGroups.clear();
}

function trackGroup(pid: number): void {
  liveGroups.add(pid);
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on('exit', killAllShellProcesses);
}

/** RLIMIT_NPROC counts all of a uid's tasks: start the sandbox's budget from what that uid already runs. */
function nprocBase(plan: BwrapPlan): number {
  if (!plan.prlimit || (plan.limits?.processes ?? 1) === 0) return 0;
  const uid = plan.identity?.uid ?? process.getuid?.() ?? 0;
  // uid 0 is not limited by the kernel at all; counting would only cost time.
  return uid === 0 ? 0 : countTasksOf(uid);
}

function readSandboxPid(stream: Readable): Promise<number | undefined> {
  return new Promise((resolve) => {
    let text = '';
    const onData = (chunk: Buffer) => {
      text += chunk.toString('utf8');
      // bwrap writes `{ "child-pid": N` in one write before the sandbox blocks on --block-fd.
      const match = /"child-pid":\s*(\d+)/.exec(text);
      if (match) finish(Number(match[1]));
    };
    const finish = (pid: number | undefined) => {
      stream.off('data', onData);
      stream.off('close', onClose);
      resolve(pid);
    };
    const onClose = () => finish(undefined);
    stream.on('data', onData);
    stream.on('close', onClose);
  });
}

/** One running command. Output accumulates until `takeOutput()`; `done` resolves once it has exited. */
export class ShellProcess {
  readonly startedAt = Date.now();
  readonly done: Promise<ShellExit>;
  private readonly child: ChildProcess | undefined;
  private readonly stdout: BoundedOutput;
  private readonly stderr: BoundedOutput;
  private readonly listeners = new Set<() => void>();
  private result: ShellExit | undefined;
  private killReason: KillReason | undefined;
  private spawnError: string | undefined;
  private network: UserNetwork | undefined;
  private stdinOpen: boolean;
  private readonly cleanups: (() => void)[] = [];

  constructor(launch: ShellLaunch) {
    this.stdout = new BoundedOutput(launch.captureChars);
    this.stderr = new BoundedOutput(launch.captureChars);
    this.stdinOpen = launch.stdin === 'pipe';
    let resolveDone: (exit: ShellExit) => void = () => {};
    this.done = new Promise((resolve) => {
      resolveDone = resolve;
    });
    if (launch.signal?.aborted) {
      this.killReason = 'abort';
      this.child = undefined;
      this.finish(resolveDone, { code: null, signal: null });
      return;
    }
    this.child = this.spawnChild(launch, resolveDone);
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  get running(): boolean {
    return this.result === undefined;
  }

  get exit(): ShellExit | undefined {
    return this.result;
  }

  /** Unread stdout and stderr, left in place (for wait_for). */
  peekOutput(): string {
    return `${this.stdout.text()}\n${this.stderr.text()}`;
  }

  /** New stdout and stderr since the last call. */
  takeOutput(): { stdout: string; stderr: string } {
    return { stdout: this.stdout.take(), stderr: this.stderr.take() };
  }

  /** Calls `listener` whenever output arrives or the process ends; returns the unsubscribe function. */
  onActivity(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Writes to stdin; resolves with an error message, or undefined on success. */
  write(text: string): Promise<string | undefined> {
    const stdin = this.child?.stdin;
    if (!this.running) return Promise.resolve('the process has already exited');
    if (!stdin || !this.stdinOpen) return Promise.resolve('stdin is closed');
    return new Promise((resolve) => {
      stdin.write(text, (error) => resolve(error ? `could not write to stdin: ${error.message}` : undefined));
    });
  }

  closeStdin(): void {
    this.stdinOpen = false;
    this.child?.stdin?.end();
  }

  /** Kills the whole process group: SIGTERM then SIGKILL for terminate, SIGKILL at once otherwise. */
  kill(reason: KillReason): void {
    if (!this.running) return;
    this.killReason ??= reason;
    const pid = this.child?.pid;
    if (reason !== 'terminate') {
      killGroup(pid);
      return;
    }
    killGroup(pid, 'SIGTERM');
    // Not cleared when the shell exits: children that ignore SIGTERM outlive it in the same group.
    setTimeout(() => killGroup(pid), TERMINATE_GRACE_MS).unref();
  }

  private spawnChild(launch: ShellLaunch, resolveDone: (exit: ShellExit) => void): ChildProcess {
    const plan = launch.sandbox;
    const userNet = plan?.network === 'user' ? plan.slirp4netns : undefined;
    const shellArgs = [launch.shell, ...shellFlags(launch.shell), '-c', launch.command];
    const [program, args] = plan
      ? [
          plan.bwrap,
          buildBwrapArgs({
            plan,
            nprocBase: nprocBase(plan),
            cwd: launch.cwd,
            command: shellArgs,
            ...(userNet ? { syncFds: { info: 3, block: 4 } } : {}),
          }),
        ]
      : [launch.shell, shellArgs.slice(1)];
    // fds 3 and 4 carry bwrap's --info-fd and --block-fd for the network handshake.
    const syncPipes: 'pipe'[] = userNet ? ['pipe', 'pipe'] : [];
    const stdio: StdioOptions = [launch.stdin ?? 'ignore', 'pipe', 'pipe', ...syncPipes];
    // detached: the child leads a new process group, so one kill reaches everything it started.
    const child = spawn(program, args, { cwd: launch.cwd, env: launch.env, detached: true, stdio });
    if (child.pid !== undefined) trackGroup(child.pid);

    const capture = (stream: NodeJS.ReadableStream | null, into: BoundedOutput) => {
      const decoder = new StringDecoder('utf8');
      stream?.on('data', (chunk: Buffer) => {
        into.push(decoder.write(chunk));
        this.notify();
      });
      stream?.on('end', () => into.push(decoder.end()));
    };
    capture(child.stdout, this.stdout);
    capture(child.stderr, this.stderr);
    child.stdin?.on('error', () => {
      this.stdinOpen = false;
    });

    if (launch.timeoutMs !== undefined) {
      const timer = setTimeout(() => this.kill('timeout'), launch.timeoutMs);
      this.cleanups.push(() => clearTimeout(timer));
    }
    if (launch.signal) {
      const signal = launch.signal;
      const onAbort = () => this.kill('abort');
      signal.addEventListener('abort', onAbort, { once: true });
      this.cleanups.push(() => signal.removeEventListener('abort', onAbort));
    }
    if (userNet) {
      void this.connectNetwork(child, userNet).catch((error: unknown) => {
        this.spawnError ??= `sandbox network setup failed: ${errorMessage(error)}`;
        killGroup(child.pid);
      });
    }

    let exit: { code: number | null; signal: NodeJS.Signals | null } = { code: null, signal: null };
    child.on('error', (error) => {
      this.spawnError ??= error.message;
      // A failed spawn has no process to wait for.
      if (child.pid === undefined) this.finish(resolveDone, exit);
    });
    child.on('exit', (code, signal) => {
      exit = { code, signal };
      if (child.pid !== undefined) liveGroups.delete(child.pid);
      this.network?.stop();
      child.stdio[3]?.destroy();
      child.stdio[4]?.destroy();
      // A background child (`server &`) may keep our pipes open forever; stop waiting for it.
      const grace = setTimeout(() => {
        child.stdout?.destroy();
        child.stderr?.destroy();
      }, PIPE_GRACE_MS);
      this.cleanups.push(() => clearTimeout(grace));
    });
    child.on('close', () => this.finish(resolveDone, exit));
    return child;
  }

  /** Gives the sandbox outbound network, then lets it start (it waits on --block-fd until then). */
  private async connectNetwork(child: ChildProcess, slirp4netns: string): Promise<void> {
    const info = child.stdio[3];
    const block = child.stdio[4];
    if (!(info instanceof Readable) || !(block instanceof Writable)) return;
    const pid = await readSandboxPid(info);
    // No pid: bwrap failed before the sandbox existed; its own message arrives on stderr.
    if (pid === undefined) return;
    const exited = () => child.exitCode !== null || child.signalCode !== null;
    try {
      this.network = await attachUserNetwork(slirp4netns, pid);
      // Killed (timeout, cancel) while the network came up: the exit handler has already run.
      if (exited()) this.network.stop();
      else block.write('1');
    } catch (error) {
      if (exited()) return;
      this.spawnError ??=
        `sandbox network setup failed: ${(error as Error).message}. Set tools.exec.sandboxNetwork to ` +
        '"none" (no network) or "host" (host network).';
      killGroup(child.pid);
    } finally {
      info.destroy();
      block.destroy();
    }
  }

  private notify(): void {
    for (const listener of [...this.listeners]) listener();
  }

  private finish(
    resolveDone: (exit: ShellExit) => void,
    exit: { code: number | null; signal: NodeJS.Signals | null },
  ): void {
    if (this.result) return;
    for (const cleanup of this.cleanups.splice(0)) cleanup();
    this.result = {
      exitCode: exit.code,
      signal: exit.signal,
      timedOut: this.killReason === 'timeout',
      aborted: this.killReason === 'abort',
      terminated: this.killReason === 'terminate' || this.killReason === 'shutdown',
      ...(this.spawnError === undefined ? {} : { spawnError: this.spawnError }),
    };
    resolveDone(this.result);
    this.notify();
  }
}

export function startShell(launch: ShellLaunch): ShellProcess {
  return new ShellProcess(launch);
}

/** Runs a command to completion and returns all of its (bounded) output. */
export async function runShell(launch: ShellLaunch): Promise<ShellRun> {
  const process = startShell(launch);
  const exit = await process.done;
  return { ...exit, ...process.takeOutput() };
}

/** Keeps the start and the end (where errors and the exit code are) and cuts the middle. */
export function cutMiddle(text: string, maxChars: number): string {
  if (text.length <= maxChars) return text;
  const omitted = text.length - maxChars;
  const head = Math.ceil(maxChars / 2);
  const tail = maxChars - head;
  return (
    `${text.slice(0, head)}\n\n... [${omitted} characters omitted from the middle of the output. ` +
    `Narrow the command (e.g. pipe through head, tail or grep) to see them.] ...\n\n${text.slice(text.length - tail)}`
  );
}

export function exitLine(exit: Pick<ShellExit, 'exitCode' | 'signal'>): string {
  if (exit.exitCode !== null) return `Exit code: ${exit.exitCode}`;
  const number = exit.signal ? os.constants.signals[exit.signal] : undefined;
  return number === undefined ? 'Exit code: unknown' : `Exit code: ${128 + number} (killed by ${exit.signal})`;
}

/** stdout, then `STDERR:` and stderr when there is any, each without its final newline. */
export function joinStreams(stdout: string, stderr: string): string {
  const parts: string[] = [];
  const out = stdout.replace(/\n$/, '');
  const err = stderr.replace(/\n$/, '');
  if (out !== '') parts.push(out);
  if (err.trim() !== '') parts.push(`STDERR:\n${err}`);
  return parts.join('\n');
}

export function formatExecOutput(run: ShellRun, maxChars: number): string {
  const body = joinStreams(run.stdout, run.stderr);
  return cutMiddle(`${body === '' ? '(no output)' : body}\n${exitLine(run)}`, maxChars);
}
