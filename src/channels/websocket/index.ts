/**
 * The WebSocket channel's registration: `channels.websocket` settings and how the gateway builds it. The server
 * (and `ws`) load only when the channel starts.
 */
import { errorMessage } from '../../util/errors.js';
import type { Channel } from '../channel.js';
import type { ChannelBuildContext, RegisteredChannel } from '../definition.js';
import { parseChannelSettings } from '../settings.js';
import { validateWebSocketSettings, type WebSocketSettings, websocketSettingsSchema } from './settings.js';

export function parseWebSocketSettings(block: unknown): WebSocketSettings {
  const settings = parseChannelSettings('websocket', block, websocketSettingsSchema);
  validateWebSocketSettings(settings);
  return settings;
}

export const websocketChannel: RegisteredChannel = {
  name: 'websocket',
  displayName: 'WebSocket + WebUI',
  credentials: [],
  setupHint:
    'On by default at http://127.0.0.1:8765/; `nanobot webui` opens it with the token from <data dir>/webui-token.',
  parse: parseWebSocketSettings,
  async create(context: ChannelBuildContext): Promise<Channel> {
    const { WebSocketChannel } = await import('./channel.js');
    return new WebSocketChannel({
      settings: liveSettings(context),
      dataDir: context.dataDir,
      switches: context.switches,
      pairing: context.pairing,
      log: context.log,
    });
  },
};

/** Settings re-read when the block changes; an invalid edit keeps the last good ones (and says so). */
function liveSettings(context: ChannelBuildContext): () => WebSocketSettings {
  let lastBlock = context.block();
  let lastText = JSON.stringify(lastBlock ?? {});
  let last = parseWebSocketSettings(lastBlock);
  return () => {
    // Read for every frame: a reload replaces the config (blocks are not edited in place), so the same block
    // object is the same settings and the text comparison is only needed after a reload.
    const block = context.block();
    if (block === lastBlock) return last;
    lastBlock = block;
    const text = JSON.stringify(block ?? {});
    if (text === lastText) return last;
    lastText = text;
    try {
      last = parseWebSocketSettings(block);
    } catch (err) {
      context.log.warn(`channel websocket: config edit ignored, keeping the previous settings: ${errorMessage(err)}`);
    }
    return last;
  };
}
