/**
 * `nanobot gateway`: run the long-lived gateway in the foreground, and `status`, `stop`, `logs` to manage one that
 * runs elsewhere (found through `<dataDir>/gateway.json`); `--background`/`restart` are in gateway-control.ts,
 * `install-service`/`uninstall-service` in gateway-service.ts.
 */
import { closeSync, existsSync, openSync, readFileSync, readSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, resolve } from 'node:path';
import { createAgent } from '../../app/agent.js';
import { startGateway } from '../../app/gateway.js';
import { defaultConfigPath } from '../../config/load.js';
import { CronService } from '../../cron/service.js';
import { type Gateway, type GatewayContext, installSignalHandlers } from '../../gateway/lifecycle.js';
import { createGatewayLogger } from '../../gateway/log-file.js';
import {
  autoCompactService,
  cronRunner,
  cronService,
  dreamService,
  heartbeatService,
  localTriggerService,
  triggerService,
} from '../../gateway/services.js';
import { isProcessAlive, logFilePath, readState, removeState, stateFilePath } from '../../gateway/state-file.js';
import { secretsOf } from '../../security/secrets.js';
import { errorMessage, UserError } from '../../util/errors.js';
import { expandHome } from '../../util/fs.js';
import { installLastResort } from '../last-resort.js';
import type { GlobalOptions } from '../main.js';
import { setup } from '../setup.js';
import { restartAfterShutdown } from './gateway-restart.js';

export interface GatewayFlags {
  port?: string;
  /** Set by `gateway --background` on the child it spawns. */
  launchedInBackground?: boolean;
  /** Set by the process that keeps an `exec`-mode gateway's pid (gateway-restart.ts). */
  underKeeper?: boolean;
}

export interface GatewayLogsFlags {
  tail?: string;
  follow?: boolean;
}

/** Where output goes; tests capture it. */
export interface CommandIo {
  out(text: string): void;
  env: NodeJS.ProcessEnv;
}

export const defaultIo: CommandIo = { out: (text) => process.stdout.write(text), env: process.env };
const STOP_WAIT_S = 20;
const KILL_WAIT_MS = 2_000;

/** Foreground run; returns after a signal-driven shutdown (the signal handler exits the process). */
export async function runGateway(opts: GlobalOptions & GatewayFlags): Promise<void> {
  const { loaded } = await setup(opts);
  const logFile = logFilePath(loaded.dataDir);
  const log = createGatewayLogger({ level: opts.verbose ? 'debug' : 'info', file: logFile });
  const port = opts.port === undefined ? undefined : parsePort(opts.port);
  let running: Gateway | undefined;
  // From here on, a failure nobody handled is logged rather than ending the process (see last-resort.ts).
  installLastResort({
    surface: 'gateway',
    log,
    secrets: () => secretsOf((running?.loaded() ?? loaded).config),
    shutdown: () => running?.shutdown('uncaught exception') ?? Promise.resolve(),
  });
  // The cron tool in every agent (also after a config reload) writes to the one service the gateway runs.
  let gatewayContext: GatewayContext | undefined;
  const cron = new CronService({
    workspace: loaded.workspace,
    timezone: loaded.config.agents.defaults.timezone,
    log,
    onRun: (job) => {
      if (!gatewayContext) return Promise.resolve({ status: 'error' as const, error: 'the gateway is still starting' });
      return cronRunner(gatewayContext)(job);
    },
  });
  // A stop asked for while it starts (`gateway --background && gateway stop`) waits until it can drain cleanly.
  const early = deferStopSignals();
  const gateway = await startGateway({
    loaded,
    log,
    logFile,
    ...(port === undefined ? {} : { port }),
    launchMode: opts.launchedInBackground ? 'background' : 'foreground',
    createAgent: (l, o) => createAgent(l, { ...o, cron, restart: () => restartSoon() }),
    runCronJob: (id) => cron.runNow(id),
    cron,
    services: [
      (context) => {
        gatewayContext = context;
        return cronService(cron, context.log);
      },
      heartbeatService,
      autoCompactService,
      dreamService,
      triggerService,
      localTriggerService,
    ],
  }).catch((err: unknown) => {
    early.release();
    throw err;
  });
  running = gateway;
  const uninstallSignals = installSignalHandlers(gateway, { log });
  const pending = early.release();
  if (pending) process.kill(process.pid, pending);
  // /restart: reply first, then shut down cleanly and start again the way gateway.restartMode says.
  const restartSoon = () => {
    setTimeout(() => {
      const mode = gateway.loaded().config.gateway.restartMode;
      gateway.shutdown('restart').then(
        () => {
          uninstallSignals();
          restartAfterShutdown(mode, { log, underKeeper: opts.underKeeper === true });
        },
        (err: unknown) => {
          log.error(`gateway: restart failed: ${errorMessage(err)}`);
          process.exit(1);
        },
      );
    }, 500);
  };
  await gateway.closed;
}

