/**
 * Background exec sessions. A command still running when exec's `yield_time_ms` is up keeps running here;
 * the model reads its output and feeds its stdin with write_stdin and sees them with list_exec_sessions.
 * Sessions belong to the chat that started them, are capped (8 running), reaped after 30 idle minutes,
 * and killed with their whole process group on timeout, cancel and shutdown.
 */
import crypto from 'node:crypto';
import { z } from 'zod';
import { BoundedRegex, RegexBudget, RegexTimeoutError } from '../security/bounded-regex.js';
import {
  cutMiddle,
  exitLine,
  joinStreams,
  type ShellExit,
  type ShellLaunch,
  type ShellProcess,
  type ShellRun,
  startShell,
} from './exec-process.js';
import { defineTool, fail, ok, type ToolResult } from './types.js';

export const MAX_EXEC_SESSIONS = 8;
export const EXEC_SESSION_IDLE_MS = 30 * 60_000;
export const MAX_YIELD_TIME_MS = 30_000;
const DEFAULT_POLL_MS = 1000;
const DEFAULT_WAIT_FOR_MS = 10_000;
const DEFAULT_SESSION_OUTPUT_CHARS = 10_000;
const MAX_SESSION_OUTPUT_CHARS = 50_000;
/** Characters kept from each end of each stream between two reads of a session. */
const SESSION_CAPTURE_CHARS = 64 * 1024;
const TERMINATE_WAIT_MS = 3000;

interface ExecSession {
  id: string;
  command: string;
  cwd: string;
  ownerKey: string | undefined;
  process: ShellProcess;
  lastAccess: number;
}

export interface SessionPoll {
  id: string;
  stdout: string;
  stderr: string;
  /** Undefined while the command is still running. */
  exit: ShellExit | undefined;
  elapsedMs: number;
  /** Set when the caller waited for a pattern. */
  matched?: boolean;
}

export interface ExecSessionInfo {
  id: string;
  /** Leader of the session's process group (bwrap's pid when sandboxed). */
  pid: number | undefined;
  command: string;
  cwd: string;
  ageMs: number;
  idleMs: number;
  running: boolean;
  exitCode: number | null;
}

export type SessionStart =
  | { kind: 'refused'; reason: string }
  | { kind: 'finished'; run: ShellRun }
  | { kind: 'background'; poll: SessionPoll };

export interface SessionRequest {
  /** Text for stdin; "" or undefined only reads. */
  chars?: string;
  closeStdin?: boolean;
  terminate?: boolean;
  /** Text, or `/regex/flags`, to wait for in new output. */
  waitFor?: string;
  /** How long to wait for output or the pattern (capped at 30 s). */
  yieldMs?: number;
}

export interface ExecSessionManagerOptions {
  maxSessions?: number;
  idleTimeoutMs?: number;
  /** How often idle sessions are looked for (default: a minute). */
  reapIntervalMs?: number;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Resolves when the process ends or `ms` pass, whichever is first. */
function waitForExit(process: ShellProcess, ms: number): Promise<void> {
  return Promise.race([process.done.then(() => undefined), sleep(ms)]);
}

/**
 * `/…/flags` is a regular expression; anything else is matched literally. The pattern is the model's: it is matched
 * within a time budget for the whole wait, and one that overruns it never matches (the wait ends at its deadline).
 */
export function compileWaitFor(waitFor: string): (text: string) => boolean {
  const regex = /^\/(.+)\/([dimsu]*)$/s.exec(waitFor);
  if (regex) {
    const compiled = new BoundedRegex(regex[1] as string, regex[2] as string, new RegexBudget());
    let overran = false;
    return (text) => {
      if (overran) return false;
      try {
        return compiled.test(text);
      } catch (error) {
        if (!(error instanceof RegexTimeoutError)) throw error;
        overran = true;
        return false;
      }
    };
  }
  return (text) => text.includes(waitFor);
}

/** Resolves true when `matches` holds for the unread output, false when the process ends or time is up. */
function waitForOutput(process: ShellProcess, matches: (text: string) => boolean, ms: number): Promise<boolean> {
  return new Promise((resolve) => {
    const check = () => {
      if (matches(process.peekOutput())) return done(true);
      if (!process.running) done(false);
    };
    const timer = setTimeout(() => done(false), ms);
    const unsubscribe = process.onActivity(check);
    const done = (matched: boolean) => {
      clearTimeout(timer);
      unsubscribe();
      resolve(matched);
    };
    check();
  });
}

export class ExecSessionManager {
  readonly maxSessions: number;
  readonly idleTimeoutMs: number;
  private readonly reapIntervalMs: number;
  private readonly sessions = new Map<string, ExecSession>();
  private starting = 0;
  private reaper: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(options: ExecSessionManagerOptions = {}) {
    this.maxSessions = options.maxSessions ?? MAX_EXEC_SESSIONS;
    this.idleTimeoutMs = options.idleTimeoutMs ?? EXEC_SESSION_IDLE_MS;
    this.reapIntervalMs = options.reapIntervalMs ?? 60_000;
  }

