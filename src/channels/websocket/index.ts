/**
 * The WebSocket channel's registration: `channels.websocket` settings and how the gateway builds it. The server
 * (and `ws`) load only when the channel starts.
 */
import { errorMessage } from '../../util/errors.js';
import type { Channel } from '../channel.js';
import type { ChannelBuildContext, RegisteredChannel } from '../definition.js';
import { parseChannelSettings } from '../settings.js';
import { hostForUrl, validateWebSocketSettings, type WebSocketSettings, websocketSettingsSchema } from './settings.js';
import { tokenFilePath } from './token.js';

export function parseWebSocketSettings(block: unknown): WebSocketSettings {
  const settings = parseChannelSettings('websocket', block, websocketSettingsSchema);
  validateWebSocketSettings(settings);
  return settings;
}

export const websocketChannel: RegisteredChannel = {
  name: 'websocket',
  displayName: 'WebSocket + WebUI',
  credentials: [],
  // Served by the gateway itself and always on in nanobot's WebUI: nothing to fill in.
  setup: { fields: [] },
  setupHint:
    'On by default, served by the gateway at channels.websocket.host:port; `nanobot webui` opens it with your token.',
  schema: websocketSettingsSchema,
  parse: parseWebSocketSettings,
  checkSchema: (block) => {
    parseChannelSettings('websocket', block, websocketSettingsSchema);
  },
  // No login: say where this config serves it and where its token is, from the settings and the real data dir.
  async login(block, context) {
    const settings = parseWebSocketSettings(block);
    const url = `http://${hostForUrl(settings.host)}:${settings.port}/`;
    const token = !settings.websocketRequiresToken
      ? 'no token is needed (websocketRequiresToken is false)'
      : settings.token
        ? 'your token is channels.websocket.token'
        : `your token is kept in ${tokenFilePath(context.dataDir)}`;
    context.out(
      settings.enabled
        ? `WebSocket + WebUI needs no login. The gateway serves it at ${url}; ${token}.\n` +
            'Run `nanobot webui` to open it signed in.\n'
        : `WebSocket + WebUI is off (channels.websocket.enabled is false). Turned on, the gateway serves it at ${url}.\n` +
            'Run `nanobot webui --yes` to turn it on and open it.\n',
    );
  },
  async create(context: ChannelBuildContext): Promise<Channel> {
    const { WebSocketChannel } = await import('./channel.js');
    return new WebSocketChannel({
      settings: liveSettings(context),
      dataDir: context.dataDir,
      switches: context.switches,
      pairing: context.pairing,
      log: context.log,
      ...(context.voice ? { voice: context.voice } : {}),
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
