/**
 * The Feishu / Lark channel: settings (nanobot's `channels.feishu` keys) and its registration. The Lark SDK
 * (@larksuiteoapi/node-sdk) is imported only when the channel starts. `channels login feishu` (and Connect in the
 * WebUI) creates the bot by scanning a QR code (login.ts); several bots can run side by side (instances.ts).
 */
import { z } from 'zod';
import { checkSecureUrl } from '../../security/hosts.js';
import { UserError } from '../../util/errors.js';
import { defineChannel } from '../definition.js';
import { channelSdk, channelSettingsSchema, requireSetting } from '../settings.js';
import { allowFromField, type ChannelSetup, groupPolicyField } from '../setup.js';
import { feishuInstances } from './instances.js';

export const feishuSettingsSchema = channelSettingsSchema.extend({
  appId: z.string().default(''),
  appSecret: z.string().default(''),
  /** Kept for nanobot configs: events over the long connection arrive neither encrypted nor signed. */
  encryptKey: z.string().default(''),
  verificationToken: z.string().default(''),
  /** `feishu` (open.feishu.cn), `lark` (open.larksuite.com) or the API root as a URL. */
  domain: z.string().default('feishu'),
  /** In topic groups, each topic is its own conversation (session). */
  topicIsolation: z.boolean().default(true),
  /** Feishu allows about 5 updates per second to one message. */
  streamEditInterval: z.number().min(0.2).default(0.6),
  /** Several bots (instances.ts): each entry's keys over the ones beside `instances`. */
  instances: z.array(z.looseObject({})).optional(),
  /** An instance's id (upstream writes both), its label, and the app it was set up with (`feishu:<appId>`). */
  id: z.string().optional(),
  instanceId: z.string().optional(),
  name: z.string().optional(),
  identityKey: z.string().optional(),
  /** What upstream's WebUI shows for the bot (it fetches them); kept, not used. */
  displayName: z.string().optional(),
  avatarUrl: z.string().optional(),
  identityFetchedAt: z.string().optional(),
});

export type FeishuSettings = z.infer<typeof feishuSettingsSchema>;

export const APP_ID = /^cli_[0-9a-fA-F]{16}$/;
const CONSOLE_HINT =
  'Run `nanobot channels login feishu` and scan the QR code (a bot is created), or copy it from your app in the ' +
  'developer console (open.feishu.cn/app; Lark: open.larksuite.com/app).';

export const feishuChannel = defineChannel<FeishuSettings>({
  name: 'feishu',
  displayName: 'Feishu / Lark',
  schema: feishuSettingsSchema,
  instances: feishuInstances,
  qrLogin: true,
  setup: {
    officialUrl: 'https://open.feishu.cn/app',
    fields: [
      {
        key: 'appId',
        kind: 'string',
        label: 'App ID',
        help: `The App ID (cli_ and 16 hex digits). ${CONSOLE_HINT} In the WebUI: Connect.`,
        required: true,
        credential: true,
      },
      {
        key: 'appSecret',
        kind: 'secret',
        label: 'App Secret',
        help: `The App Secret of the same app. ${CONSOLE_HINT}`,
        required: true,
        credential: true,
      },
      {
        key: 'domain',
        kind: 'enum',
        label: 'Platform',
        help: 'feishu for open.feishu.cn, lark for open.larksuite.com.',
        choices: ['feishu', 'lark'],
        defaultValue: 'feishu',
      },
      groupPolicyField(),
      allowFromField,
      {
        key: 'topicIsolation',
        kind: 'bool',
        label: 'One session per topic',
        help: 'Each topic of a group chat gets its own conversation with the agent.',
        defaultValue: true,
      },
    ],
  } satisfies ChannelSetup,
  setupHint:
    'Run `nanobot channels login feishu` and scan the QR code with the Feishu or Lark app (a bot is created and saved), ' +
    'or create a custom app at open.feishu.cn/app (Lark: open.larksuite.com/app), enable its bot, subscribe to ' +
    'im.message.receive_v1 over the long connection, and put its App ID and App Secret in channels.feishu.',
  validate(settings) {
    requireSetting('feishu', 'appId', settings.appId, CONSOLE_HINT);
    requireSetting('feishu', 'appSecret', settings.appSecret, CONSOLE_HINT);
    if (!APP_ID.test(settings.appId.trim())) {
      throw new UserError(
        `channels.feishu.appId must be the App ID, "cli_" and 16 hex digits (got "${settings.appId}").`,
        CONSOLE_HINT,
      );
    }
    apiRoot(settings.domain);
  },
  validateLogin(settings) {
    apiRoot(settings.domain);
  },
  async login(settings, context) {
    const { feishuLogin } = await import('./login.js');
    await feishuLogin(settings, context);
  },
  async createPlatform(settings, context) {
    const lark = await channelSdk(
      'feishu',
      'Feishu',
      '@larksuiteoapi/node-sdk',
      () => import('@larksuiteoapi/node-sdk'),
    );
    const { FeishuPlatform } = await import('./platform.js');
    return new FeishuPlatform({ lark, settings, log: context.log, channel: context.name });
  },
});

/**
 * The Open Platform API root for `domain`. The app secret is sent to it, so plain http is accepted only for a
 * server on this machine.
 */
export function apiRoot(domain: string): string {
  const value = domain.trim();
  if (value === '' || value === 'feishu') return 'https://open.feishu.cn';
  if (value === 'lark') return 'https://open.larksuite.com';
  const checked = checkSecureUrl(value);
  if ('error' in checked && checked.error === 'is not a URL')
    throw new UserError(`channels.feishu.domain must be "feishu", "lark" or a URL (got "${domain}").`);
  if ('error' in checked)
    throw new UserError(`channels.feishu.domain ${checked.error}: ${domain}`, 'The app secret is sent to it.');
  return value.replace(/\/+$/, '');
}