  get runningCount(): number {
    return [...this.sessions.values()].filter((session) => session.process.running).length;
  }

  /**
   * Starts a command with stdin open and waits up to `yieldMs`. If it is still running then, it becomes a
   * session and the output so far is returned with its id; otherwise the finished run is returned.
   */
  async start(
    launch: Omit<ShellLaunch, 'stdin' | 'captureChars'>,
    options: { yieldMs: number; ownerKey?: string },
  ): Promise<SessionStart> {
    if (this.closed) return { kind: 'refused', reason: 'exec sessions are shutting down.' };
    this.reapIdle();
    if (this.runningCount + this.starting >= this.maxSessions) {
      return {
        kind: 'refused',
        reason:
          `${this.maxSessions} background exec sessions are already running, the maximum. ` +
          'Stop one with write_stdin (terminate: true; list_exec_sessions shows them) or run this without yield_time_ms.',
      };
    }
    this.starting++;
    const process = startShell({ ...launch, stdin: 'pipe', captureChars: SESSION_CAPTURE_CHARS });
    try {
      await waitForExit(process, Math.min(options.yieldMs, MAX_YIELD_TIME_MS));
    } finally {
      this.starting--;
    }
    if (!process.running || this.closed) {
      if (this.closed) process.kill('shutdown');
      const exit = await process.done;
      return { kind: 'finished', run: { ...exit, ...process.takeOutput() } };
    }
    const session: ExecSession = {
      id: crypto.randomBytes(4).toString('hex'),
      command: launch.command,
      cwd: launch.cwd,
      ownerKey: options.ownerKey,
      process,
      lastAccess: Date.now(),
    };
    this.sessions.set(session.id, session);
    this.startReaper();
    return { kind: 'background', poll: this.poll(session) };
  }

  /** Writes, closes stdin, terminates or waits, then returns the output since the last read. */
  async interact(id: string, ownerKey: string | undefined, request: SessionRequest): Promise<SessionPoll | string> {
    this.reapIdle();
    const session = this.sessions.get(id);
    if (!session || session.ownerKey !== ownerKey) {
      return (
        `no exec session "${id}". It may have finished and been read already, or been stopped after ` +
        `${Math.round(this.idleTimeoutMs / 60_000)} idle minutes; list_exec_sessions shows the live ones.`
      );
    }
    session.lastAccess = Date.now();
    const { process } = session;
    if (request.terminate) {
      process.kill('terminate');
      await waitForExit(process, TERMINATE_WAIT_MS);
      return this.poll(session);
    }
    // Input for a command that has already exited is dropped; the poll below reports the exit.
    if (request.chars && process.running) {
      const error = await process.write(request.chars);
      if (error) return `session ${id}: ${error}`;
    }
    if (request.closeStdin) process.closeStdin();

    let matched: boolean | undefined;
    if (request.waitFor !== undefined) {
      const wait = Math.min(request.yieldMs ?? DEFAULT_WAIT_FOR_MS, MAX_YIELD_TIME_MS);
      matched = await waitForOutput(process, compileWaitFor(request.waitFor), wait);
    } else {
      await waitForExit(process, Math.min(request.yieldMs ?? DEFAULT_POLL_MS, MAX_YIELD_TIME_MS));
    }
    session.lastAccess = Date.now();
    return { ...this.poll(session), ...(matched === undefined ? {} : { matched }) };
  }

