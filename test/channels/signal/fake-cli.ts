/** A `signal-cli` executable for tests: a wrapper running fake-signal-cli-bin.mjs with this Node, and its log. */
import { chmodSync, existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FakeSignalCli } from './fake-signal-cli.js';

const SCRIPT = join(import.meta.dirname, 'fake-signal-cli-bin.mjs');

export interface FakeCliOptions {
  /** The in-process fake daemon the fake `daemon` command passes connections to. */
  upstream?: FakeSignalCli;
  mode?: 'daemon-dies' | 'link-timeout';
  linkNumber?: string;
  accounts?: string[];
}

export interface FakeCli {
  dir: string;
  /** The executable: `<dir>/signal-cli`. */
  path: string;
  /** What the executable reads (add to the environment of whatever runs it, with PATH if it should be found). */
  env: Record<string, string>;
  /** Each run's pid and arguments, in order. */
  runs(): { pid: number; args: string[] }[];
}

export function fakeSignalCliBin(options: FakeCliOptions = {}): FakeCli {
  const dir = mkdtempSync(join(tmpdir(), 'fake-signal-cli-'));
  const path = join(dir, 'signal-cli');
  writeFileSync(path, `#!/bin/sh\nexec "${process.execPath}" "${SCRIPT}" "$@"\n`);
  chmodSync(path, 0o755);
  const log = join(dir, 'runs.jsonl');
  const env: Record<string, string> = { FAKE_SIGNAL_LOG: log };
  if (options.upstream) env.FAKE_SIGNAL_UPSTREAM = `127.0.0.1:${options.upstream.port}`;
  if (options.mode) env.FAKE_SIGNAL_MODE = options.mode;
  if (options.linkNumber) env.FAKE_SIGNAL_LINK_NUMBER = options.linkNumber;
  if (options.accounts) env.FAKE_SIGNAL_ACCOUNTS = JSON.stringify(options.accounts.map((number) => ({ number })));
  return {
    dir,
    path,
    env,
    runs: () =>
      existsSync(log)
        ? readFileSync(log, 'utf8')
            .split('\n')
            .filter(Boolean)
            .map((line) => JSON.parse(line) as { pid: number; args: string[] })
        : [],
  };
}

/** A port nothing listens on right now (for a daemon the channel starts itself). */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
