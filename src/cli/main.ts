/**
 * The `nanobot` command line. Commands load their implementation lazily so `nanobot --version` and
 * `nanobot agent -m` pay only for what they use.
 */
import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import { errorMessage, FileWriteError, UserError } from '../util/errors.js';
import { packageVersion } from '../util/paths.js';
import type { TriggerFlags } from './commands/trigger.js';

export interface GlobalOptions {
  config?: string;
  workspace?: string;
  verbose?: boolean;
}

export function version(): string {
  return packageVersion();
}

function withCommon(command: Command, verboseShort = true): Command {
  return command
    .option('-c, --config <path>', 'config file (default ~/.nanobot/config.json)')
    .option('-w, --workspace <dir>', 'workspace directory (default agents.defaults.workspace)')
    .option(verboseShort ? '-v, --verbose' : '--verbose', 'show debug logs and stack traces');
}

const COMMON_KEYS = ['config', 'workspace', 'verbose'] as const;

/**
 * `nanobot -c FILE status` and `nanobot gateway -c FILE status`: a common option given before the sub-command
 * applies to it unless the sub-command sets its own (positional options keep `-v` = `--version` at the top and
 * `-v` = `--verbose` after a command name, as nanobot's CLI has them).
 */
function inheritCommonOptions(_program: Command, action: Command): void {
  for (let parent = action.parent; parent; parent = parent.parent) {
    for (const key of COMMON_KEYS) {
      const value: unknown = parent.getOptionValue(key);
      if (value !== undefined && action.getOptionValue(key) === undefined) action.setOptionValue(key, value);
    }
  }
}

