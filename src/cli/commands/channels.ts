/**
 * `nanobot channels status | login <channel> | pair list|approve|deny|revoke`: what is configured, whether the
 * running gateway has it connected, and pairing approvals (which the running gateway picks up at once).
 */
import { join } from 'node:path';
import { describeAllowFrom } from '../../channels/access.js';
import type { ChannelHealth } from '../../channels/manager.js';
import { PairingStore } from '../../channels/pairing.js';
import { runPairingCommand } from '../../channels/pairing-command.js';
import {
  CHANNEL_DEFINITIONS,
  channelBlocks,
  resolveChannel,
  runtimeBlock,
  runtimeBlocks,
} from '../../channels/registry.js';
import { setupField } from '../../channels/setup.js';
import type { LoadedConfig } from '../../config/load.js';
import { updateConfigFile } from '../../config/onboard.js';
import { isProcessAlive, readState } from '../../gateway/state-file.js';
import { collectSecrets, redactSecrets } from '../../security/secrets.js';
import { errorMessage, UserError } from '../../util/errors.js';
import type { GlobalOptions } from '../main.js';
import { qrPrinter } from '../qr.js';
import { setup } from '../setup.js';
import { defaultPackagesIo, missingPackages, offerInstall } from './packages.js';

export interface ChannelsIo {
  out(text: string): void;
  env: NodeJS.ProcessEnv;
}

const defaultIo: ChannelsIo = { out: (text) => process.stdout.write(text), env: process.env };

export async function channelsStatus(opts: GlobalOptions, io: ChannelsIo = defaultIo): Promise<void> {
  const { loaded } = await setup(opts, io.env);
  const running = await runningChannels(loaded);
  const blocks = runtimeBlocks(loaded.config);
  const sections = channelBlocks(loaded.config);
  const names = [...new Set([...CHANNEL_DEFINITIONS.map((d) => d.name), ...Object.keys(blocks)])].sort(
    (a, b) => order(a) - order(b) || a.localeCompare(b),
  );
  io.out(`Channels (${loaded.configPath}):\n`);
  const secrets = collectSecrets(loaded.config);
  for (const name of names) {
    const skipped = resolveChannel(name)?.definition.instances?.list(sections[name]).skipped ?? [];
    for (const why of skipped) io.out(`  ${name}: skipped ${redactSecrets(why, secrets)}\n`);
    io.out(`${statusLine(name, blocks[name], running, secrets)}\n`);
    const detail = statusDetail(name, blocks[name], loaded.dataDir);
    if (detail) io.out(`    ${redactSecrets(detail, secrets)}\n`);
    const base = resolveChannel(name)?.definition.name ?? name;
    const missing = blocks[name]?.enabled === true ? missingPackages(base, loaded.home) : [];
    if (missing.length > 0)
      io.out(`    ${missing.join(', ')} not installed: run \`nanobot channels install ${base}\`\n`);
  }
  io.out(
    running ? `Gateway: running (pid ${running.pid})\n` : 'Gateway: not running (start it with `nanobot gateway`)\n',
  );
  const pending = new PairingStore({ dir: join(loaded.dataDir, 'pairing') }).listPending();
  if (pending.length > 0) io.out(`Pairing: ${pending.length} request(s) waiting; see \`nanobot channels pair list\`\n`);
}

/** The registry's order, each channel's instances (`feishu.<id>`) right after it; unknown blocks last. */
function order(name: string): number {
  const base = resolveChannel(name)?.definition.name ?? name;
  const at = CHANNEL_DEFINITIONS.findIndex((definition) => definition.name === base);
  return at < 0 ? CHANNEL_DEFINITIONS.length : at;
}

function statusLine(
  name: string,
  block: Record<string, unknown> | undefined,
  running: { pid: number; channels: Record<string, ChannelHealth> } | undefined,
  secrets: readonly string[],
): string {
  const resolved = resolveChannel(name);
  const definition = resolved?.definition;
  const label = (definition ? (definition.name === name ? definition.displayName : name) : name).padEnd(18);
  if (!definition) return `  ${label} not available in nanobot-ts (channels.${name} is ignored)`;
  const enabled = block?.enabled === true;
  let settings: ReturnType<typeof definition.parse>;
  try {
    settings = definition.parse(block ?? {});
  } catch (err) {
    if (!enabled) return `  ${label} disabled`;
    const message = err instanceof UserError ? err.message.replace(/\s*\n\s*/g, ' ') : errorMessage(err);
    return `  ${label} enabled, but not ready: ${redactSecrets(message, secrets)}`;
  }
  const parts = [enabled ? 'enabled' : 'disabled', `allowFrom: ${describeAllowFrom(settings.allowFrom)}`];
  if (settings.groupPolicy) parts.push(`groups: ${settings.groupPolicy}`);
  const health = running?.channels[name];
  if (health) {
    const retry = health.retryAt ? `; next try ${health.retryAt.slice(11, 19)} UTC` : '';
    parts.push(health.error ? `${health.state} (${redactSecrets(health.error, secrets)}${retry})` : health.state);
  } else if (enabled && running) parts.push('not running (restart the gateway to start it)');
  return `  ${label} ${parts.join(' · ')}`;
}

