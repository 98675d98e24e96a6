/**
 * The Discord channel: settings (nanobot's `channels.discord` keys) and its registration. discord.js is imported
 * only when the channel starts.
 */
import { z } from 'zod';
import { checkSecureUrl } from '../../security/hosts.js';
import { UserError } from '../../util/errors.js';
import { defineChannel } from '../definition.js';
import { channelSdk, channelSettingsSchema, requireSetting } from '../settings.js';
import { allowFromField, type ChannelSetup, groupPolicyField } from '../setup.js';

/** GUILDS | GUILD_MESSAGES | DIRECT_MESSAGES | MESSAGE_CONTENT: nanobot's default. */
export const DEFAULT_INTENTS = 37377;

/**
 * Discord ids are 64-bit: written as JSON numbers they lose their last digits, so only strings and small numbers
 * are accepted.
 */
const discordId = z.union([z.string(), z.number()]).transform((value, ctx) => {
  if (typeof value === 'number' && !Number.isSafeInteger(value)) {
    ctx.addIssue({ code: 'custom', message: `${value} lost digits as a JSON number: write Discord ids in quotes` });
    return z.NEVER;
  }
  return String(value).trim();
});

export const discordSettingsSchema = channelSettingsSchema.extend({
  token: z.string().default(''),
  /** Guild channel ids the bot serves (a thread counts by its parent too); empty = every channel it can read. */
  allowChannels: z.array(discordId).default([]),
  /** Gateway intents bitfield; the default adds Message Content (enable it in the Developer Portal). */
  intents: z.int().min(0).default(DEFAULT_INTENTS),
  /** The REST root (default https://discord.com/api); the gateway URL comes from its `GET /gateway/bot`. */
  apiBase: z.string().nullish(),
  /** Accepted for nanobot compatibility; discord.js cannot send the gateway through a proxy (a warning says so). */
  proxy: z.string().nullish(),
  /** Discord allows about 5 edits per 5 s in a channel: nanobot streams at most every 0.8 s. */
  streamEditInterval: z.number().min(0.05).default(0.8),
});

export type DiscordSettings = z.infer<typeof discordSettingsSchema>;

const TOKEN_HINT =
  'Create an application at https://discord.com/developers/applications, add a bot, copy its token, and turn on ' +
  '"Message Content Intent" under Bot → Privileged Gateway Intents.';

export const discordChannel = defineChannel<DiscordSettings>({
  name: 'discord',
  displayName: 'Discord',
  schema: discordSettingsSchema,
  setup: {
    officialUrl: 'https://discord.com/developers/applications',
    fields: [
      {
        key: 'token',
        kind: 'secret',
        label: 'Bot token',
        help: TOKEN_HINT,
        required: true,
        credential: true,
      },
      allowFromField,
      {
        key: 'allowChannels',
        kind: 'list',
        label: 'Server channels',
        help: 'Ids of the server channels the bot answers in, comma-separated; empty: every channel it can read.',
      },
      groupPolicyField(),
    ],
  } satisfies ChannelSetup,
  setupHint: 'Create a bot at https://discord.com/developers/applications and put its token in channels.discord.token.',
  validate(settings) {
    requireSetting('discord', 'token', settings.token, TOKEN_HINT);
    if (settings.apiBase) apiRoot(settings.apiBase);
  },
  async createPlatform(settings, context) {
    const discord = await channelSdk('discord', 'Discord', 'discord.js', () => import('discord.js'));
    const { DiscordPlatform } = await import('./platform.js');
    return new DiscordPlatform({ discord, settings, log: context.log });
  },
});

/**
 * The REST root without a trailing slash. The bot token travels in every request, so plain http is accepted only
 * for a server on this machine.
 */
export function apiRoot(apiBase: string | null | undefined): string {
  if (!apiBase) return 'https://discord.com/api';
  const checked = checkSecureUrl(apiBase);
  if ('error' in checked)
    throw new UserError(
      `channels.discord.apiBase ${checked.error}: ${apiBase}`,
      'The bot token is sent with every request.',
    );
  return apiBase.replace(/\/+$/, '');
}
