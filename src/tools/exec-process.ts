/**
 * Runs one shell command as its own process group with a scrubbed environment, bounded output memory,
 * a timeout and abort support. Killing the group (not just the shell) is what stops `sleep` and other
 * grandchildren a command starts.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';

const DEFAULT_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';
/** After the shell exits, how long to wait for pipes held open by background children. */
const PIPE_GRACE_MS = 300;

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

/** bash when installed (what models write for), otherwise POSIX sh. */
export function defaultShell(): string {
  return fs.existsSync('/bin/bash') ? '/bin/bash' : '/bin/sh';
}

/** Keeps the first and last `cap` bytes of a stream; the middle is counted, not stored. */
export class BoundedOutput {
  private readonly head: Buffer[] = [];
  private headBytes = 0;
  private tail: Buffer[] = [];
  private tailBytes = 0;
  private droppedBytes = 0;

  constructor(private readonly cap: number) {}

  push(chunk: Buffer): void {
    let rest = chunk;
    if (this.headBytes < this.cap) {
      const take = Math.min(this.cap - this.headBytes, rest.length);
      this.head.push(rest.subarray(0, take));
      this.headBytes += take;
      rest = rest.subarray(take);
    }
    if (rest.length === 0) return;
    this.tail.push(rest);
    this.tailBytes += rest.length;
    while (this.tailBytes > this.cap) {
      const first = this.tail[0] as Buffer;
      const excess = this.tailBytes - this.cap;
      if (first.length <= excess) {
        this.tail.shift();
        this.tailBytes -= first.length;
        this.droppedBytes += first.length;
      } else {
        this.tail[0] = first.subarray(excess);
        this.tailBytes -= excess;
        this.droppedBytes += excess;
      }
    }
  }

  text(): string {
    if (this.droppedBytes === 0) return Buffer.concat([...this.head, ...this.tail]).toString('utf8');
    const head = Buffer.concat(this.head).toString('utf8');
    const tail = Buffer.concat(this.tail).toString('utf8');
    return `${head}\n... [${this.droppedBytes} bytes omitted] ...\n${tail}`;
  }
}

export interface ShellRun {
  stdout: string;
  stderr: string;
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  timedOut: boolean;
  aborted: boolean;
  spawnError?: string;
}

export interface ShellRunOptions {
  shell: string;
  command: string;
  cwd: string;
  env: Record<string, string>;
  timeoutMs: number;
  signal: AbortSignal;
  /** Bytes kept from each end of each stream. */
  captureBytes: number;
}

function killGroup(pid: number | undefined): void {
  if (pid === undefined) return;
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    // Already gone.
  }
}

export function runShell(options: ShellRunOptions): Promise<ShellRun> {
  return new Promise((resolve) => {
    const stdout = new BoundedOutput(options.captureBytes);
    const stderr = new BoundedOutput(options.captureBytes);
    let timedOut = false;
    let aborted = false;
    let spawnError: string | undefined;
    let exit: { code: number | null; signal: NodeJS.Signals | null } = { code: null, signal: null };

    if (options.signal.aborted) {
      resolve({ stdout: '', stderr: '', exitCode: null, signal: null, timedOut: false, aborted: true });
      return;
    }
    // detached: the child leads a new process group, so one kill reaches everything it started.
    const child = spawn(options.shell, ['-c', options.command], {
      cwd: options.cwd,
      env: options.env,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout.on('data', (chunk: Buffer) => stdout.push(chunk));
    child.stderr.on('data', (chunk: Buffer) => stderr.push(chunk));

    const timer = setTimeout(() => {
      timedOut = true;
      killGroup(child.pid);
    }, options.timeoutMs);
    const onAbort = () => {
      aborted = true;
      killGroup(child.pid);
    };
    options.signal.addEventListener('abort', onAbort, { once: true });
    let graceTimer: NodeJS.Timeout | undefined;

    let settled = false;
    const finish = () => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (graceTimer) clearTimeout(graceTimer);
      options.signal.removeEventListener('abort', onAbort);
      resolve({
        stdout: stdout.text(),
        stderr: stderr.text(),
        exitCode: exit.code,
        signal: exit.signal,
        timedOut,
        aborted,
        ...(spawnError === undefined ? {} : { spawnError }),
      });
    };

    child.on('error', (error) => {
      spawnError = error.message;
      // A failed spawn has no process to wait for.
      if (child.pid === undefined) finish();
    });
    child.on('exit', (code, signal) => {
      exit = { code, signal };
      // A background child (`server &`) may keep our pipes open forever; stop waiting for it.
      graceTimer = setTimeout(() => {
        child.stdout.destroy();
        child.stderr.destroy();
      }, PIPE_GRACE_MS);
    });
    child.on('close', finish);
  });
}
