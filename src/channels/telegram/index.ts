/**
 * The Telegram channel: settings (nanobot's `channels.telegram` keys) and its registration. grammy is imported only
 * when the channel starts.
 */
import { z } from 'zod';
import { checkSecureUrl } from '../../security/hosts.js';
import { UserError } from '../../util/errors.js';
import { defineChannel, type VerifyResult } from '../definition.js';
import { channelSdk, channelSettingsSchema, idList, requireSetting } from '../settings.js';
import { allowFromField, type ChannelSetup, groupPolicyField } from '../setup.js';

/**
 * nanobot matched a bare Telegram username in allowFrom (`"alice"`). A Telegram username starts with a letter and an
 * id is a number, so a bare entry that looks like a username can only mean that username: it is read as `@alice`,
 * the one spelling the shared rule (channels/access.ts) matches usernames by.
 */
const LEGACY_USERNAME = /^[A-Za-z][A-Za-z0-9_]{2,31}$/;
const telegramAllowList = idList
  .default([])
  .transform((entries) => entries.map((entry) => (LEGACY_USERNAME.test(entry.trim()) ? `@${entry.trim()}` : entry)));

export const telegramSettingsSchema = channelSettingsSchema.extend({
  allowFrom: telegramAllowList,
  token: z.string().default(''),
  mode: z.enum(['polling', 'webhook']).default('polling'),
  /** HTTP(S) proxy for every Bot API call, e.g. `http://127.0.0.1:7890`. */
  proxy: z.string().nullish(),
  /** The Bot API root (a self-hosted Bot API server); default https://api.telegram.org. */
  apiBase: z.string().nullish(),
  /** Long-polling wait per getUpdates call, in seconds; a call silent for this + 15 s counts as stalled. */
  pollTimeout: z.int().min(1).max(50).default(30),
  webhookUrl: z.string().default(''),
  webhookListenHost: z.string().default('127.0.0.1'),
  webhookListenPort: z.int().min(0).max(65535).default(8081),
  webhookPath: z.string().default('/telegram'),
  webhookSecretToken: z.string().default(''),
  webhookMaxConnections: z.int().min(1).max(100).default(4),
});

export type TelegramSettings = z.infer<typeof telegramSettingsSchema>;

export const telegramChannel = defineChannel<TelegramSettings>({
  name: 'telegram',
  displayName: 'Telegram',
  schema: telegramSettingsSchema,
  setup: {
    officialUrl: 'https://t.me/BotFather',
    fields: [
      {
        key: 'token',
        kind: 'secret',
        label: 'Bot token',
        help: 'Create a bot with @BotFather in Telegram and paste the token it gives you (123456:ABC…).',
        required: true,
        credential: true,
      },
      {
        key: 'proxy',
        kind: 'secret',
        label: 'Proxy',
        help: 'An HTTP(S) proxy for every Bot API call, e.g. http://127.0.0.1:7890; empty: none.',
      },
      allowFromField,
      groupPolicyField(),
    ],
  } satisfies ChannelSetup,
  setupHint: 'Create a bot with @BotFather in Telegram and put its token in channels.telegram.token.',
  validate(settings) {
    requireSetting('telegram', 'token', settings.token, 'Create a bot with @BotFather and paste its token there.');
    if (settings.apiBase) apiRoot(settings.apiBase);
    if (settings.mode === 'webhook') {
      if (!/^https:\/\/[^/]+/.test(settings.webhookUrl))
        throw new UserError(
          'channels.telegram.webhookUrl must be the public https:// URL Telegram posts updates to (mode "webhook").',
        );
      if (!/^[\w-]{1,256}$/.test(settings.webhookSecretToken))
        throw new UserError(
          'channels.telegram.webhookSecretToken must be set (1–256 letters, digits, _ or -) in webhook mode.',
          'It proves that a request really comes from Telegram.',
        );
      if (!settings.webhookPath.startsWith('/'))
        throw new UserError('channels.telegram.webhookPath must start with "/".');
    }
  },
  verify: verifyBotToken,
  async createPlatform(settings, context) {
    const grammy = await channelSdk('telegram', 'Telegram', 'grammy', () => import('grammy'));
    const { TelegramPlatform } = await import('./platform.js');
    return new TelegramPlatform({ grammy, settings, log: context.log });
  },
});

/** getMe at the configured Bot API root: does Telegram accept the token, and which bot is it. */
async function verifyBotToken(settings: TelegramSettings): Promise<VerifyResult> {
  if (settings.proxy) {
    return { status: 'skipped', message: 'Not checked here: the channel reaches Telegram through its proxy.' };
  }
  let response: Response;
  try {
    response = await fetch(`${apiRoot(settings.apiBase)}/bot${settings.token}/getMe`, {
      signal: AbortSignal.timeout(VERIFY_TIMEOUT_MS),
    });
  } catch {
    // The error may quote the URL, which holds the token: it is not passed on.
    return { status: 'warn', message: 'Could not reach Telegram now. Try again later.' };
  }
  const body = (await response.json().catch(() => ({}))) as {
    ok?: unknown;
    result?: { id?: unknown; username?: unknown };
  };
  if ([400, 401, 403, 404].includes(response.status)) {
    return { status: 'fail', message: `Telegram rejected the token: HTTP ${response.status}.` };
  }
  if (!response.ok || body.ok !== true || typeof body.result !== 'object' || body.result === null) {
    return { status: 'warn', message: `Telegram could not verify the token: HTTP ${response.status}.` };
  }
  const { id, username } = body.result;
  return {
    status: 'pass',
    message: 'Telegram accepted the bot token.',
    identity: {
      ...(typeof username === 'string' ? { name: username } : {}),
      ...(typeof id === 'number' || typeof id === 'string' ? { account: String(id) } : {}),
    },
  };
}

const VERIFY_TIMEOUT_MS = 4_000;

/**
 * The Bot API root without a trailing slash. The bot token travels in every URL, so plain http is accepted only
 * for a server on this machine.
 */
export function apiRoot(apiBase: string | null | undefined): string {
  if (!apiBase) return 'https://api.telegram.org';
  const checked = checkSecureUrl(apiBase);
  if ('error' in checked)
    throw new UserError(
      `channels.telegram.apiBase ${checked.error}: ${apiBase}`,
      'The bot token is part of every request URL.',
    );
  return apiBase.replace(/\/+$/, '');
}
