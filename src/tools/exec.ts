/**
 * exec: runs a shell command in the workspace. The guard (security/exec-guard.ts) runs first; the child
 * gets a scrubbed environment and, when configured, runs inside the bubblewrap sandbox; output is stdout,
 * then `STDERR:`, then `Exit code: N`, middle-cut when long. A non-zero exit is a normal result (the model
 * reads the code); a block, spawn failure or timeout is an error. With `yield_time_ms` (and a session
 * manager) a command still running after that long becomes a background session for write_stdin.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { z } from 'zod';
import { checkCommandUrls } from '../security/command-urls.js';
import { checkCommand } from '../security/exec-guard.js';
import type { NetworkPolicy } from '../security/network.js';
import {
  isVisibleInSandbox,
  planSandboxMounts,
  probeSandboxInBackground,
  resolveSandbox,
  type SandboxHost,
  type SandboxResolution,
  type SandboxSettings,
} from '../security/sandbox.js';
import { type PathPolicy, realpathNearest } from '../security/workspace.js';
import {
  buildChildEnv,
  defaultShell,
  formatExecOutput,
  runShell,
  type ShellLaunch,
  type ShellRun,
} from './exec-process.js';
import { type ExecSessionManager, formatSessionPoll, MAX_YIELD_TIME_MS } from './exec-sessions.js';
import { defineTool, fail, ok, type ToolContext, type ToolResult } from './types.js';

export { cutMiddle, formatExecOutput } from './exec-process.js';

export const DEFAULT_EXEC_TIMEOUT_S = 60;
export const MAX_EXEC_TIMEOUT_S = 600;
export const DEFAULT_MAX_OUTPUT_CHARS = 10_000;
export const MAX_OUTPUT_CHARS_LIMIT = 50_000;

export interface ExecToolOptions extends SandboxSettings {
  policy: PathPolicy;
  /** Default timeout in seconds when the model gives none (nanobot: 60). */
  timeout?: number;
  pathPrepend?: string;
  pathAppend?: string;
  /** Parent environment variables passed through to commands (everything else is withheld). */
  allowedEnvKeys?: string[];
  allowPatterns?: string[];
  denyPatterns?: string[];
  /** Source of HOME/LANG/TERM/PATH and allowed keys; defaults to process.env. */
  parentEnv?: NodeJS.ProcessEnv;
  /** Shell binary; defaults to /bin/bash, or /bin/sh without bash. */
  shell?: string;
  /** nanobot's data dir (config.json, sessions), hidden inside the sandbox; default `<home>/.nanobot`. */
  dataDir?: string;
  /** Directories the sandbox shows read-only even inside a hidden dir (the media dir). */
  sandboxReadOnlyDirs?: string[];
  /** Where the sandbox settings are checked against (tests); defaults to the real machine. */
  sandboxHost?: SandboxHost;
  /** Shared with write_stdin and list_exec_sessions; without it exec has no `yield_time_ms`. */
  sessions?: ExecSessionManager;
  /** Judges URLs named in commands (tools.ssrfWhitelist applies); without it only the built-in ranges count. */
  network?: NetworkPolicy;
}

const baseParameters = z.object({
  command: z
    .string()
    .min(1)
    .describe('The shell command to run.')
    .meta({ aliases: ['cmd'] }),
  working_dir: z.string().optional().describe('Directory to run in (default: the workspace).'),
  timeout: z
    .number()
    .int()
    .min(1)
    .max(MAX_EXEC_TIMEOUT_S)
    .optional()
    .describe('Timeout in seconds (1-600). Raise it for builds and installs.'),
  max_output_chars: z
    .number()
    .int()
    .min(100)
    .max(MAX_OUTPUT_CHARS_LIMIT)
    .optional()
    .describe(`Output budget in characters (default ${DEFAULT_MAX_OUTPUT_CHARS}, max ${MAX_OUTPUT_CHARS_LIMIT}).`),
});

const sessionParameters = baseParameters.extend({
  yield_time_ms: z
    .number()
    .int()
    .min(0)
    .max(MAX_YIELD_TIME_MS)
    .optional()
    .describe(
      'For servers, watchers and interactive programs: wait this long (max 30000 ms); if the command is still ' +
        'running it continues in the background and you get a session_id for write_stdin. A background ' +
        'session has no time limit unless you give timeout; it is stopped after 30 idle minutes.',
    ),
});

type ExecArgs = z.infer<typeof sessionParameters>;