  list(ownerKey: string | undefined): ExecSessionInfo[] {
    this.reapIdle();
    const now = Date.now();
    return [...this.sessions.values()]
      .filter((session) => session.ownerKey === ownerKey)
      .map((session) => ({
        id: session.id,
        pid: session.process.pid,
        command: session.command,
        cwd: session.cwd,
        ageMs: now - session.process.startedAt,
        idleMs: now - session.lastAccess,
        running: session.process.running,
        exitCode: session.process.exit?.exitCode ?? null,
      }));
  }

  /** Kills sessions nobody has touched for the idle timeout (and forgets finished ones nobody read). */
  reapIdle(): void {
    const now = Date.now();
    for (const session of this.sessions.values()) {
      if (now - session.lastAccess < this.idleTimeoutMs) continue;
      session.process.kill('terminate');
      this.sessions.delete(session.id);
    }
    if (this.sessions.size === 0) this.stopReaper();
  }

  /** Kills every session's process group and waits (briefly) for them to go. Call on process exit. */
  async shutdown(): Promise<void> {
    this.closed = true;
    this.stopReaper();
    const processes = [...this.sessions.values()].map((session) => session.process);
    this.sessions.clear();
    if (processes.length === 0) return;
    for (const process of processes) process.kill('shutdown');
    // An unref'd timer: waiting for stragglers must not itself keep the process alive.
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, TERMINATE_WAIT_MS);
      timer.unref();
    });
    await Promise.race([Promise.all(processes.map((process) => process.done)), deadline]);
    clearTimeout(timer);
  }

  /** Same as shutdown(). */
  killAll(): Promise<void> {
    return this.shutdown();
  }

  /** Takes the unread output; a finished session is forgotten once its last output has been read. */
  private poll(session: ExecSession): SessionPoll {
    const { stdout, stderr } = session.process.takeOutput();
    const exit = session.process.exit;
    if (exit) this.sessions.delete(session.id);
    if (this.sessions.size === 0) this.stopReaper();
    return { id: session.id, stdout, stderr, exit, elapsedMs: Date.now() - session.process.startedAt };
  }

  private startReaper(): void {
    if (this.reaper) return;
    this.reaper = setInterval(() => this.reapIdle(), this.reapIntervalMs);
    // Idle sessions must not keep nanobot alive on their own.
    this.reaper.unref();
  }

  private stopReaper(): void {
    if (this.reaper) clearInterval(this.reaper);
    this.reaper = undefined;
  }
}

export function createExecSessionManager(options: ExecSessionManagerOptions = {}): ExecSessionManager {
  return new ExecSessionManager(options);
}

/** How a session's state reads for the model. */
export function formatSessionPoll(poll: SessionPoll, maxChars: number): string {
  const lines: string[] = [];
  const body = joinStreams(poll.stdout, poll.stderr);
  lines.push(body === '' ? '(no new output)' : cutMiddle(body, maxChars));
  if (poll.matched === false) lines.push('(wait_for text not seen yet)');
  const exit = poll.exit;
  if (!exit) {
    lines.push(`Process running. session_id: ${poll.id}`);
  } else if (exit.spawnError !== undefined) {
    lines.push(`Could not start the command: ${exit.spawnError}`);
  } else {
    if (exit.timedOut) {
      lines.push('Command timed out; it and every process it started were killed.');
    } else if (exit.aborted) {
      lines.push('Command cancelled; it and every process it started were killed.');
    } else if (exit.terminated) {
      lines.push('Session terminated.');
    }
    lines.push(exitLine(exit));
  }
  lines.push(`Elapsed: ${(poll.elapsedMs / 1000).toFixed(1)} s`);
  return lines.join('\n');
}

