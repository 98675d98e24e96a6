/**
 * The chat channels nanobot-ts knows, and how the gateway builds the enabled ones from `channels.<name>` in the
 * config. A platform registers by adding its `defineChannel({...})` result to CHANNEL_DEFINITIONS; its SDK is
 * imported inside `createPlatform`, so it loads only when that channel is enabled.
 */
import type { z } from 'zod';
import type { Config } from '../config/schema.js';
import type { VoiceService } from '../providers/voice.js';
import { type Logger, silentLogger } from '../util/log.js';
import type { Channel } from './channel.js';
import { DEFAULT_INSTANCE, type RegisteredChannel, runtimeName } from './definition.js';
import { dingtalkChannel } from './dingtalk/index.js';
import { discordChannel } from './discord/index.js';
import { emailChannel } from './email/index.js';
import { feishuChannel } from './feishu/index.js';
import { matrixChannel } from './matrix/index.js';
import { mattermostChannel } from './mattermost/index.js';
import { mochatChannel } from './mochat/index.js';
import { msteamsChannel } from './msteams/index.js';
import { napcatChannel } from './napcat/index.js';
import type { PairingStore } from './pairing.js';
import type { CommandInfo } from './platform.js';
import { qqChannel } from './qq/index.js';
import { signalChannel } from './signal/index.js';
import { slackChannel } from './slack/index.js';
import { telegramChannel } from './telegram/index.js';
import { websocketChannel } from './websocket/index.js';
import { wecomChannel } from './wecom/index.js';
import { weixinChannel } from './weixin/index.js';
import { whatsappChannel } from './whatsapp/index.js';

export const CHANNEL_DEFINITIONS: readonly RegisteredChannel[] = [
  telegramChannel,
  websocketChannel,
  slackChannel,
  discordChannel,
  feishuChannel,
  matrixChannel,
  mattermostChannel,
  signalChannel,
  msteamsChannel,
  napcatChannel,
  qqChannel,
  whatsappChannel,
  emailChannel,
  weixinChannel,
  mochatChannel,
  wecomChannel,
  dingtalkChannel,
];

/** Every channel's settings schema by name, for config notices (unknown keys inside channel blocks). */
export function channelSchemas(): Record<string, z.ZodType> {
  return Object.fromEntries(CHANNEL_DEFINITIONS.map((definition) => [definition.name, definition.schema]));
}

export function findChannel(name: string): RegisteredChannel | undefined {
  return CHANNEL_DEFINITIONS.find((definition) => definition.name === name);
}

/** The `channels.<name>` blocks of a config, keyed by name (the global switches are not blocks). */
export function channelBlocks(config: Config): Record<string, Record<string, unknown>> {
  const blocks: Record<string, Record<string, unknown>> = {};
  for (const [name, value] of Object.entries(config.channels)) {
    if (typeof value === 'object' && value !== null) blocks[name] = value;
  }
  return blocks;
}

/**
 * The blocks the gateway runs, by runtime name: `channelBlocks`, with each section of a channel that can run several
 * bots (`instances`) replaced by one block per instance, `<name>` for the default one and `<name>.<id>` for others.
 */
export function runtimeBlocks(config: Config): Record<string, Record<string, unknown>> {
  const blocks: Record<string, Record<string, unknown>> = {};
  for (const [name, block] of Object.entries(channelBlocks(config))) {
    const instances = findChannel(name)?.instances;
    if (!instances) {
      blocks[name] = block;
      continue;
    }
    for (const instance of instances.list(block).instances) blocks[runtimeName(name, instance.id)] = instance.block;
  }
  return blocks;
}

/** The block of one runtime channel; for an instance not in the config yet, what it would inherit. */
export function runtimeBlock(config: Config, name: string): Record<string, unknown> | undefined {
  const resolved = resolveChannel(name);
  const section = channelBlocks(config)[resolved?.definition.name ?? name];
  if (!resolved?.definition.instances) return section;
  return resolved.definition.instances.block(section, resolved.instance);
}

/** The channel behind a runtime name (`feishu`, `feishu.<id>`), with the instance it names. */
export function resolveChannel(name: string): { definition: RegisteredChannel; instance: string } | undefined {
  const direct = findChannel(name);
  if (direct) return { definition: direct, instance: DEFAULT_INSTANCE };
  const dot = name.indexOf('.');
  if (dot <= 0) return undefined;
  const definition = findChannel(name.slice(0, dot));
  const instance = name.slice(dot + 1);
  if (!definition?.instances || instance === DEFAULT_INSTANCE || !/^[A-Za-z0-9_-]{1,64}$/.test(instance)) {
    return undefined;
  }
  return { definition, instance };
}

export interface BuildChannelsOptions {
  config: () => Config;
  pairing: PairingStore;
  dataDir: string;
  log?: Logger;
  commands: () => readonly CommandInfo[];
  /** Speech-to-text and spoken replies for every channel. */
  voice?: VoiceService;
}

/**
 * The channels enabled in the config, built and checked (settings, credentials, SDK installed) before anything
 * connects: a setup mistake stops the gateway with a message naming the key or package.
 */
export async function buildEnabledChannels(options: BuildChannelsOptions): Promise<Channel[]> {
  const log = options.log ?? silentLogger;
  const channels: Channel[] = [];
  for (const [name, section] of Object.entries(channelBlocks(options.config()))) {
    for (const why of findChannel(name)?.instances?.list(section).skipped ?? []) log.warn(`skipped ${why}`);
  }
  for (const [name, block] of Object.entries(runtimeBlocks(options.config()))) {
    if (block.enabled !== true) continue;
    if (!resolveChannel(name)) {
      log.warn(`channels.${name} is enabled, but nanobot-ts has no ${name} channel; ignoring it`);
      continue;
    }
    channels.push(await buildChannel(name, options));
  }
  return channels;
}

/** One channel (by runtime name), built from its current block (a config reload that enabled it builds it so too). */
export async function buildChannel(name: string, options: BuildChannelsOptions): Promise<Channel> {
  const definition = resolveChannel(name)?.definition;
  if (!definition) throw new Error(`nanobot-ts has no ${name} channel`);
  return definition.create({
    name,
    block: () => runtimeBlocks(options.config())[name],
    switches: () => {
      const { sendProgress, sendToolHints, showReasoning } = options.config().channels;
      return { sendProgress, sendToolHints, showReasoning };
    },
    pairing: options.pairing,
    dataDir: options.dataDir,
    log: options.log ?? silentLogger,
    commands: options.commands,
    ...(options.voice ? { voice: options.voice } : {}),
  });
}
