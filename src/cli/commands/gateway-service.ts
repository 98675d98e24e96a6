/**
 * `nanobot gateway install-service` / `uninstall-service`: write (or remove) the systemd user unit or launchd agent
 * planned by src/gateway/service.ts, and run the manager's commands.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { managerFor, planService, planUninstall, type ServiceManager } from '../../gateway/service.js';
import { logFilePath } from '../../gateway/state-file.js';
import { errorMessage, UserError } from '../../util/errors.js';
import { expandHome } from '../../util/fs.js';
import { PACKAGE_ROOT } from '../../util/paths.js';
import type { GlobalOptions } from '../main.js';
import { type CommandIo, dataDirOf, defaultIo, parsePort } from './gateway.js';

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