/** The channel's own extra line (its settings must parse; a channel that cannot say stays silent). */
function statusDetail(name: string, block: Record<string, unknown> | undefined, dataDir: string): string | undefined {
  const definition = resolveChannel(name)?.definition;
  if (!definition?.statusDetail || block?.enabled !== true) return undefined;
  try {
    return definition.statusDetail(block, dataDir);
  } catch {
    return undefined;
  }
}

/** The channels of the running gateway, from its /health; undefined when no gateway runs. */
async function runningChannels(
  loaded: LoadedConfig,
): Promise<{ pid: number; channels: Record<string, ChannelHealth> } | undefined> {
  const state = readState(loaded.dataDir);
  if (!state || !isProcessAlive(state.pid)) return undefined;
  const host = state.host === '0.0.0.0' || state.host === '::' ? '127.0.0.1' : state.host;
  try {
    const res = await fetch(`http://${host.includes(':') ? `[${host}]` : host}:${state.port}/health`, {
      signal: AbortSignal.timeout(2_000),
    });
    const body = (await res.json()) as { channelDetails?: Record<string, ChannelHealth> };
    return { pid: state.pid, channels: body.channelDetails ?? {} };
  } catch {
    return { pid: state.pid, channels: {} };
  }
}

export async function channelsLogin(
  name: string,
  opts: GlobalOptions & { force?: boolean },
  io: ChannelsIo = defaultIo,
): Promise<void> {
  const resolved = resolveChannel(name);
  if (!resolved) {
    throw new UserError(
      `Unknown channel "${name}".`,
      `Channels: ${CHANNEL_DEFINITIONS.map((d) => d.name).join(', ')} (an instance of feishu: feishu.<id>).`,
    );
  }
  const { definition, instance } = resolved;
  const { loaded } = await setup(opts, io.env);
  const block = runtimeBlock(loaded.config, name) ?? {};
  await offerInstall(definition.name, loaded.home, { ...defaultPackagesIo(), ...io });
  if (definition.login) {
    const codes = qrPrinter(io.out);
    try {
      await definition.login(block, {
        name,
        dataDir: loaded.dataDir,
        log: consoleLog(io),
        out: io.out,
        qr: codes.qr,
        instance,
        ...(opts.force ? { force: true } : {}),
        // A running gateway's file watcher applies it (and starts the channel).
        updateConfig: (mutate) => updateConfigFile(loaded.configPath, mutate, io.env),
      });
    } finally {
      await codes.done();
    }
    return;
  }
  const keys = definition.credentials.map((key) => `channels.${name}.${key}`);
  const missing = definition.credentials.filter((key) => !isSet(block[key]));
  if (keys.length > 0 && missing.length === 0) {
    io.out(`${definition.displayName} needs no interactive login, and ${keys.join(', ')} is set.\n`);
  } else if (keys.length > 0) {
    io.out(
      `${definition.displayName} needs no interactive login: set ${keys.join(' and ')} in ${loaded.configPath}.\n` +
        `${definition.setupHint}\n`,
    );
    // The same field descriptions the WebUI's channel form shows (src/channels/setup.ts).
    for (const key of missing) {
      const field = setupField(definition.setup, key);
      if (field) io.out(`  channels.${name}.${key} (${field.label}): ${field.help}\n`);
    }
  } else {
    io.out(`${definition.displayName} needs no login. ${definition.setupHint}\n`);
  }
  if (block.enabled !== true) io.out(`Then set channels.${name}.enabled to true and (re)start \`nanobot gateway\`.\n`);
}

export async function channelsPair(
  sub: 'list' | 'approve' | 'deny' | 'revoke',
  args: string[],
  opts: GlobalOptions,
  io: ChannelsIo = defaultIo,
): Promise<void> {
  const { loaded } = await setup(opts, io.env);
  const store = new PairingStore({ dir: join(loaded.dataDir, 'pairing') });
  const { reply, approved } = await runPairingCommand(store, [sub, ...args].join(' '));
  io.out(`${reply}\n`);
  if (approved) io.out('A running gateway lets them in with their next message.\n');
  if (sub !== 'list' && /^(No pending|Usage|Unknown)/.test(reply)) process.exitCode = 1;
}

function isSet(value: unknown): boolean {
  return typeof value === 'string' ? value.trim() !== '' : value !== undefined && value !== null;
}

function consoleLog(io: ChannelsIo) {
  const line = (text: string) => io.out(`${text}\n`);
  return { debug: () => {}, info: line, warn: line, error: line };
}
