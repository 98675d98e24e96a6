/**
 * The QQ channel: the official QQ Bot API v2 (q.qq.com), private (C2C) and group @-messages. Settings are upstream
 * nanobot's `channels.qq` keys (appId, secret, allowFrom, msgFormat, ackMessage); `sandbox`, `apiBase` and
 * `tokenUrl` are additions. No SDK: the gateway is a WebSocket (`ws`, part of nanobot-ts) and the rest HTTPS + JSON.
 */
import { z } from 'zod';
import { checkSecureUrl } from '../../security/hosts.js';
import { errorMessage, UserError } from '../../util/errors.js';
import { defineChannel, type VerifyResult } from '../definition.js';
import { channelSettingsSchema, requireSetting } from '../settings.js';
import { allowFromField, type ChannelSetup } from '../setup.js';
import type { WebSocketClass } from './gateway.js';

export const QQ_API = 'https://api.sgroup.qq.com';
export const QQ_SANDBOX_API = 'https://sandbox.api.sgroup.qq.com';
export const QQ_TOKEN_URL = 'https://bots.qq.com/app/getAppAccessToken';

export const qqSettingsSchema = channelSettingsSchema
  .extend({
    appId: z.union([z.string(), z.number()]).transform(String).default(''),
    secret: z.string().default(''),
    /** plain text, or QQ's markdown messages (msg_type 2; the bot needs QQ's markdown permission). */
    msgFormat: z.enum(['plain', 'markdown']).default('plain'),
    /** Sent as soon as a message is accepted, as upstream does; empty: none. */
    ackMessage: z.string().default('⏳ Processing...'),
    /** The sandbox API (a bot not yet published talks to its sandbox members there). */
    sandbox: z.boolean().default(false),
    /** Overrides the API address (default from `sandbox`); https, or http to this machine. */
    apiBase: z.string().default(''),
    tokenUrl: z.string().default(QQ_TOKEN_URL),
    /** Upstream's cap for attachments from users, in bytes: sets maxMediaMb when given. */
    downloadMaxBytes: z.int().min(1).optional(),
  })
  .transform((settings) => ({
    ...settings,
    maxMediaMb:
      settings.downloadMaxBytes !== undefined ? settings.downloadMaxBytes / (1024 * 1024) : settings.maxMediaMb,
  }));

export type QqSettings = z.infer<typeof qqSettingsSchema>;

export const apiBaseOf = (settings: QqSettings) =>
  settings.apiBase.trim() || (settings.sandbox ? QQ_SANDBOX_API : QQ_API);

const HINT =
  'Create a bot at https://q.qq.com/ (QQ 开放平台), then copy its AppID and AppSecret from 开发 → 开发设置 into ' +
  'channels.qq.appId and channels.qq.secret; enable C2C and group messages for it, and add your QQ as a sandbox ' +
  'member (with channels.qq.sandbox: true) until the bot is published.';

function checkUrl(key: 'apiBase' | 'tokenUrl', value: string): void {
  if (!value.trim()) return;
  const checked = checkSecureUrl(value.trim());
  if ('error' in checked) {
    throw new UserError(
      `channels.qq.${key} ${checked.error}: ${value}`,
      key === 'apiBase'
        ? `Leave it empty for ${QQ_API} (or ${QQ_SANDBOX_API} with sandbox: true).`
        : `The default is ${QQ_TOKEN_URL}.`,
    );
  }
}

async function loadWebSocket(): Promise<WebSocketClass> {
  const { WebSocket } = await import('ws');
  return WebSocket;
}

export const qqChannel = defineChannel<QqSettings>({
  name: 'qq',
  displayName: 'QQ',
  schema: qqSettingsSchema,
  setup: {
    officialUrl: 'https://q.qq.com/',
    fields: [
      {
        key: 'appId',
        kind: 'string',
        label: 'AppID',
        help: 'The bot’s AppID (q.qq.com → 开发设置).',
        required: true,
        credential: true,
      },
      {
        key: 'secret',
        kind: 'secret',
        label: 'AppSecret',
        help: 'The bot’s AppSecret (q.qq.com → 开发设置).',
        required: true,
        credential: true,
      },
      {
        ...allowFromField,
        help: 'openids (not QQ numbers) who may talk to the agent, comma-separated; strangers get a pairing code in a private chat.',
      },
      {
        key: 'msgFormat',
        kind: 'enum',
        label: 'Message format',
        help: 'plain text, or QQ markdown (needs QQ’s markdown permission).',
        choices: ['plain', 'markdown'],
        defaultValue: 'plain',
      },
    ],
  } satisfies ChannelSetup,
  setupHint: HINT,
  validate(settings) {
    requireSetting('qq', 'appId', settings.appId, HINT);
    requireSetting('qq', 'secret', settings.secret, HINT);
    checkUrl('apiBase', settings.apiBase);
    checkUrl('tokenUrl', settings.tokenUrl);
  },
  verify: verifyCredentials,
  async createPlatform(settings, context) {
    const WebSocket = await loadWebSocket();
    const { QqPlatform } = await import('./platform.js');
    return new QqPlatform({ WebSocket, settings, log: context.log });
  },
});

/** An access token for appId + secret: the cheapest check QQ has that the credentials are right. */
async function verifyCredentials(settings: QqSettings): Promise<VerifyResult> {
  const { QqApi } = await import('./api.js');
  const api = new QqApi({
    appId: settings.appId,
    secret: settings.secret,
    apiBase: apiBaseOf(settings),
    tokenUrl: settings.tokenUrl,
  });
  try {
    await api.accessToken();
    return {
      status: 'pass',
      message: `QQ accepted AppID ${settings.appId} and its secret.`,
      identity: { account: settings.appId },
    };
  } catch (err) {
    if (err instanceof UserError) return { status: 'fail', message: err.message };
    return { status: 'warn', message: `Could not ask QQ for an access token: ${errorMessage(err)}` };
  }
}