/**
 * SIGTERM/SIGINT during start-up (before the gateway's own handlers exist) would kill it mid-way and leave its state
 * file behind; they are kept and re-sent once it is up. A second one exits at once, as it does later.
 */
function deferStopSignals(): { release(): NodeJS.Signals | undefined } {
  let pending: NodeJS.Signals | undefined;
  const onSignal = (signal: NodeJS.Signals) => {
    if (pending) process.exit(1);
    pending = signal;
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  return {
    release() {
      process.off('SIGTERM', onSignal);
      process.off('SIGINT', onSignal);
      return pending;
    },
  };
}

export interface GatewayStatus {
  running: boolean;
  pid?: number;
  port?: number;
  health?: Record<string, unknown>;
}

export async function gatewayStatus(opts: GlobalOptions, io: CommandIo = defaultIo): Promise<GatewayStatus> {
  const dataDir = dataDirOf(opts, io.env);
  const state = readState(dataDir);
  if (!state) {
    io.out('Gateway: not running\n');
    process.exitCode = 1;
    return { running: false };
  }
  if (!isProcessAlive(state.pid)) {
    io.out(`Gateway: not running (stale ${stateFilePath(dataDir)} names pid ${state.pid})\n`);
    process.exitCode = 1;
    return { running: false, pid: state.pid };
  }
  const health = await fetchHealth(state.host, state.port);
  const base = { running: true, pid: state.pid, port: state.port };
  if (!health) {
    io.out(`Gateway: pid ${state.pid} is alive but http://${state.host}:${state.port}/health does not answer\n`);
    process.exitCode = 1;
    return base;
  }
  const uptime = typeof health.uptimeS === 'number' ? ` · up ${formatDuration(health.uptimeS)}` : '';
  const model = typeof health.model === 'string' ? ` · ${health.model} via ${String(health.provider)}` : '';
  io.out(`Gateway: running (pid ${state.pid}, port ${state.port}${uptime}${model})\n`);
  const channels = health.channels;
  if (channels && typeof channels === 'object') {
    for (const [name, status] of Object.entries(channels)) io.out(`  ${name}: ${String(status)}\n`);
  }
  return { ...base, health };
}

export async function gatewayStop(
  opts: GlobalOptions & { timeout?: string },
  io: CommandIo = defaultIo,
): Promise<boolean> {
  const timeoutS = opts.timeout === undefined ? STOP_WAIT_S : parseSeconds(opts.timeout);
  const dataDir = dataDirOf(opts, io.env);
  const state = readState(dataDir);
  if (!state || !isProcessAlive(state.pid)) {
    io.out('Gateway: not running\n');
    return false;
  }
  if (!(await looksLikeGateway(state.pid, state.host, state.port))) {
    throw new UserError(
      `pid ${state.pid} from ${stateFilePath(dataDir)} does not look like a nanobot gateway; not stopping it.`,
      'If the gateway is gone, delete that file.',
    );
  }
  process.kill(state.pid, 'SIGTERM');
  if (await exitedWithin(state.pid, timeoutS * 1000)) {
    io.out(`Gateway stopped (pid ${state.pid})\n`);
    return true;
  }
  // As nanobot does: past the timeout, SIGKILL its process group (its MCP servers and shells too).
  killGroup(state.pid);
  if (await exitedWithin(state.pid, KILL_WAIT_MS)) {
    removeState(dataDir, state.pid);
    io.out(`Gateway (pid ${state.pid}) did not exit within ${timeoutS} s of SIGTERM; killed it (SIGKILL)\n`);
    return true;
  }
  io.out(`Gateway (pid ${state.pid}) is still running after SIGKILL; check \`nanobot gateway logs\`\n`);
  process.exitCode = 1;
  return false;
}

async function exitedWithin(pid: number, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (!isProcessAlive(pid)) return true;
    await new Promise((r) => setTimeout(r, 100));
  }
  return !isProcessAlive(pid);
}

