/**
 * The CLI's side of "config written by the UI = config written by the CLI" for Settings › Models: a twin home with
 * the gateway's starting config.json, and `nanobot onboard --wizard` (the built CLI) answered prompt by prompt.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'vitest';
import { eventually } from '../helpers/eventually.js';

const BIN = join(import.meta.dirname, '..', '..', 'bin', 'nanobot.js');

/** `nanobot onboard --wizard` answered through its prompts, each answer sent once its question is on screen. */
export async function runWizard(
  home: string,
  workspace: string,
  answers: { ask: string; send: string }[],
): Promise<string> {
  const child: ChildProcess = spawn(process.execPath, [BIN, 'onboard', '--wizard', '--workspace', workspace], {
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout?.on('data', (d: Buffer) => {
    output += d.toString();
  });
  child.stderr?.on('data', (d: Buffer) => {
    output += d.toString();
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
  try {
    let from = 0;
    for (const { ask, send } of answers) {
      const at = await eventually(
        () => {
          const index = output.indexOf(ask, from);
          expect(index, `waiting for "${ask}" in:\n${output}`).toBeGreaterThanOrEqual(0);
          return index;
        },
        { timeoutMs: 20_000, intervalMs: 20 },
      );
      from = at + ask.length;
      child.stdin?.write(send);
    }
    child.stdin?.end(); // the prompts keep reading stdin until it closes
    const code = await Promise.race([exited, new Promise((resolve) => setTimeout(() => resolve('timeout'), 20_000))]);
    expect(code, output).toBe(0);
  } finally {
    child.kill();
  }
  return output;
}

/** A home beside the test's with the gateway's starting config.json, for the CLI to change. */
export function twinHome(initial: string): { home: string; configPath: string } {
  const home = mkdtempSync(join(tmpdir(), 'nb-models-twin-'));
  mkdirSync(join(home, '.nanobot'), { recursive: true, mode: 0o700 });
  const configPath = join(home, '.nanobot', 'config.json');
  writeFileSync(configPath, initial);
  return { home, configPath };
}