export function createExecTool(options: ExecToolOptions) {
  const parentEnv = options.parentEnv ?? process.env;
  const shell = options.shell ?? defaultShell();
  const defaultTimeout = Math.min(options.timeout ?? DEFAULT_EXEC_TIMEOUT_S, MAX_EXEC_TIMEOUT_S);
  const { policy, sessions } = options;
  let sandbox: SandboxResolution | undefined;
  if (options.sandbox !== 'none' && options.sandbox !== '' && !options.sandboxHost) probeSandboxInBackground();
  const childHome = () => buildChildEnv(parentEnv, options).HOME ?? os.homedir();

  // Resolved on first use, from the bubblewrap probe started above (or, if it has not answered yet, a probe of its own).
  const getSandbox = (homeDir: string): SandboxResolution => {
    sandbox ??= resolveSandbox(
      options,
      {
        workspace: realpathNearest(policy.workspace),
        homeDir: path.resolve(homeDir),
        dataDir: path.resolve(options.dataDir ?? path.join(homeDir, '.nanobot')),
        readOnlyDirs: options.sandboxReadOnlyDirs ?? [],
        roBinds: options.sandboxRoBinds ?? [],
        rwBinds: options.sandboxRwBinds ?? [],
      },
      options.sandboxHost,
    );
    return sandbox;
  };

  const execute = async (args: ExecArgs, ctx: ToolContext): Promise<ToolResult> => {
    const requestedDir = args.working_dir?.trim() || policy.workspace;
    const resolved = policy.resolve(requestedDir, 'read');
    if (!resolved.ok) return fail(`working_dir rejected: ${resolved.error.replace(/^Error: /, '')}`);
    const cwd = resolved.path;
    if (!fs.statSync(cwd, { throwIfNoEntry: false })?.isDirectory()) {
      return fail(`working_dir ${requestedDir} does not exist or is not a directory.`);
    }

    const env = buildChildEnv(parentEnv, options);
    const verdict = checkCommand(args.command, {
      allowPatterns: options.allowPatterns ?? [],
      denyPatterns: options.denyPatterns ?? [],
      restrictToWorkspace: policy.restrictToWorkspace,
      workspace: policy.workspace,
      cwd,
      env: { ...env, PWD: cwd },
      homeDir: env.HOME,
    });
    if (!verdict.ok) return fail(verdict.reason);
    // Internal URLs (metadata, loopback, private ranges) named in the command: the sandbox's network cannot filter
    // addresses, so this check is what keeps `curl http://169.254.169.254/…` from running.
    const urls = checkCommandUrls(args.command, options.network);
    if (!urls.ok) return fail(urls.reason);

    const box = getSandbox(childHome());
    if (box.kind === 'unavailable') return fail(box.error);
    if (box.kind === 'bwrap' && !isVisibleInSandbox(cwd, planSandboxMounts(box.plan.layout, fs.existsSync))) {
      return fail(
        `working_dir ${cwd} is hidden inside the sandbox; only the workspace and sandboxRoBinds/sandboxRwBinds ` +
          'are visible there.',
      );
    }

    const maxChars = args.max_output_chars ?? DEFAULT_MAX_OUTPUT_CHARS;
    const launch: Omit<ShellLaunch, 'captureChars' | 'timeoutMs'> = {
      shell,
      command: args.command,
      cwd,
      env,
      signal: ctx.signal,
      ...(box.kind === 'bwrap' ? { sandbox: box.plan } : {}),
    };

    if (args.yield_time_ms !== undefined && sessions) {
      // A background session only has a hard limit when the model asked for one.
      const started = await sessions.start(
        { ...launch, ...(args.timeout === undefined ? {} : { timeoutMs: args.timeout * 1000 }) },
        { yieldMs: args.yield_time_ms, ...(ctx.sessionKey === undefined ? {} : { ownerKey: ctx.sessionKey }) },
      );
      if (started.kind === 'refused') return fail(started.reason);
      if (started.kind === 'background') {
        return ok(
          `${formatSessionPoll(started.poll, maxChars)}\nThe command is still running in the background. Use ` +
            `write_stdin with session_id "${started.poll.id}" to read more output, send input or terminate it.`,
        );
      }
      return finishedResult(started.run, maxChars, args.timeout ?? 0, box.kind === 'bwrap');
    }

    const timeout = args.timeout ?? defaultTimeout;
    const run = await runShell({ ...launch, timeoutMs: timeout * 1000, captureChars: Math.max(maxChars * 4, 65_536) });
    return finishedResult(run, maxChars, timeout, box.kind === 'bwrap');
  };

  // A getter: the sandbox line needs the sandbox resolved, which waits until someone asks.
  const describe = () => describeExec(policy.restrictToWorkspace, getSandbox(childHome()));
  if (sessions) {
    return defineTool({
      name: 'exec',
      get description() {
        return describe();
      },
      parameters: sessionParameters,
      execute,
    });
  }
  return defineTool({
    name: 'exec',
    get description() {
      return describe();
    },
    parameters: baseParameters,
    execute,
  });
}

const NETWORK_NOTES = {
  user: 'outbound network works, services on the host (localhost) do not',
  none: 'there is no network',
  host: "the host's network is shared",
} as const;

function describeExec(restricted: boolean, sandbox: SandboxResolution): string {
  let text =
    'Run a shell command and return its stdout, stderr and exit code. Runs in the workspace unless working_dir ' +
    `is given. Dangerous commands are blocked${restricted ? ', and paths must stay inside the workspace.' : '.'}`;
  if (sandbox.kind === 'bwrap') {
    text +=
      ' Commands run in a sandbox: only the workspace is writable (plus a private /tmp), the home directory is ' +
      `hidden, and ${NETWORK_NOTES[sandbox.plan.network]}.`;
  }
  return text;
}

const SANDBOX_NOT_FOUND_HINT =
  '\n(In the sandbox the home directory is hidden: a program installed under it, e.g. by nvm, pyenv or ' +
  'pip --user, needs its directory in tools.exec.sandboxRoBinds.)';

function finishedResult(run: ShellRun, maxChars: number, timeoutS: number, sandboxed: boolean): ToolResult {
  if (run.spawnError !== undefined) return fail(`Could not start the command: ${run.spawnError}`);
  const partial =
    run.stdout !== '' || run.stderr.trim() !== ''
      ? `\n\nOutput before it stopped:\n${formatExecOutput(run, maxChars)}`
      : '';
  if (run.timedOut) {
    return fail(`Command timed out after ${timeoutS} s; it and every process it started were killed.${partial}`);
  }
  if (run.aborted) return fail(`Command cancelled.${partial}`);
  const hint = sandboxed && run.exitCode === 127 ? SANDBOX_NOT_FOUND_HINT : '';
  return ok(formatExecOutput(run, maxChars) + hint);
}