function buildProgram(): Command {
  const program = new Command('nanobot')
    .description('nanobot — a personal AI agent you own')
    .version(version(), '-v, --version', 'print the version')
    .exitOverride()
    .enablePositionalOptions()
    .configureOutput({ writeErr: (s) => process.stderr.write(s) })
    .hook('preAction', inheritCommonOptions);
  withCommon(program, false);

  withCommon(program.command('onboard'))
    .description('create ~/.nanobot/config.json and the workspace (only what is missing)')
    .option('--wizard', 'ask for provider, API key and model')
    .option('--refresh', 'add missing keys, keep every value, never prompt (what onboard always does here)')
    .action(async (opts: GlobalOptions & { wizard?: boolean }) => {
      const { runOnboard } = await import('./commands/onboard.js');
      return runOnboard(opts);
    });

  withCommon(program.command('agent'))
    .description('talk to the agent: one message with -m, else an interactive chat')
    .option('-m, --message <text>', 'send one message, print the answer and exit')
    .option('-s, --session <id>', 'session id (default cli:direct)', 'cli:direct')
    .option('--markdown', 'render answers as Markdown', true)
    .option('--no-markdown', 'print answers as plain text')
    .option('--logs', 'show runtime logs while chatting')
    .option('--no-logs', 'hide runtime logs (default)')
    .option('--classic', "accepted for nanobot's scripts: this version has one prompt, the classic one")
    .option('--no-tui', 'the same as --classic')
    .addOption(
      new Option(
        '--theme <theme>',
        "auto, dark or light: accepted for nanobot's scripts; this prompt uses your terminal's colours",
      ).argParser((value: string) => {
        const theme = value.trim().toLowerCase();
        if (!['auto', 'dark', 'light'].includes(theme)) {
          throw new InvalidArgumentError('must be auto, dark or light');
        }
        return theme;
      }),
    )
    .action(async (opts: GlobalOptions & AgentFlags) => {
      const { runAgent } = await import('./commands/agent.js');
      return runAgent(opts);
    });

  withCommon(program.command('serve'))
    .description('serve the OpenAI-compatible API (default http://127.0.0.1:8900/v1)')
    .option('-p, --port <port>', 'port (default api.port)')
    .option('-H, --host <host>', 'address to bind (default api.host, 127.0.0.1)')
    .option('-t, --timeout <seconds>', 'seconds a request may take (default api.timeout)')
    .action(async (opts: GlobalOptions & { port?: string; host?: string; timeout?: string }) => {
      const { runServe } = await import('./commands/serve.js');
      return runServe(opts);
    });

  withCommon(program.command('status'))
    .description('show config, workspace, provider, model and which keys are set')
    .action(async (opts: GlobalOptions) => {
      const { runStatus } = await import('./commands/status.js');
      return runStatus(opts);
    });

  withCommon(program.command('doctor'))
    .description('check the setup: config, workspace, how the model resolves and why, keys, fallbacks, presets')
    .option('--ping', 'also send one tiny request to the model')
    .action(async (opts: GlobalOptions & { ping?: boolean }) => {
      const { runDoctor } = await import('./commands/doctor.js');
      return runDoctor(opts);
    });

  const provider = program.command('provider').description('sign in to subscription providers (OAuth)');
  withCommon(provider.command('login <name>'))
    .description('sign in: github-copilot (device code) or openai-codex (browser, or paste the address back)')
    .option('--set-main', 'make it the default provider in the config')
    .option('-m, --model <model>', 'the default model to set (implies --set-main)')
    .option('--no-browser', 'do not try to open a browser; print the address only')
    .action(async (name: string, _o: object, cmd: Command) => {
      const { runProviderLogin } = await import('./commands/provider.js');
      return runProviderLogin(name, cmd.opts());
    });
  withCommon(provider.command('install <name>'))
    .description('install the SDK a provider needs (bedrock) into ~/.nanobot/packages (asks first unless --yes)')
    .option('-y, --yes', 'install without asking')
    .action(async (name: string, _o: object, cmd: Command) => runInstall(name, cmd.optsWithGlobals()));
  withCommon(provider.command('logout <name>'))
    .description('delete the stored sign-in of a provider')
    .action(async (name: string, _o: object, cmd: Command) => {
      const { runProviderLogout } = await import('./commands/provider.js');
      return runProviderLogout(name, cmd.opts());
    });

  const gatewayCommands = () => import('./commands/gateway.js');
  const controls = () => import('./commands/gateway-control.js');
  const serviceCommands = () => import('./commands/gateway-service.js');
  const gateway = withCommon(program.command('gateway'))
    .description('run the long-lived agent: channels, cron, heartbeat, health on 127.0.0.1:18790')
    .option('-p, --port <port>', 'health port (default gateway.port)')
    .option('--foreground', 'run in this terminal (the default)')
    .option('--background', 'start it detached (log in <data dir>/logs/gateway.log) and return')
    .addOption(new Option('--launched-in-background').hideHelp())
    .addOption(new Option('--under-keeper').hideHelp())
    .action(async (opts: GlobalOptions & GatewayRunFlags) => {
      if (opts.foreground && opts.background) throw new UserError('--foreground and --background exclude each other.');
      if (opts.background) await (await controls()).gatewayBackground(opts);
      else await (await gatewayCommands()).runGateway(opts);
    });
  withCommon(gateway.command('status'))
    .description('is the gateway running?')
    .action(async (opts: GlobalOptions) => {
      await (await gatewayCommands()).gatewayStatus(opts);
    });
  withCommon(gateway.command('stop'))
    .description('stop the running gateway: SIGTERM, then SIGKILL after --timeout seconds')
    .option('--timeout <seconds>', 'seconds to wait for a clean exit', '20')
    .action(async (opts: GlobalOptions & { timeout: string }) => {
      await (await gatewayCommands()).gatewayStop(opts);
    });
  withCommon(gateway.command('restart'))
    .description('stop the background gateway and start it again in the background')
    .option('-p, --port <port>', 'health port (default gateway.port)')
    .option('--timeout <seconds>', 'seconds to wait for the old one to exit', '20')
    .action(async (opts: GlobalOptions & { port?: string; timeout: string }) => {
      await (await controls()).gatewayRestart(opts);
    });
  withCommon(gateway.command('logs'))
    .description('print the gateway log')
    .option('--tail <n>', 'lines to show', '200')
    .option('-f, --follow', 'keep printing new lines')
    .option('--no-follow', 'print and exit (the default here)')
    .action(async (opts: GlobalOptions & { tail?: string; follow?: boolean }) =>
      (await gatewayCommands()).gatewayLogs(opts),
    );
  withCommon(gateway.command('install-service'))
    .description('install a systemd user unit (launchd agent on macOS) that runs the gateway')
    .option('-p, --port <port>', 'health port for the service (default gateway.port)')
    .option('--name <name>', 'service name', 'nanobot-gateway')
    .addOption(managerOption())
    .option('--no-enable', 'do not enable it at login')
    .option('--no-start', 'do not start it now')
    .option('--dry-run', 'print the unit and the commands instead of running them')
    .action(async (opts: GlobalOptions & InstallServiceCliFlags) => {
      await (await serviceCommands()).installService(opts);
    });
  withCommon(gateway.command('uninstall-service'))
    .description('stop and remove the service install-service wrote')
    .option('--name <name>', 'service name', 'nanobot-gateway')
    .addOption(managerOption())
    .option('--dry-run', 'print the commands instead of running them')
    .action(async (opts: GlobalOptions & InstallServiceCliFlags) => {
      await (await serviceCommands()).uninstallService(opts);
    });

  withCommon(program.command('webui'))
    .description('open the WebUI in the browser (starts the gateway in the background if it is not running)')
    .option('--no-open', 'print the link (it carries the token) instead of opening a browser')
    .option('--no-start', 'only print how to start the gateway when it is not running')
    .option('-p, --port <port>', 'serve the WebUI on this port (saved as channels.websocket.port)')
    .option('--gateway-port <port>', 'health port for the gateway it starts (default gateway.port)')
    .option('-y, --yes', 'save the WebUI settings it needs (enable channels.websocket, --port) without asking')
    .action(async (opts: GlobalOptions & WebUiCliFlags) => {
      const { runWebUi } = await import('./commands/webui.js');
      return runWebUi(opts);
    });

  withCommon(program.command('trigger [id] [message]'))
    .description(
      'deliver a message to the chat a trigger is bound to (create one with /trigger <name> in that chat); ' +
        'any other name queues it for the running gateway, answered in the last active chat. ' +
        'The message is read from stdin when omitted or -',
    )
    .option('--list', 'list the triggers made with /trigger (id, name, chat)')
    .option('--remove <id>', 'delete a trigger made with /trigger, and its queued deliveries')
    .action(async (id: string | undefined, message: string | undefined, opts: GlobalOptions & TriggerFlags) => {
      const [{ setup }, { runTrigger }] = await Promise.all([import('./setup.js'), import('./commands/trigger.js')]);
      const { loaded } = await setup(opts);
      await runTrigger(loaded.workspace, id, message, opts, readStdin);
    });

  const cron = program.command('cron').description('manage scheduled jobs (<workspace>/cron/jobs.json)');
  const runCron = async (sub: string, args: string[], opts: object) => {
    const commands = await import('./commands/cron.js');
    return commands.runCron(sub, args, opts);
  };
  withCommon(cron.command('list'))
    .description('list jobs with their next run')
    .action((o: GlobalOptions) => runCron('list', [], o));
  withCommon(cron.command('add'))
    .description('add a job (a plain reminder unless --agent)')
    .option('--name <name>', 'job name (default: the start of the message)')
    .requiredOption('--message <text>', 'what to send, or the task for the agent')
    .option('--every <interval>', 'repeat every N seconds, or 30m / 2h / 1d')
    .option('--cron <expr>', 'cron expression, e.g. "0 9 * * *"')
    .option('--tz <iana>', 'time zone for --cron, e.g. Europe/Berlin')
    .option('--at <iso>', 'run once at this time (local time unless it has an offset)')
    .option('--channel <channel>', 'deliver to this channel (e.g. telegram)')
    .option('--chat-id <id>', 'deliver to this chat')
    .option('--agent', 'run as an agent turn instead of sending the message as-is')
    .option('--model <preset>', 'with --agent: run the task with this model preset (modelPresets)')
    .action((o: object) => runCron('add', [], o));
  withCommon(cron.command('remove <id>'))
    .description('remove a job')
    .action((id: string, o: GlobalOptions) => runCron('remove', [id], o));
  withCommon(cron.command('run <id>'))
    .description('run a job once now')
    .action((id: string, o: GlobalOptions) => runCron('run', [id], o));

  const skills = program.command('skills').description('list, show and install skills (<workspace>/skills/<name>)');
  const runSkills = async (sub: string, args: string[], opts: object) => {
    const commands = await import('./commands/skills.js');
    return commands.runSkills(sub, args, opts);
  };
  withCommon(skills.command('list'))
    .description('list skills: available, unavailable (and why), disabled, invalid')
    .action((o: GlobalOptions) => runSkills('list', [], o));
  withCommon(skills.command('show <name>'))
    .description("show a skill's details and its SKILL.md")
    .action((name: string, o: GlobalOptions) => runSkills('show', [name], o));
  withCommon(skills.command('install <source>'))
    .description(
      'copy a skill (folder, .tar.gz file or URL, or git URL) into the workspace; shows, never runs, its commands',
    )
    .option('--force', 'replace an installed skill of the same name')
    .action((source: string, o: GlobalOptions) => runSkills('install', [source], o));

  const channels = program.command('channels').description('chat channels: status, login, pairing approvals');
  const channelCommands = () => import('./commands/channels.js');
  withCommon(channels.command('status'))
    .description('configured channels, who may talk, and their state in the running gateway')
    .action(async (_o: object, cmd: Command) => (await channelCommands()).channelsStatus(cmd.opts()));
  withCommon(channels.command('login <channel>'))
    .description('log a channel in (QR-code platforms; feishu.<id> for another Feishu bot), or say which key to set')
    .option('-f, --force', 'log in again even when the channel is already set up')
    .action(async (name: string, _o: object, cmd: Command) =>
      (await channelCommands()).channelsLogin(name, cmd.opts()),
    );
  withCommon(channels.command('install <channel>'))
    .description('install the SDK a channel needs into ~/.nanobot/packages (asks first unless --yes)')
    .option('-y, --yes', 'install without asking')
    .action(async (name: string, _o: object, cmd: Command) => runInstall(name, cmd.optsWithGlobals()));
  const pair = channels.command('pair').description('people who asked for access with a pairing code');
  withCommon(pair.command('list'))
    .description('pending requests and senders approved by pairing')
    .action(async (_o: object, cmd: Command) => (await channelCommands()).channelsPair('list', [], cmd.opts()));
  for (const [verb, what] of [
    ['approve', 'let the sender behind a code talk to the agent'],
    ['deny', 'drop a pending request'],
  ] as const) {
    withCommon(pair.command(`${verb} <code>`))
      .description(what)
      .action(async (code: string, _o: object, cmd: Command) =>
        (await channelCommands()).channelsPair(verb, [code], cmd.opts()),
      );
  }
  withCommon(pair.command('revoke <channel> <senderId>'))
    .description('take access away from a sender approved by pairing')
    .action(async (channel: string, senderId: string, _o: object, cmd: Command) =>
      (await channelCommands()).channelsPair('revoke', [channel, senderId], cmd.opts()),
    );

  const sessions = program.command('sessions').description('stored conversations of the workspace');
  const sessionCommands = () => import('./commands/sessions.js');
  withCommon(sessions.command('list'))
    .description('every session: key (channel:chat_id, as cron add --channel/--chat-id need), title, updated, size')
    .option('--json', 'print JSON (key, channel, chatId, title, preview, updatedAt, messageCount)')
    .action(async (_o: object, cmd: Command) => (await sessionCommands()).sessionsList(cmd.optsWithGlobals()));
  withCommon(sessions.command('restore-workspace'))
    .description('copy sessions back into <workspace>/sessions/ before downgrading to nanobot v0.3.0')
    .action(async (_o: object, cmd: Command) =>
      (await sessionCommands()).sessionsRestoreWorkspace(cmd.optsWithGlobals()),
    );

  const config = program.command('config').description('inspect the configuration');
  withCommon(config.command('schema'))
    .description('print the JSON Schema of config.json')
    .action(async () => {
      const { configJsonSchema } = await import('../config/schema.js');
      process.stdout.write(`${JSON.stringify(configJsonSchema(), null, 2)}\n`);
    });
  return program;
}

