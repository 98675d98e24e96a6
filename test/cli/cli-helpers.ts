/** Runs the built `nanobot` binary in a throwaway HOME with a minimal environment (no real keys leak in). */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const BIN = join(import.meta.dirname, '..', '..', 'bin', 'nanobot.js');

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
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
    const child = spawn(process.execPath, [bin, ...args], {
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home, ...env },
      stdio: [input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
    });
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
