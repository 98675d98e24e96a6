/**
 * The Mattermost channel: settings (nanobot's `channels.mattermost` keys) and its registration. The official
 * @mattermost/client (REST Client4 + WebSocketClient) is imported only when the channel starts.
 */
import { z } from 'zod';
import { checkSecureUrl } from '../../security/hosts.js';
import { UserError } from '../../util/errors.js';
import { defineChannel, type VerifyResult } from '../definition.js';
import { channelSdk, channelSettingsSchema, idList, requireSetting } from '../settings.js';
import { allowFromField, type ChannelSetup, GROUP_POLICIES, groupPolicyField } from '../setup.js';

const groupPolicy = z.enum(GROUP_POLICIES);

export const mattermostSettingsSchema = channelSettingsSchema
  .extend({
    /** The server's address, e.g. https://chat.example.com (the REST API is under /api/v4). */
    serverUrl: z.string().default(''),
    /** A bot account's (or personal) access token: every REST call and the WebSocket's authentication. */
    token: z.string().default(''),
    /** Only this team's channels are served (direct messages always are); empty: every team the bot is in. */
    teamId: z.string().default(''),
    /** How bare allowFrom entries name people: user ids (`id`), usernames (`username`), or `email` (not here). */
    allowFromMatchMode: z.enum(['id', 'username', 'email']).default('id'),
    /** Inside a thread (a reply to a post) the agent answers as this says; unset: as groupPolicy says. */
    groupPolicyInThread: groupPolicy.optional(),
    /** Answer a channel post in a thread under it (direct messages stay flat unless the user opened a thread). */
    replyInThread: z.boolean().default(true),
    /** When first addressed inside an existing thread, give the agent the thread so far. */
    includeThreadContext: z.boolean().default(true),
    threadContextLimit: z.int().min(1).max(200).default(20),
    dm: z
      .looseObject({
        /** false: direct messages are ignored. */
        enabled: z.boolean().default(true),
        /** `allowlist`: allowFrom (+ dm.allowFrom) and approved pairings; strangers get a pairing code. `open`: anyone. */
        policy: z.enum(['allowlist', 'open']).default('allowlist'),
        allowFrom: idList.default([]),
      })
      .prefault({}),
    /** Post edits are cheap on Mattermost, but each one is pushed to every client: a calmer pace than Telegram. */
    streamEditInterval: z.number().min(0.05).default(1),
  })
  .transform((settings) => {
    // The framework has one allow list for every chat type: dm.allowFrom and an open DM policy extend it.
    const named = (list: readonly string[]) => list.map((entry) => asEntry(entry, settings.allowFromMatchMode));
    const extra = [...named(settings.dm.allowFrom), ...(settings.dm.policy === 'open' ? ['*'] : [])];
    const allowFrom = [...new Set([...named(settings.allowFrom), ...extra])];
    return { ...settings, allowFrom, groupPolicyInThread: settings.groupPolicyInThread ?? settings.groupPolicy };
  });

export type MattermostSettings = z.infer<typeof mattermostSettingsSchema>;

/** Under `allowFromMatchMode: "username"` a bare entry is a username, which the framework writes `@name`. */
function asEntry(entry: string, mode: 'id' | 'username' | 'email'): string {
  const trimmed = entry.trim();
  if (mode !== 'username' || trimmed === '*' || trimmed.startsWith('@') || trimmed === '') return entry;
  return `@${trimmed}`;
}

/** The parts of @mattermost/client the channel uses (loaded only when the channel starts). */
export type MattermostSdk = Pick<typeof import('@mattermost/client'), 'Client4' | 'WebSocketClient'>;

/**
 * The SDK is CommonJS whose Client4 and WebSocketClient are getters Node's ESM import cannot see as named exports:
 * from the built package they are only on `default` (vitest's interop shows them on both).
 */
function sdkOf(loaded: unknown): MattermostSdk {
  for (const candidate of [loaded, (loaded as { default?: unknown } | null)?.default]) {
    const sdk = candidate as Partial<MattermostSdk> | null | undefined;
    if (typeof sdk?.Client4 === 'function' && typeof sdk.WebSocketClient === 'function') return sdk as MattermostSdk;
  }
  throw new Error('@mattermost/client did not load as expected (no Client4 or WebSocketClient)');
}

const TOKEN_HINT =
  'In Mattermost: System Console → Integrations → Bot Accounts (enable them), then Integrations → Bot Accounts → ' +
  'Add Bot Account, and copy its access token; add the bot to the teams and channels it should serve.';

