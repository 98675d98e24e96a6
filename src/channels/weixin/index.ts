/**
 * Personal WeChat (微信) through Tencent's iLink bot API: settings (upstream nanobot's `channels.weixin` keys) and
 * the registration. No SDK: the protocol is plain HTTPS + JSON (api.ts) and AES from node:crypto; the login is a QR
 * code scanned in WeChat (login.ts), saved where upstream saves it, so an upstream login keeps working.
 */
import { z } from 'zod';
import { checkSecureUrl } from '../../security/hosts.js';
import { UserError } from '../../util/errors.js';
import { defineChannel } from '../definition.js';
import { channelSettingsSchema } from '../settings.js';
import { allowFromField, type ChannelSetup } from '../setup.js';

export const WEIXIN_BASE_URL = 'https://ilinkai.weixin.qq.com';
export const WEIXIN_CDN_BASE_URL = 'https://novac2c.cdn.weixin.qq.com/c2c';

export const weixinSettingsSchema = channelSettingsSchema.extend({
  /** A bot token from elsewhere; empty: the one `nanobot channels login weixin` saved (account.json). */
  token: z.string().default(''),
  baseUrl: z.string().default(WEIXIN_BASE_URL),
  cdnBaseUrl: z.string().default(WEIXIN_CDN_BASE_URL),
  /** Sent as the SKRouteTag header, for accounts WeChat routes to a particular cluster. */
  routeTag: z.union([z.string(), z.number()]).nullish(),
  /** Where the login state lives; empty: ~/.nanobot/weixin (upstream's place). */
  stateDir: z.string().default(''),
  /** Seconds one getupdates long-poll may take (the server may suggest another). */
  pollTimeout: z.int().min(1).max(120).default(35),
  /** Messages sent per received message at most (WeChat refuses more); the rest wait for the next one. */
  contextMessageBudget: z.int().min(1).max(10).default(8),
  // Each progress message uses the same small per-message send quota as the answer: off unless asked for.
  sendProgress: z.boolean().default(false),
  sendToolHints: z.boolean().default(false),
});

export type WeixinSettings = z.infer<typeof weixinSettingsSchema>;

const LOGIN_HINT = 'Run `nanobot channels login weixin` and scan the code with WeChat (Scan, in the + menu).';

export const weixinChannel = defineChannel<WeixinSettings>({
  name: 'weixin',
  displayName: 'WeChat',
  schema: weixinSettingsSchema,
  setup: {
    officialUrl: 'https://weixin.qq.com/',
    fields: [
      {
        key: 'token',
        kind: 'secret',
        label: 'Bot token',
        help: 'Leave empty: Connect (or `nanobot channels login weixin`) logs in with a QR code and saves the token.',
      },
      allowFromField,
      {
        key: 'baseUrl',
        kind: 'string',
        label: 'API address',
        help: 'The iLink bot API; keep the default unless WeChat told you otherwise.',
        defaultValue: WEIXIN_BASE_URL,
      },
      {
        key: 'routeTag',
        kind: 'string',
        label: 'Route tag',
        help: 'Only if your account needs one (sent as SKRouteTag); usually empty.',
      },
    ],
  } satisfies ChannelSetup,
  setupHint: `Personal WeChat logs in with a QR code, no token to copy: ${LOGIN_HINT}`,
  qrLogin: true,
  validate(settings) {
    for (const key of ['baseUrl', 'cdnBaseUrl'] as const) {
      const checked = checkSecureUrl(settings[key].trim());
      if ('error' in checked) {
        throw new UserError(
          `channels.weixin.${key} ${checked.error}: ${settings[key]}`,
          key === 'baseUrl' ? `The default is ${WEIXIN_BASE_URL}.` : `The default is ${WEIXIN_CDN_BASE_URL}.`,
        );
      }
    }
  },
  async createPlatform(settings, context) {
    const { WeixinPlatform } = await import('./platform.js');
    const { stateDirOf } = await import('./state.js');
    return new WeixinPlatform({ settings, stateDir: stateDirOf(settings(), context.dataDir), log: context.log });
  },
  async login(settings, context) {
    const { qrLogin } = await import('./login.js');
    await qrLogin(settings, context);
  },
});