const writeStdinParameters = z.object({
  session_id: z.string().min(1).describe('The session_id exec returned.'),
  chars: z
    .string()
    .optional()
    .describe('Text to send to stdin; end a line with \\n to submit it. Empty or omitted: just read new output.'),
  close_stdin: z.boolean().optional().describe('Close stdin after writing (sends end-of-file).'),
  terminate: z.boolean().optional().describe('Stop the command and everything it started.'),
  wait_for: z
    .string()
    .min(1)
    .optional()
    .describe('Return as soon as this text (or /regex/flags) appears in new output.'),
  yield_time_ms: z
    .number()
    .int()
    .min(0)
    .max(MAX_YIELD_TIME_MS)
    .optional()
    .describe(`How long to wait for output (default ${DEFAULT_POLL_MS}, or ${DEFAULT_WAIT_FOR_MS} with wait_for).`),
  max_output_chars: z
    .number()
    .int()
    .min(100)
    .max(MAX_SESSION_OUTPUT_CHARS)
    .optional()
    .describe(`Output budget in characters (default ${DEFAULT_SESSION_OUTPUT_CHARS}).`),
});

export function createWriteStdinTool(options: { sessions: ExecSessionManager }) {
  return defineTool({
    name: 'write_stdin',
    description:
      'Talk to a background exec session: send text to its stdin, read the output it produced since the last ' +
      'read, wait for some text to appear, close its stdin, or terminate it.',
    parameters: writeStdinParameters,
    async execute(args, ctx): Promise<ToolResult> {
      if (args.terminate && (args.chars || args.close_stdin || args.wait_for !== undefined)) {
        return fail('terminate must be used on its own.');
      }
      if (args.wait_for?.startsWith('/')) {
        try {
          compileWaitFor(args.wait_for);
        } catch (error) {
          return fail(`wait_for is not a valid regular expression: ${(error as Error).message}`);
        }
      }
      const result = await options.sessions.interact(args.session_id, ctx.sessionKey, {
        ...(args.chars !== undefined ? { chars: args.chars } : {}),
        ...(args.close_stdin ? { closeStdin: true } : {}),
        ...(args.terminate ? { terminate: true } : {}),
        ...(args.wait_for !== undefined ? { waitFor: args.wait_for } : {}),
        ...(args.yield_time_ms !== undefined ? { yieldMs: args.yield_time_ms } : {}),
      });
      if (typeof result === 'string') return fail(result);
      const text = formatSessionPoll(result, args.max_output_chars ?? DEFAULT_SESSION_OUTPUT_CHARS);
      return result.exit?.timedOut || result.exit?.spawnError !== undefined ? fail(text) : ok(text);
    },
  });
}

const seconds = (ms: number) => `${Math.round(ms / 1000)} s`;

export function createListExecSessionsTool(options: { sessions: ExecSessionManager }) {
  return defineTool({
    name: 'list_exec_sessions',
    description: 'List the background exec sessions of this chat: id, status, age, idle time, directory, command.',
    parameters: z.object({}),
    concurrencySafe: true,
    async execute(_args, ctx): Promise<ToolResult> {
      const sessions = options.sessions.list(ctx.sessionKey);
      if (sessions.length === 0) return ok('No exec sessions.');
      const lines = sessions.map((info) => {
        const command = info.command.replace(/\s+/g, ' ').trim();
        const status = info.running ? 'running' : `exited (${info.exitCode ?? 'killed'})`;
        return (
          `${info.id} | ${status} | age ${seconds(info.ageMs)} | idle ${seconds(info.idleMs)} | ` +
          `cwd ${info.cwd} | ${command.length > 120 ? `${command.slice(0, 117)}...` : command}`
        );
      });
      return ok(lines.join('\n'));
    },
  });
}
