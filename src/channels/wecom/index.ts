/**
 * The WeCom (企业微信) channel: an intelligent bot (智能机器人) over WeCom's WebSocket long connection, so no public
 * address is needed. Settings are upstream nanobot's `channels.wecom` keys (botId, secret, allowFrom, welcomeMessage);
 * `wsUrl` is an addition (another endpoint: a proxy, or a loopback fake in tests). The official
 * `@wecom/aibot-node-sdk` (installed on demand) is imported only when the channel starts.
 */
import { z } from 'zod';
import { UserError } from '../../util/errors.js';
import { defineChannel } from '../definition.js';
import { channelSdk, channelSettingsSchema, requireSetting } from '../settings.js';
import { allowFromField, type ChannelSetup, groupPolicyField } from '../setup.js';

export const WECOM_WS_URL = 'wss://openws.work.weixin.qq.com';

export const wecomSettingsSchema = channelSettingsSchema.extend({
  botId: z.union([z.string(), z.number()]).transform(String).default(''),
  secret: z.string().default(''),
  /** Sent (as upstream) when an allowed person opens the bot's chat for the first time that day; empty: none. */
  welcomeMessage: z.string().default(''),
  /** The long connection's address; wss, or ws to this machine only. */
  wsUrl: z.string().default(WECOM_WS_URL),
});

export type WecomSettings = z.infer<typeof wecomSettingsSchema>;

/** The parts of @wecom/aibot-node-sdk the channel uses. */
export type WecomSdk = Pick<typeof import('@wecom/aibot-node-sdk'), 'WSClient' | 'decryptFile' | 'generateReqId'>;

/** A CommonJS package: its exports are named exports under Node, and under `default` in some bundlings. */
function sdkOf(loaded: unknown): WecomSdk {
  for (const candidate of [loaded, (loaded as { default?: unknown } | null)?.default]) {
    const sdk = candidate as Partial<WecomSdk> | null | undefined;
    if (
      typeof sdk?.WSClient === 'function' &&
      typeof sdk.decryptFile === 'function' &&
      typeof sdk.generateReqId === 'function'
    ) {
      return sdk as WecomSdk;
    }
  }
  throw new Error('@wecom/aibot-node-sdk did not load as expected (no WSClient)');
}

const HINT =
  'In the WeCom admin console (work.weixin.qq.com): 应用管理 → 智能机器人 → 创建机器人, choose the API mode with a ' +
  'long connection (长连接), and copy its Bot ID and Secret into channels.wecom.botId and channels.wecom.secret.';

/** The endpoint: wss, or plain ws only to this machine (the secret goes in the first frame). */
export function wsUrlOf(settings: WecomSettings): URL {
  const raw = settings.wsUrl.trim() || WECOM_WS_URL;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new UserError(`channels.wecom.wsUrl is not a URL: ${raw}`, `The default is ${WECOM_WS_URL}.`);
  }
  const loopback = ['127.0.0.1', 'localhost', '[::1]'].includes(url.hostname);
  if (url.protocol !== 'wss:' && !(url.protocol === 'ws:' && loopback)) {
    throw new UserError(
      `channels.wecom.wsUrl must be a wss:// address (ws:// only on this machine): ${raw}`,
      `The bot secret is sent over it; the default is ${WECOM_WS_URL}.`,
    );
  }
  if (url.username || url.password || url.hash) {
    throw new UserError(`channels.wecom.wsUrl must not carry a user name or #fragment: ${raw}`, HINT);
  }
  return url;
}

export const wecomChannel = defineChannel<WecomSettings>({
  name: 'wecom',
  displayName: 'WeCom',
  schema: wecomSettingsSchema,
  setup: {
    officialUrl: 'https://developer.work.weixin.qq.com/',
    fields: [
      {
        key: 'botId',
        kind: 'string',
        label: 'Bot ID',
        help: 'The intelligent bot’s Bot ID (企业微信管理后台 → 智能机器人 → API 模式, 长连接).',
        required: true,
        credential: true,
      },
      {
        key: 'secret',
        kind: 'secret',
        label: 'Secret',
        help: 'The bot’s Secret, shown beside its Bot ID.',
        required: true,
        credential: true,
      },
      {
        ...allowFromField,
        help: 'WeCom userids who may talk to the agent, comma-separated; strangers get a pairing code in a private chat.',
      },
      groupPolicyField(),
      {
        key: 'welcomeMessage',
        kind: 'string',
        label: 'Welcome message',
        help: 'Sent when an allowed person opens the chat with the bot (once a day); empty: none.',
      },
    ],
  } satisfies ChannelSetup,
  setupHint: HINT,
  validate(settings) {
    requireSetting('wecom', 'botId', settings.botId, HINT);
    requireSetting('wecom', 'secret', settings.secret, HINT);
    wsUrlOf(settings);
  },
  async createPlatform(settings, context) {
    const loaded = await channelSdk('wecom', 'WeCom', '@wecom/aibot-node-sdk', () => import('@wecom/aibot-node-sdk'));
    const { WecomPlatform } = await import('./platform.js');
    return new WecomPlatform({ sdk: sdkOf(loaded), settings, log: context.log });
  },
});
