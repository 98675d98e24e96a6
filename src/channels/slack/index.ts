/**
 * The Slack channel: settings (nanobot's `channels.slack` keys) and its registration. @slack/bolt (Socket Mode) is
 * imported only when the channel starts.
 */
import { z } from 'zod';
import { checkSecureUrl } from '../../security/hosts.js';
import { UserError } from '../../util/errors.js';
import { defineChannel } from '../definition.js';
import { channelSdk, channelSettingsSchema, requireSetting } from '../settings.js';
import { allowFromField, type ChannelSetup, groupPolicyField } from '../setup.js';

const idList = z.array(z.union([z.string(), z.number()]).transform(String));

export const slackSettingsSchema = channelSettingsSchema
  .extend({
    /** Bot User OAuth Token (`xoxb-…`): every Web API call. */
    botToken: z.string().default(''),
    /** App-level token (`xapp-…`, scope connections:write): opens the Socket Mode connection. */
    appToken: z.string().default(''),
    /** nanobot's key; only Socket Mode exists here (no public URL needed). */
    mode: z.string().default('socket'),
    /** The Web API root; default https://slack.com/api. */
    apiBase: z.string().nullish(),
    /** Answer a channel message in a thread under it (DMs stay flat unless the user opened a thread). */
    replyInThread: z.boolean().default(true),
    /** When the bot is first addressed inside an existing thread, give the agent the thread so far. */
    includeThreadContext: z.boolean().default(true),
    threadContextLimit: z.int().min(1).max(200).default(20),
    /** With `groupPolicy: "allowlist"`, also require an @mention in the listed channels. */
    groupRequireMention: z.boolean().default(false),
    dm: z
      .looseObject({
        /** false: direct messages are ignored. */
        enabled: z.boolean().default(true),
        /** `allowlist`: allowFrom (+ dm.allowFrom) and approved pairings; strangers get a pairing code. `open`: anyone. */
        policy: z.enum(['allowlist', 'open']).default('allowlist'),
        allowFrom: idList.default([]),
      })
      .prefault({}),
    /** chat.update is rate-limited (about 50 a minute), so streamed edits are spaced further than elsewhere. */
    streamEditInterval: z.number().min(0.05).default(1.2),
  })
  .transform((settings) => {
    // The framework has one allow list for every chat type: dm.allowFrom and an open DM policy extend it.
    const extra = [...settings.dm.allowFrom, ...(settings.dm.policy === 'open' ? ['*'] : [])];
    const allowFrom = [...new Set([...settings.allowFrom, ...extra])];
    return { ...settings, allowFrom };
  });

export type SlackSettings = z.infer<typeof slackSettingsSchema>;

/** The parts of @slack/bolt the channel uses (the SDK itself is loaded only when the channel starts). */
export type SlackSdk = Pick<typeof import('@slack/bolt'), 'App' | 'SocketModeReceiver' | 'LogLevel' | 'webApi'>;

const SETUP_HINT =
  'Create an app at https://api.slack.com/apps, turn on Socket Mode, and put the Bot User OAuth Token (xoxb-…) in ' +
  'channels.slack.botToken and an app-level token with connections:write (xapp-…) in channels.slack.appToken.';

export const slackChannel = defineChannel<SlackSettings>({
  name: 'slack',
  displayName: 'Slack',
  schema: slackSettingsSchema,
  setup: {
    officialUrl: 'https://api.slack.com/apps',
    fields: [
      {
        key: 'botToken',
        kind: 'secret',
        label: 'Bot token',
        help: 'The Bot User OAuth Token (xoxb-…) from OAuth & Permissions of your app.',
        required: true,
        credential: true,
      },
      {
        key: 'appToken',
        kind: 'secret',
        label: 'App token',
        help: 'An app-level token with connections:write (xapp-…), made when you turn on Socket Mode.',
        required: true,
        credential: true,
      },
      allowFromField,
      groupPolicyField(),
    ],
  } satisfies ChannelSetup,
  setupHint: SETUP_HINT,
  validate(settings) {
    requireSetting(
      'slack',
      'botToken',
      settings.botToken,
      'Install the app to your workspace and copy its Bot User OAuth Token.',
    );
    requireSetting(
      'slack',
      'appToken',
      settings.appToken,
      'Basic Information → App-Level Tokens: generate one with connections:write.',
    );
    if (!settings.botToken.startsWith('xoxb-'))
      throw new UserError(
        'channels.slack.botToken must be a bot token (it starts with xoxb-).',
        'OAuth & Permissions → Bot User OAuth Token. The xapp- token goes in channels.slack.appToken.',
      );
    if (!settings.appToken.startsWith('xapp-'))
      throw new UserError(
        'channels.slack.appToken must be an app-level token (it starts with xapp-).',
        'Basic Information → App-Level Tokens: generate one with the connections:write scope.',
      );
    if (settings.mode !== 'socket')
      throw new UserError(
        `channels.slack.mode "${settings.mode}" is not supported: nanobot-ts connects to Slack with Socket Mode only.`,
        'Remove the key (or set "socket") and turn on Socket Mode in the app settings.',
      );
    slackApiUrl(settings.apiBase);
  },
  async createPlatform(settings, context) {
    const bolt: SlackSdk = await channelSdk('slack', 'Slack', '@slack/bolt', () => import('@slack/bolt'));
    const { SlackPlatform } = await import('./platform.js');
    return new SlackPlatform({ bolt, settings, log: context.log });
  },
});

/**
 * The Web API root with the trailing slash @slack/web-api expects. The bot token goes with every call, so plain
 * http is accepted only for a server on this machine.
 */
export function slackApiUrl(apiBase: string | null | undefined): string {
  if (!apiBase) return 'https://slack.com/api/';
  const checked = checkSecureUrl(apiBase);
  if ('error' in checked)
    throw new UserError(
      `channels.slack.apiBase ${checked.error}: ${apiBase}`,
      'The bot token is sent with every request.',
    );
  return `${apiBase.replace(/\/+$/, '')}/`;
}