export const mattermostChannel = defineChannel<MattermostSettings>({
  name: 'mattermost',
  displayName: 'Mattermost',
  schema: mattermostSettingsSchema,
  setup: {
    officialUrl: 'https://developers.mattermost.com/integrate/reference/bot-accounts/',
    fields: [
      {
        key: 'serverUrl',
        kind: 'string',
        label: 'Server URL',
        help: 'Your Mattermost server, e.g. https://chat.example.com (https; plain http only for a server on this machine).',
        required: true,
      },
      {
        key: 'token',
        kind: 'secret',
        label: 'Bot token',
        help: TOKEN_HINT,
        required: true,
        credential: true,
      },
      {
        key: 'teamId',
        kind: 'string',
        label: 'Team id',
        help: 'Serve only this team’s channels (direct messages always work); empty: every team the bot is in.',
      },
      allowFromField,
      groupPolicyField(),
      {
        key: 'groupPolicyInThread',
        kind: 'enum',
        label: 'Threads',
        help: 'Inside a thread: mention, open or allowlist as for channels; empty: the same as Group chats.',
        choices: GROUP_POLICIES,
      },
    ],
  } satisfies ChannelSetup,
  setupHint:
    'Create a bot account in Mattermost (Integrations → Bot Accounts) and put the server address in ' +
    'channels.mattermost.serverUrl and its token in channels.mattermost.token.',
  validate(settings) {
    requireSetting('mattermost', 'serverUrl', settings.serverUrl, 'The address you open Mattermost at in a browser.');
    requireSetting('mattermost', 'token', settings.token, TOKEN_HINT);
    serverRoot(settings.serverUrl);
  },
  verify: verifyToken,
  async createPlatform(settings, context) {
    const loaded = await channelSdk(
      'mattermost',
      'Mattermost',
      '@mattermost/client',
      () => import('@mattermost/client'),
    );
    const sdk = sdkOf(loaded);
    const { MattermostPlatform } = await import('./platform.js');
    return new MattermostPlatform({ sdk, settings, log: context.log });
  },
});

const VERIFY_TIMEOUT_MS = 4_000;

/** GET /api/v4/users/me at the configured server: does it accept the token, and which account is it. */
async function verifyToken(settings: MattermostSettings): Promise<VerifyResult> {
  let response: Response;
  try {
    response = await fetch(`${serverRoot(settings.serverUrl)}/api/v4/users/me`, {
      headers: { Authorization: `Bearer ${settings.token}` },
      redirect: 'manual',
      signal: AbortSignal.timeout(VERIFY_TIMEOUT_MS),
    });
  } catch {
    return { status: 'warn', message: 'Could not reach the Mattermost server now. Try again later.' };
  }
  const me = z
    .looseObject({ id: z.string(), username: z.string() })
    .safeParse(await response.json().catch(() => undefined));
  if (response.status === 401 || response.status === 403) {
    return { status: 'fail', message: `Mattermost rejected the token: HTTP ${response.status}.` };
  }
  if (!response.ok || !me.success) {
    return {
      status: 'warn',
      message: `The server did not answer as Mattermost does (HTTP ${response.status}): check channels.mattermost.serverUrl.`,
    };
  }
  return {
    status: 'pass',
    message: 'Mattermost accepted the token.',
    identity: { name: me.data.username, account: me.data.id },
  };
}

/**
 * The server's root without a trailing slash. The token goes with every request and the WebSocket, so plain http is
 * accepted only for a server on this machine; a URL with a query, fragment or user name is refused.
 */
export function serverRoot(serverUrl: string): string {
  const checked = checkSecureUrl(serverUrl.trim());
  const problem =
    'error' in checked
      ? checked.error
      : checked.url.search || checked.url.hash || checked.url.username || checked.url.password
        ? 'must be just the server address (no query, #fragment or user name)'
        : undefined;
  if (problem)
    throw new UserError(
      `channels.mattermost.serverUrl ${problem}: ${serverUrl}`,
      'The bot token is sent with every request, e.g. https://chat.example.com.',
    );
  return serverUrl.trim().replace(/\/+$/, '');
}

/** The WebSocket endpoint of a server root: https → wss, http → ws. */
export function websocketUrl(root: string): string {
  return `${root.replace(/^http/i, 'ws')}/api/v4/websocket`;
}
