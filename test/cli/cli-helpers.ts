/** Runs the built `nanobot` binary in a throwaway HOME with a minimal environment (no real keys leak in). */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const BIN = join(import.meta.dirname, '..', '..', 'bin', 'nanobot.js');

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Every child still running when this test file's worker exits is killed: a test that timed out leaves none. */
const children = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of children) child.kill('SIGKILL');
});
function track(child: ChildProcess): ChildProcess {
  children.add(child);
  child.once('exit', () => children.delete(child));
  return child;
}

export function tempHome(): string {
  return mkdtempSync(join(tmpdir(), 'nb-home-'));
}

export function runCli(
  args: string[],
  home: string,
  env: Record<string, string> = {},
  input?: string,
  /** Another copy of bin/nanobot.js (the e2e lane runs an installed copy of the package). */
  bin: string = BIN,
): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = track(
      spawn(process.execPath, [bin, ...args], {
        env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home, ...env },
        stdio: [input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
      }),
    );
    if (input !== undefined) child.stdin?.end(input);
    let stdout = '';
    let stderr = '';
    child.stdout?.on('data', (d: Buffer) => {
      stdout += d.toString();
    });
    child.stderr?.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr }));
  });
}

/** A long-running `nanobot` (`serve`, `gateway`): its stdout and stderr collected together, and its exit. */
export interface SpawnedCli {
  child: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
}

export function spawnCli(
  args: string[],
  home: string,
  options: { env?: Record<string, string>; bin?: string; nodeArgs?: string[] } = {},
): SpawnedCli {
  const child = track(
    spawn(process.execPath, [...(options.nodeArgs ?? []), options.bin ?? BIN, ...args], {
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home, ...options.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    }),
  );
  let output = '';
  const collect = (d: Buffer) => {
    output += d.toString();
  };
  child.stdout?.on('data', collect);
  child.stderr?.on('data', collect);
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, output: () => output, exited };
}

export interface ConfigJson {
  agents: { defaults: Record<string, unknown> };
  providers: Record<string, Record<string, unknown>>;
  [key: string]: unknown;
}

export function editConfig(home: string, edit: (config: ConfigJson) => void): void {
  const path = join(home, '.nanobot', 'config.json');
  const config = JSON.parse(readFileSync(path, 'utf8')) as ConfigJson;
  edit(config);
  writeFileSync(path, JSON.stringify(config, null, 2));
}

/** stderr without the one line a first run prints when it creates `~/.nanobot/config.json`. */
export function withoutFirstRunNote(stderr: string): string {
  return stderr.replace(/^nanobot: created \S+config\.json with the defaults [^\n]*\n/, '');
}