function killGroup(pid: number): void {
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    try {
      process.kill(pid, 'SIGKILL'); // not a group leader
    } catch {
      // already gone
    }
  }
}

function parseSeconds(text: string): number {
  const seconds = Number(text);
  if (!Number.isFinite(seconds) || seconds < 0) throw new UserError(`--timeout expects seconds, got "${text}"`);
  return seconds;
}

export async function gatewayLogs(
  opts: GlobalOptions & GatewayLogsFlags,
  io: CommandIo = defaultIo,
  signal?: AbortSignal,
): Promise<void> {
  const dataDir = dataDirOf(opts, io.env);
  const file = readState(dataDir)?.logFile ?? logFilePath(dataDir);
  const tail = opts.tail === undefined ? 200 : Number.parseInt(opts.tail, 10);
  if (!Number.isFinite(tail) || tail < 0) throw new UserError(`--tail expects a number of lines, got "${opts.tail}"`);
  if (!existsSync(file) && !opts.follow) {
    io.out(`No gateway log yet (${file})\n`);
    return;
  }
  let offset = 0;
  if (existsSync(file)) {
    const text = readFileSync(file, 'utf8');
    const lines = text.split('\n');
    if (lines.at(-1) === '') lines.pop();
    if (tail > 0) io.out(`${lines.slice(-tail).join('\n')}\n`);
    offset = Buffer.byteLength(text);
  }
  if (!opts.follow) return;
  const stop = signal ?? interruptSignal();
  while (!stop.aborted) {
    await new Promise((r) => setTimeout(r, 300));
    offset = printAppended(file, offset, io);
  }
}

export function dataDirOf(opts: GlobalOptions, env: NodeJS.ProcessEnv): string {
  const home = env.HOME ?? homedir();
  return dirname(resolve(expandHome(opts.config ?? defaultConfigPath(home), home)));
}

export function parsePort(text: string): number {
  const port = Number(text);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new UserError(`--port expects 0–65535, got "${text}"`);
  return port;
}

export async function fetchHealth(host: string, port: number): Promise<Record<string, unknown> | undefined> {
  const target = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host.includes(':') ? `[${host}]` : host;
  try {
    const res = await fetch(`http://${target}:${port}/health`, { signal: AbortSignal.timeout(2_000) });
    if (!res.ok) return undefined;
    return (await res.json()) as Record<string, unknown>;
  } catch {
    return undefined;
  }
}

/** Guards against a stale state file whose pid now belongs to another program. */
async function looksLikeGateway(pid: number, host: string, port: number): Promise<boolean> {
  if (await fetchHealth(host, port)) return true;
  try {
    const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    return cmdline.includes('gateway');
  } catch {
    return true; // No /proc (macOS): trust the state file.
  }
}

function printAppended(file: string, offset: number, io: CommandIo): number {
  let size: number;
  try {
    size = statSync(file).size;
  } catch {
    return offset;
  }
  if (size < offset) offset = 0; // rotated
  if (size === offset) return offset;
  const fd = openSync(file, 'r');
  try {
    const buffer = Buffer.alloc(size - offset);
    readSync(fd, buffer, 0, buffer.length, offset);
    io.out(buffer.toString('utf8'));
  } finally {
    closeSync(fd);
  }
  return size;
}

function interruptSignal(): AbortSignal {
  const controller = new AbortController();
  process.once('SIGINT', () => controller.abort());
  return controller.signal;
}

function formatDuration(seconds: number): string {
  if (seconds < 120) return `${seconds} s`;
  if (seconds < 7200) return `${Math.round(seconds / 60)} min`;
  return `${(seconds / 3600).toFixed(1)} h`;
}
