/**
 * Channels follow a config reload: a channel switched on in `channels.<name>.enabled` (by hand or from the WebUI's
 * channel settings) is built and started, one switched off is stopped, and one whose connection keys changed (a new
 * token, another server) is restarted with them. Keys every channel reads live (allowFrom, groupPolicy, streaming…)
 * apply without a restart, as before. The WebSocket channel serves the WebUI that may have asked for the change, so
 * a reload never stops or restarts it: its host/port changes apply after a gateway restart (said in the log).
 * Each bot of a channel that runs several (Feishu's `instances`) is a channel of its own here (`feishu.<id>`).
 */
import type { Channel } from '../channels/channel.js';
import type { ChannelManager } from '../channels/manager.js';
import { resolveChannel, runtimeBlocks } from '../channels/registry.js';
import type { OutboundRouter } from '../channels/router.js';
import type { Config } from '../config/schema.js';
import { errorMessage, UserError } from '../util/errors.js';
import type { Logger } from '../util/log.js';

/** Read on every use by ChatChannel (channels/settings.ts), so changing them needs no reconnect. */
const LIVE_KEYS = new Set([
  'enabled',
  'allowFrom',
  'groupPolicy',
  'groupAllowFrom',
  'streaming',
  'streamEditInterval',
  'replyToMessage',
  'maxMediaMb',
  'sendProgress',
  'sendToolHints',
  'showReasoning',
]);

const NOT_RELOADED = new Set(['websocket']);

export interface ChannelSyncOptions {
  /** The gateway's running channels: the same array the router's fallbacks and the WebUI backend read. */
  channels: Channel[];
  manager: Pick<ChannelManager, 'add' | 'remove'>;
  router: Pick<OutboundRouter, 'addChannel' | 'removeChannel'>;
  build(name: string): Promise<Channel>;
  log: Logger;
}

/** A reload listener: brings the running channels in line with the new config. Call it with each applied config. */
export function channelSync(options: ChannelSyncOptions, initial: Config): (next: Config) => Promise<void> {
  let previous = runtimeBlocks(initial);
  return async (next) => {
    const blocks = runtimeBlocks(next);
    const before = previous;
    previous = blocks;
    for (const name of new Set([...Object.keys(before), ...Object.keys(blocks)])) {
      if (NOT_RELOADED.has(name)) {
        if (connectionChanged(before[name], blocks[name]) || wanted(before[name]) !== wanted(blocks[name])) {
          options.log.warn(`gateway: channels.${name} changes apply after a gateway restart`);
        }
        continue;
      }
      const running = options.channels.find((channel) => channel.name === name);
      const want = wanted(blocks[name]) && resolveChannel(name) !== undefined;
      if (running && (!want || connectionChanged(before[name], blocks[name]))) await stop(options, running);
      const stillRunning = options.channels.some((channel) => channel.name === name);
      if (want && !stillRunning) await start(options, name);
    }
  };
}

function wanted(block: Record<string, unknown> | undefined): boolean {
  return block?.enabled === true;
}

/** A key outside the live ones changed: the platform has to connect again to use it. */
function connectionChanged(
  before: Record<string, unknown> | undefined,
  after: Record<string, unknown> | undefined,
): boolean {
  const keys = new Set([...Object.keys(before ?? {}), ...Object.keys(after ?? {})]);
  for (const key of keys) {
    if (LIVE_KEYS.has(key)) continue;
    if (JSON.stringify(before?.[key]) !== JSON.stringify(after?.[key])) return true;
  }
  return false;
}

async function stop(options: ChannelSyncOptions, channel: Channel): Promise<void> {
  options.router.removeChannel(channel.name);
  await options.manager.remove(channel.name);
  const at = options.channels.indexOf(channel);
  if (at >= 0) options.channels.splice(at, 1);
  options.log.info(`gateway: channel ${channel.name} stopped (config reload)`);
}

async function start(options: ChannelSyncOptions, name: string): Promise<void> {
  let channel: Channel;
  try {
    channel = await options.build(name);
  } catch (err) {
    const message = err instanceof UserError && err.hint ? `${err.message} ${err.hint}` : errorMessage(err);
    options.log.error(`gateway: channel ${name} could not start after the config reload: ${message}`);
    return;
  }
  options.channels.push(channel);
  options.router.addChannel(channel);
  options.manager.add(channel);
  options.log.info(`gateway: channel ${name} started (config reload)`);
}
