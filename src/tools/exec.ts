/**
 * exec: runs a shell command in the workspace. The guard (security/exec-guard.ts) runs first; the child
 * gets a scrubbed environment; output is stdout, then `STDERR:`, then `Exit code: N`, middle-cut when long.
 * A non-zero exit is a normal result (the model reads the code); a block, spawn failure or timeout is an error.
 */
import fs from 'node:fs';
import os from 'node:os';
import { z } from 'zod';
import { checkCommand } from '../security/exec-guard.js';
import type { PathPolicy } from '../security/workspace.js';
import { buildChildEnv, defaultShell, runShell, type ShellRun } from './exec-process.js';
import { defineTool, fail, ok, type ToolResult } from './types.js';

export const DEFAULT_EXEC_TIMEOUT_S = 60;
export const MAX_EXEC_TIMEOUT_S = 600;
export const DEFAULT_MAX_OUTPUT_CHARS = 10_000;
export const MAX_OUTPUT_CHARS_LIMIT = 50_000;

export interface ExecToolOptions {
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
}

const parameters = z.object({
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

function exitLine(run: ShellRun): string {
  if (run.exitCode !== null) return `Exit code: ${run.exitCode}`;
  const number = run.signal ? os.constants.signals[run.signal] : undefined;
  return number === undefined ? 'Exit code: unknown' : `Exit code: ${128 + number} (killed by ${run.signal})`;
}

export function formatExecOutput(run: ShellRun, maxChars: number): string {
  const parts: string[] = [];
  const stdout = run.stdout.replace(/\n$/, '');
  const stderr = run.stderr.replace(/\n$/, '');
  if (stdout !== '') parts.push(stdout);
  if (stderr.trim() !== '') parts.push(`STDERR:\n${stderr}`);
  if (parts.length === 0) parts.push('(no output)');
  parts.push(exitLine(run));
  return cutMiddle(parts.join('\n'), maxChars);
}

export function createExecTool(options: ExecToolOptions) {
  const parentEnv = options.parentEnv ?? process.env;
  const shell = options.shell ?? defaultShell();
  const defaultTimeout = Math.min(options.timeout ?? DEFAULT_EXEC_TIMEOUT_S, MAX_EXEC_TIMEOUT_S);
  const { policy } = options;

  return defineTool({
    name: 'exec',
    description:
      'Run a shell command and return its stdout, stderr and exit code. Runs in the workspace unless working_dir ' +
      'is given. Dangerous commands are blocked' +
      (policy.restrictToWorkspace ? ', and paths must stay inside the workspace.' : '.'),
    parameters,
    async execute(args, ctx): Promise<ToolResult> {
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

      const timeout = args.timeout ?? defaultTimeout;
      const maxChars = args.max_output_chars ?? DEFAULT_MAX_OUTPUT_CHARS;
      const run = await runShell({
        shell,
        command: args.command,
        cwd,
        env,
        timeoutMs: timeout * 1000,
        signal: ctx.signal,
        captureBytes: Math.max(maxChars * 4, 64 * 1024),
      });

      if (run.spawnError !== undefined) return fail(`Could not start the command: ${run.spawnError}`);
      const partial =
        run.stdout !== '' || run.stderr.trim() !== ''
          ? `\n\nOutput before it stopped:\n${formatExecOutput(run, maxChars)}`
          : '';
      if (run.timedOut) {
        return fail(`Command timed out after ${timeout} s; it and every process it started were killed.${partial}`);
      }
      if (run.aborted) return fail(`Command cancelled.${partial}`);
      return ok(formatExecOutput(run, maxChars));
    },
  });
}
