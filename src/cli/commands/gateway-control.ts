/**
 * `nanobot gateway --background`, `gateway restart` and `gateway stop --timeout`: a gateway that runs detached,
 * found again through `<dataDir>/gateway.json` (which records whether it was started in the background, so a
 * restart never turns a gateway someone runs in a terminal or under a service manager into a stray copy).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { isProcessAlive, logFilePath, readState } from '../../gateway/state-file.js';
import { UserError } from '../../util/errors.js';
import { PACKAGE_ROOT } from '../../util/paths.js';
import type { GlobalOptions } from '../main.js';
import { setup } from '../setup.js';
import { type CommandIo, fetchHealth, gatewayStop } from './gateway.js';

const defaultIo: CommandIo = { out: (text) => process.stdout.write(text), env: process.env };
const START_WAIT_MS = 30_000;

/** The hidden flag a background start passes its child; the child records `launchMode: "background"`. */
export const BACKGROUND_CHILD_FLAG = '--launched-in-background';

export interface BackgroundFlags {
  port?: string;
}

export interface StartedGateway {
  pid: number;
  port: number;
}

/**
 * Spawns `nanobot gateway` detached (its own session: the terminal's Ctrl+C does not reach it), output appended to
 * the gateway log. Returns the child; callers wait for it with `waitForGateway`.
 */
export function spawnBackgroundGateway(
  opts: GlobalOptions & BackgroundFlags,
  dataDir: string,
  env: NodeJS.ProcessEnv,
): ChildProcess {
  const args = [
    join(PACKAGE_ROOT, 'bin', 'nanobot.js'),
    'gateway',
    ...(opts.config ? ['--config', resolve(opts.config)] : []),
    ...(opts.workspace ? ['--workspace', resolve(opts.workspace)] : []),
    ...(opts.port !== undefined ? ['--port', opts.port] : []),
    ...(opts.verbose ? ['--verbose'] : []),
    BACKGROUND_CHILD_FLAG,
  ];
  // Its own log file takes everything; early crashes (before the logger exists) land here too.
  const logFile = logFilePath(dataDir);
  mkdirSync(dirname(logFile), { recursive: true });
  const out = openSync(logFile, 'a');
  try {
    const child = spawn(process.execPath, args, { detached: true, stdio: ['ignore', out, out], env });
    child.unref();
    return child;
  } finally {
    closeSync(out);
  }
}

/** Resolves once the child wrote gateway.json and answers /health; undefined when it exited or never came up. */
export async function waitForGateway(
  child: ChildProcess,
  dataDir: string,
  timeoutMs = START_WAIT_MS,
): Promise<StartedGateway | undefined> {
  let exited = child.exitCode !== null || child.signalCode !== null;
  child.once('exit', () => {
    exited = true;
  });
  const deadline = Date.now() + timeoutMs;
  while (!exited && Date.now() < deadline) {
    const state = readState(dataDir, () => {});
    if (state && state.pid === child.pid && (await fetchHealth(state.host, state.port))) {
      return { pid: state.pid, port: state.port };
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return undefined;
}

/** `nanobot gateway --background`. */
export async function gatewayBackground(
  opts: GlobalOptions & BackgroundFlags,
  io: CommandIo = defaultIo,
): Promise<StartedGateway | undefined> {
  // Loading first shows a config error here, in the terminal, instead of in a log nobody reads.
  const { loaded } = await setup(opts, io.env);
  const state = readState(loaded.dataDir);
  if (state && isProcessAlive(state.pid)) {
    if (state.launchMode === 'background') {
      io.out(`Gateway is already running in the background (pid ${state.pid}, port ${state.port}).\n`);
      return { pid: state.pid, port: state.port };
    }
    io.out(
      `Gateway is already running (pid ${state.pid}, port ${state.port}), ${attachedWhere(state.launchMode)}.\n` +
        'Stop it there (or with `nanobot gateway stop`), then run `nanobot gateway --background`.\n',
    );
    process.exitCode = 1;
    return undefined;
  }
  return startAndReport(opts, loaded.dataDir, io, 'started');
}

/** `nanobot gateway restart`: stop the background gateway (as `stop --timeout` does) and start it again. */
export async function gatewayRestart(
  opts: GlobalOptions & BackgroundFlags & { timeout?: string },
  io: CommandIo = defaultIo,
): Promise<StartedGateway | undefined> {
  const { loaded } = await setup(opts, io.env);
  const state = readState(loaded.dataDir);
  if (!state || !isProcessAlive(state.pid)) {
    io.out(
      'Gateway is not running; there is nothing to restart.\n' +
        'Start a persistent gateway with `nanobot gateway --background`.\n',
    );
    process.exitCode = 1;
    return undefined;
  }
  if (state.launchMode !== 'background') {
    io.out(
      `Gateway (pid ${state.pid}) is ${attachedWhere(state.launchMode)} and cannot be restarted as a background process.\n` +
        'Restart it there, or stop it and run `nanobot gateway --background`.\n',
    );
    process.exitCode = 1;
    return undefined;
  }
  if (!(await gatewayStop(opts, io))) {
    process.exitCode = 1;
    return undefined;
  }
  return startAndReport(opts, loaded.dataDir, io, 'restarted');
}

async function startAndReport(
  opts: GlobalOptions & BackgroundFlags,
  dataDir: string,
  io: CommandIo,
  verb: 'started' | 'restarted',
): Promise<StartedGateway | undefined> {
  const child = spawnBackgroundGateway(opts, dataDir, io.env);
  const started = await waitForGateway(child, dataDir);
  const logFile = logFilePath(dataDir);
  if (!started) {
    const alive = child.pid !== undefined && isProcessAlive(child.pid);
    throw new UserError(
      alive
        ? `The gateway (pid ${child.pid}) did not answer within ${START_WAIT_MS / 1000} s.`
        : `The gateway exited during start-up.${lastLines(logFile)}`,
      `See \`nanobot gateway logs\` (${logFile}).`,
    );
  }
  io.out(
    `Gateway ${verb} in the background (pid ${started.pid}, port ${started.port}).\n` +
      `Logs: ${logFile} (\`nanobot gateway logs -f\`) · stop it with \`nanobot gateway stop\`\n`,
  );
  return started;
}

function attachedWhere(mode: 'foreground' | 'background' | undefined): string {
  return mode === 'foreground'
    ? 'attached to a terminal or a service manager'
    : 'started by an older version that did not record how it was launched';
}

function lastLines(file: string, count = 5): string {
  if (!existsSync(file)) return '';
  const lines = readFileSync(file, 'utf8').trimEnd().split('\n').slice(-count);
  return lines.length ? `\nLast lines of the log:\n${lines.map((l) => `  ${l}`).join('\n')}` : '';
}
