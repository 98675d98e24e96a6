/**
 * `nanobot gateway install-service`: a systemd user unit (Linux) or a launchd agent (macOS) that runs
 * `<node> <bin/nanobot.js> gateway` and restarts it on failure. Pure functions: the CLI writes and runs.
 */
import { join } from 'node:path';

export type ServiceManager = 'systemd' | 'launchd';

export interface ServiceSpec {
  name: string;
  node: string;
  bin: string;
  /** Extra arguments after `gateway` (e.g. `--config <path>`). */
  args: string[];
  home: string;
  /** PATH for the service: user managers start with a minimal one, and the agent's shell tools need the user's. */
  path?: string;
  logFile: string;
  /** Enable it at login / load (default true; `--no-enable`). */
  enable?: boolean;
  /** Start it now (default true; `--no-start`). */
  start?: boolean;
}

export interface ServicePlan {
  manager: ServiceManager;
  file: string;
  content: string;
  /** Commands to run after writing the file, as argv arrays. */
  commands: string[][];
  notes: string[];
}

export function managerFor(platform: NodeJS.Platform): ServiceManager | undefined {
  if (platform === 'linux') return 'systemd';
  if (platform === 'darwin') return 'launchd';
  return undefined;
}

export function planService(spec: ServiceSpec, manager: ServiceManager, uid = 501): ServicePlan {
  return manager === 'systemd' ? systemdPlan(spec) : launchdPlan(spec, uid);
}

/** `gateway uninstall-service`: stop and disable, then the file goes (the CLI deletes it) and systemd reloads. */
export function planUninstall(name: string, home: string, manager: ServiceManager, uid = 501): ServicePlan {
  if (manager === 'systemd') {
    const unit = `${name}.service`;
    return {
      manager,
      file: join(home, '.config', 'systemd', 'user', unit),
      content: '',
      commands: [
        ['systemctl', '--user', 'disable', '--now', unit],
        ['systemctl', '--user', 'daemon-reload'],
      ],
      notes: [],
    };
  }
  const domain = `gui/${uid}`;
  return {
    manager,
    file: join(home, 'Library', 'LaunchAgents', `${name}.plist`),
    content: '',
    commands: [
      ['launchctl', 'bootout', `${domain}/${name}`],
      ['launchctl', 'disable', `${domain}/${name}`],
    ],
    notes: [],
  };
}

function systemdCommands(unit: string, enable: boolean, start: boolean): string[][] {
  const commands = [['systemctl', '--user', 'daemon-reload']];
  if (enable && start) commands.push(['systemctl', '--user', 'enable', '--now', unit]);
  else if (enable) commands.push(['systemctl', '--user', 'enable', unit]);
  else if (start) commands.push(['systemctl', '--user', 'restart', unit]);
  return commands;
}

function systemdPlan(spec: ServiceSpec): ServicePlan {
  const exec = [spec.node, spec.bin, 'gateway', ...spec.args].map(systemdQuote).join(' ');
  const lines = [
    '[Unit]',
    'Description=nanobot gateway',
    'After=network-online.target',
    'Wants=network-online.target',
    '',
    '[Service]',
    'Type=simple',
    `ExecStart=${exec}`,
    'Restart=on-failure',
    'RestartSec=5',
    // The gateway drains in ≤ 8 s and exits within 10 s of SIGTERM.
    'KillSignal=SIGTERM',
    // SIGTERM to the gateway only: it stops its own MCP servers and shells (and, with gateway.restartMode exec,
    // the process that keeps its pid forwards the signal once); what is left gets SIGKILL at the timeout.
    'KillMode=mixed',
    'TimeoutStopSec=15',
    ...(spec.path ? [`Environment=${systemdQuote(`PATH=${spec.path}`)}`] : []),
    '',
    '[Install]',
    'WantedBy=default.target',
    '',
  ];
  const unit = `${spec.name}.service`;
  return {
    manager: 'systemd',
    file: join(spec.home, '.config', 'systemd', 'user', unit),
    content: lines.join('\n'),
    commands: systemdCommands(unit, spec.enable ?? true, spec.start ?? true),
    notes: [
      `Logs: ${spec.logFile} (or journalctl --user -u ${unit})`,
      'To keep it running after you log out: loginctl enable-linger "$USER"',
      'Keys that exist only in your shell environment are not visible to the service; put them in config.json.',
    ],
  };
}

function launchdPlan(spec: ServiceSpec, uid: number): ServicePlan {
  const file = join(spec.home, 'Library', 'LaunchAgents', `${spec.name}.plist`);
  const args = [spec.node, spec.bin, 'gateway', ...spec.args].map((a) => `    <string>${xml(a)}</string>`);
  const env = spec.path
    ? [
        '  <key>EnvironmentVariables</key>',
        '  <dict>',
        `    <key>PATH</key><string>${xml(spec.path)}</string>`,
        '  </dict>',
      ]
    : [];
  const content = [
    '<?xml version="1.0" encoding="UTF-8"?>',
    '<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">',
    '<plist version="1.0">',
    '<dict>',
    `  <key>Label</key><string>${xml(spec.name)}</string>`,
    '  <key>ProgramArguments</key>',
    '  <array>',
    ...args,
    '  </array>',
    ...env,
    `  <key>RunAtLoad</key><${spec.enable === false ? 'false' : 'true'}/>`,
    // Restart after a crash, not after `nanobot gateway stop` (a clean exit).
    '  <key>KeepAlive</key><dict><key>SuccessfulExit</key><false/></dict>',
    '  <key>ExitTimeOut</key><integer>15</integer>',
    `  <key>StandardErrorPath</key><string>${xml(`${spec.logFile}.stderr`)}</string>`,
    '</dict>',
    '</plist>',
    '',
  ].join('\n');
  const domain = `gui/${uid}`;
  return {
    manager: 'launchd',
    file,
    content,
    commands:
      spec.start === false
        ? []
        : [
            ['launchctl', 'bootout', `${domain}/${spec.name}`],
            ['launchctl', 'bootstrap', domain, file],
          ],
    notes: [`Logs: ${spec.logFile}`, '`launchctl bootout` fails harmlessly when the agent was not loaded yet.'],
  };
}

/** systemd splits ExecStart on spaces and treats quotes, backslashes, `%` and `$` specially. */
function systemdQuote(arg: string): string {
  const escaped = arg.replace(/%/g, '%%').replace(/\$/g, '$$$$');
  if (/^[A-Za-z0-9_@%+=:,./-]+$/.test(escaped)) return escaped;
  return `"${escaped.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
}

function xml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}
