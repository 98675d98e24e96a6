/**
 * `nanobot gateway`: run the long-lived gateway in the foreground, and `status`, `stop`, `logs`,
 * `install-service` to manage one that runs elsewhere (found through `<dataDir>/gateway.json`).
 */
import { execFileSync } from 'node:child_process';
import {
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readFileSync,
  readSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { createAgent } from '../../app/agent.js';
import { startGateway } from '../../app/gateway.js';
import { defaultConfigPath } from '../../config/load.js';
import { CronService } from '../../cron/service.js';
import { type Gateway, type GatewayContext, installSignalHandlers } from '../../gateway/lifecycle.js';
import { createGatewayLogger } from '../../gateway/log-file.js';
import { managerFor, planService, planUninstall, type ServiceManager } from '../../gateway/service.js';
import {
  autoCompactService,
  cronRunner,
  cronService,
  dreamService,
  heartbeatService,
  triggerService,
} from '../../gateway/services.js';
import { isProcessAlive, logFilePath, readState, removeState, stateFilePath } from '../../gateway/state-file.js';
import { secretsOf } from '../../security/secrets.js';
import { errorMessage, UserError } from '../../util/errors.js';
import { expandHome } from '../../util/fs.js';
import { PACKAGE_ROOT } from '../../util/paths.js';
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

export interface InstallServiceFlags {
  name?: string;
  dryRun?: boolean;
  manager?: ServiceManager;
  port?: string;
  /** false with --no-enable. */
  enable?: boolean;
  /** false with --no-start. */
  start?: boolean;
}

/** Where output goes; tests capture it. */
export interface CommandIo {
  out(text: string): void;
  env: NodeJS.ProcessEnv;
}

const defaultIo: CommandIo = { out: (text) => process.stdout.write(text), env: process.env };
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
  const gateway = await startGateway({
    loaded,
    log,
    logFile,
    ...(port === undefined ? {} : { port }),
    launchMode: opts.launchedInBackground ? 'background' : 'foreground',
    createAgent: (l, o) => createAgent(l, { ...o, cron, restart: () => restartSoon() }),
    services: [
      (context) => {
        gatewayContext = context;
        return cronService(cron, context.log);
      },
      heartbeatService,
      autoCompactService,
      dreamService,
      triggerService,
    ],
  });
  running = gateway;
  const uninstallSignals = installSignalHandlers(gateway, { log });
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

export async function installService(
  opts: GlobalOptions & InstallServiceFlags,
  io: CommandIo = defaultIo,
  run: (argv: string[]) => void = runCommand,
): Promise<string> {
  const manager = opts.manager ?? managerFor(process.platform);
  if (!manager)
    throw new UserError(`install-service supports Linux (systemd) and macOS (launchd), not ${process.platform}.`);
  const home = io.env.HOME ?? homedir();
  const args = [
    ...(opts.config ? ['--config', resolve(expandHome(opts.config, home))] : []),
    ...(opts.workspace ? ['--workspace', resolve(expandHome(opts.workspace, home))] : []),
    ...(opts.port === undefined ? [] : ['--port', String(parsePort(opts.port))]),
    ...(opts.verbose ? ['--verbose'] : []),
  ];
  const plan = planService(
    {
      name: opts.name ?? 'nanobot-gateway',
      node: process.execPath,
      bin: join(PACKAGE_ROOT, 'bin', 'nanobot.js'),
      args,
      home,
      ...(io.env.PATH ? { path: io.env.PATH } : {}),
      logFile: logFilePath(dataDirOf(opts, io.env)),
      ...(opts.enable === false ? { enable: false } : {}),
      ...(opts.start === false ? { start: false } : {}),
    },
    manager,
    process.getuid?.() ?? 501,
  );
  const commands = plan.commands.map((argv) => argv.join(' '));
  if (opts.dryRun) {
    io.out(`Would write ${plan.file}:\n\n${plan.content}\nThen run:\n${commands.map((c) => `  ${c}\n`).join('')}`);
  } else {
    mkdirSync(dirname(plan.file), { recursive: true });
    writeFileSync(plan.file, plan.content);
    io.out(`Wrote ${plan.file}\n`);
    for (const [i, argv] of plan.commands.entries()) {
      try {
        run(argv);
        io.out(`  ran: ${commands[i]}\n`);
      } catch (err) {
        // `launchctl bootout` of an agent that was never loaded fails; the bootstrap after it is what counts.
        if (argv[1] === 'bootout') continue;
        throw new UserError(
          `\`${commands[i]}\` failed: ${errorMessage(err)}`,
          `Run it yourself once the issue is fixed.`,
        );
      }
    }
  }
  io.out(`${plan.notes.map((n) => `${n}\n`).join('')}`);
  return plan.content;
}

export async function uninstallService(
  opts: GlobalOptions & InstallServiceFlags,
  io: CommandIo = defaultIo,
  run: (argv: string[]) => void = runCommand,
): Promise<void> {
  const manager = opts.manager ?? managerFor(process.platform);
  if (!manager)
    throw new UserError(`uninstall-service supports Linux (systemd) and macOS (launchd), not ${process.platform}.`);
  const home = io.env.HOME ?? homedir();
  const plan = planUninstall(opts.name ?? 'nanobot-gateway', home, manager, process.getuid?.() ?? 501);
  const commands = plan.commands.map((argv) => argv.join(' '));
  if (opts.dryRun) {
    io.out(`Would run:\n${commands.map((c) => `  ${c}\n`).join('')}and delete ${plan.file}\n`);
    return;
  }
  const [stop, ...rest] = plan.commands;
  // Stopping a unit that is not loaded fails; removing the file is what counts, so that step is best-effort.
  if (stop) tryRun(run, stop, io);
  if (existsSync(plan.file)) {
    rmSync(plan.file);
    io.out(`Deleted ${plan.file}\n`);
  } else {
    io.out(`No service file at ${plan.file}\n`);
  }
  for (const argv of rest) tryRun(run, argv, io);
}

function tryRun(run: (argv: string[]) => void, argv: string[], io: CommandIo): void {
  try {
    run(argv);
    io.out(`  ran: ${argv.join(' ')}\n`);
  } catch (err) {
    io.out(`  \`${argv.join(' ')}\` failed (${errorMessage(err)}); continuing\n`);
  }
}

function runCommand(argv: string[]): void {
  const [command = '', ...args] = argv;
  execFileSync(command, args, { stdio: ['ignore', 'ignore', 'pipe'] });
}

function dataDirOf(opts: GlobalOptions, env: NodeJS.ProcessEnv): string {
  const home = env.HOME ?? homedir();
  return dirname(resolve(expandHome(opts.config ?? defaultConfigPath(home), home)));
}

function parsePort(text: string): number {
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