/** `channels install` / `provider install`: the packages go to the user's ~/.nanobot/packages, whatever `-c` says. */
async function runInstall(name: string, opts: { yes?: boolean }): Promise<void> {
  const { defaultPackagesIo, installFor } = await import('./commands/packages.js');
  const { homedir } = await import('node:os');
  await installFor(name, process.env.HOME || homedir(), opts.yes === true, defaultPackagesIo());
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

export interface GatewayRunFlags {
  port?: string;
  launchedInBackground?: boolean;
  underKeeper?: boolean;
  foreground?: boolean;
  background?: boolean;
}

export interface InstallServiceCliFlags {
  port?: string;
  name?: string;
  /** Undefined = auto (systemd on Linux, launchd on macOS). */
  manager?: 'systemd' | 'launchd';
  enable?: boolean;
  start?: boolean;
  dryRun?: boolean;
}

/** `--manager auto|systemd|launchd`, as nanobot's CLI has it; auto picks by platform. */
function managerOption(): Option {
  return new Option('--manager <manager>', 'auto, systemd or launchd').argParser((value: string) => {
    const manager = value.trim().toLowerCase();
    if (manager === 'auto') return undefined;
    if (manager === 'systemd' || manager === 'launchd') return manager;
    throw new InvalidArgumentError('must be auto, systemd or launchd');
  });
}

export interface WebUiCliFlags {
  open?: boolean;
  start?: boolean;
  port?: string;
  gatewayPort?: string;
  yes?: boolean;
}

export interface AgentFlags {
  message?: string;
  session: string;
  markdown: boolean;
  logs?: boolean;
}

/** Runs the CLI; resolves to the process exit code. */
export async function main(argv: string[]): Promise<number> {
  // `-v` is --version before a command and --verbose after one (argv[2] is the first word typed).
  const verbose = argv.includes('--verbose') || argv.slice(3).includes('-v');
  // `nanobot agent -m … | head -1`: the reader left; that is not an error worth a stack trace.
  process.stdout.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE') process.exit(0);
    throw err;
  });
  try {
    const program = buildProgram();
    await program.parseAsync(argv);
    return typeof process.exitCode === 'number' ? process.exitCode : 0;
  } catch (err) {
    if (err instanceof CommanderError) return err.exitCode;
    if (err instanceof FileWriteError) {
      // One line: what, where, and the fix; the stack only with --verbose.
      process.stderr.write(`Error: ${err.message}; ${err.fix} and run again\n`);
      if (verbose && err.stack) process.stderr.write(`${err.stack}\n`);
      return 1;
    }
    if (err instanceof UserError) {
      process.stderr.write(`Error: ${err.message}\n`);
      if (err.hint) process.stderr.write(`Hint: ${err.hint}\n`);
      if (verbose && err.stack) process.stderr.write(`${err.stack}\n`);
      return 1;
    }
    process.stderr.write(`Error: ${errorMessage(err)}\n`);
    if (verbose && err instanceof Error && err.stack) process.stderr.write(`${err.stack}\n`);
    else process.stderr.write('Hint: run again with --verbose for details.\n');
    return 1;
  }
}
