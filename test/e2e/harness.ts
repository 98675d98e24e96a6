/**
 * The end-to-end lane: the built package as a user installs it (bin/, dist/, skills/, templates/ and package.json,
 * with no node_modules), driven through `nanobot` against loopback fakes. A bundling mistake (a dependency esbuild
 * wired wrongly, a module dist/ expects to find in node_modules) fails here, while the tests over src/ stay green.
 */
import type { ChildProcess } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { type CliResult, runCli, spawnCli, tempHome } from '../cli/cli-helpers.js';
import type { FakeRequest } from '../helpers/fake-llm.js';
import { waitFor } from '../mcp/helpers.js';

const ROOT = join(import.meta.dirname, '..', '..');
let installed: string | undefined;

/** bin/nanobot.js of a copy of the package's files (once per test file; vitest's global setup built dist/). */
export function installedBin(): string {
  if (!installed) {
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { files: string[] };
    const dir = mkdtempSync(join(tmpdir(), 'nb-e2e-pkg-'));
    for (const entry of [...pkg.files, 'package.json'])
      cpSync(join(ROOT, entry), join(dir, entry), { recursive: true });
    installed = join(dir, 'bin', 'nanobot.js');
  }
  return installed;
}

/** Removes the copy (call in afterAll). */
export function removeInstalledCopy(): void {
  if (installed) rmSync(dirname(dirname(installed)), { recursive: true, force: true });
  installed = undefined;
}

export function nanobot(args: string[], home: string, env: Record<string, string> = {}): Promise<CliResult> {
  return runCli(args, home, env, undefined, installedBin());
}

/**
 * A fresh HOME whose ~/.nanobot/config.json talks to the fake LLM (OpenAI wire) and has no heartbeat; `extra` is
 * merged in at the top level (e.g. `tools`, `channels`, `api`). Returns the home and its workspace.
 */
export function homeWith(llmUrl: string, extra: Record<string, unknown> = {}): { home: string; workspace: string } {
  const home = tempHome();
  const workspace = join(home, '.nanobot', 'workspace');
  // 0700, as nanobot makes it (a looser ~/.nanobot is tightened with a note on stderr).
  mkdirSync(join(home, '.nanobot'), { mode: 0o700 });
  mkdirSync(workspace);
  const config = {
    agents: { defaults: { provider: 'custom', model: 'test-model' } },
    providers: { custom: { apiKey: 'test-key', apiBase: `${llmUrl}/v1` } },
    gateway: { heartbeat: { enabled: false } },
    ...extra,
  };
  writeFileSync(join(home, '.nanobot', 'config.json'), JSON.stringify(config, null, 2));
  return { home, workspace };
}

/** The text of every tool result the model was sent in one request, in order. */
export function toolResults(request: FakeRequest | undefined): string[] {
  const messages = (request?.body.messages ?? []) as { role?: string; content?: unknown }[];
  return messages
    .filter((m) => m.role === 'tool')
    .map((m) => (typeof m.content === 'string' ? m.content : JSON.stringify(m.content)));
}

/** The last tool result in a request: what the model saw of the call it made in the step before. */
export const lastToolResult = (request: FakeRequest | undefined): string => toolResults(request).at(-1) ?? '';

export interface RunningNanobot {
  child: ChildProcess;
  /** stdout and stderr so far. */
  output(): string;
  /** Waits (bounded) until the output matches. */
  waitForOutput(pattern: RegExp, what: string, timeoutMs?: number): Promise<void>;
  /** SIGTERM, then the exit code. */
  stop(): Promise<number | null>;
}

/** A long-running command (`serve`, `gateway`) of the installed copy. */
export function startNanobot(args: string[], home: string): RunningNanobot {
  const { child, output, exited } = spawnCli(args, home, { bin: installedBin() });
  return {
    child,
    output,
    async waitForOutput(pattern, what, timeoutMs = 15_000) {
      await waitFor(
        () => pattern.test(output()) || child.exitCode !== null,
        `${what}; output so far:\n${output()}`,
        timeoutMs,
      );
      if (!pattern.test(output())) throw new Error(`nanobot ${args[0]} exited before ${what}:\n${output()}`);
    },
    stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      return exited;
    },
  };
}
