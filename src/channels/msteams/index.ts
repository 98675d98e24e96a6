/**
 * The Microsoft Teams channel: settings (nanobot's `channels.msteams` keys) and its registration. jose (JWT and JWKS
 * verification) is imported only when the channel starts. Microsoft's own SDKs do not fit: @microsoft/agents-hosting
 * fetches Bot Framework's keys from a fixed URL and does not check the token's serviceurl claim, and both it and
 * botbuilder get the bot's token through MSAL, which insists on https authorities; the Bot Connector protocol itself
 * is two small REST calls.
 */
import { z } from 'zod';
import { checkSecureUrl } from '../../security/hosts.js';
import { UserError } from '../../util/errors.js';
import { defineChannel, type VerifyResult } from '../definition.js';
import { channelSdk, channelSettingsSchema, requireSetting } from '../settings.js';
import { allowFromField, type ChannelSetup, groupPolicyField } from '../setup.js';
import { AppTokenSource, CredentialsRejected } from './token.js';
import { DEFAULT_TRUSTED_SERVICE_URL_HOSTS, hostPatternProblem } from './trust.js';

export const DEFAULT_OPENID_METADATA_URL = 'https://login.botframework.com/v1/.well-known/openidconfiguration';
const BOT_FRAMEWORK_SCOPE = 'https://api.botframework.com/.default';

export const msteamsSettingsSchema = channelSettingsSchema.extend({
  /** The bot's Microsoft App ID (its Entra app registration's client id): the audience of every inbound token. */
  appId: z.string().default(''),
  /** A client secret of that app registration (its Value). */
  appPassword: z.string().default(''),
  /** The Entra tenant of a single-tenant bot; empty for a multi-tenant one (tokens from botframework.com). */
  tenantId: z.string().default(''),
  /** Where the messaging endpoint listens (upstream's default: every interface; every request must carry a token). */
  host: z.string().default('0.0.0.0'),
  port: z.int().min(0).max(65535).default(3978),
  path: z.string().default('/api/messages'),
  /** Reply to the user's activity (in a channel: inside the post's thread); false: a new message or post. */
  replyInThread: z.boolean().default(true),
  /** What the agent is told when a message is only an @mention of the bot; empty: such messages are ignored. */
  mentionOnlyResponse: z.string().default('Hi — what can I help with?'),
  /** Upstream can switch the token check off; here it is always on (false refuses to start). */
  validateInboundAuth: z.boolean().default(true),
  /** A conversation not heard from for this many days is forgotten (no more replies or cron messages to it). */
  refTtlDays: z.int().min(1).default(30),
  /** Do not keep Bot Framework Web Chat conversations (the Azure portal's test chat). */
  pruneWebChatRefs: z.boolean().default(true),
  /** Keep group chat and channel conversations in memory only (1:1 chats are saved for restarts). */
  pruneNonPersonalRefs: z.boolean().default(true),
  /** How often a sent message refreshes its conversation's expiry on disk, in seconds. */
  refTouchIntervalS: z.int().min(0).default(300),
  /** Hosts the bot's token may be sent to (an activity's serviceUrl); `*.domain` for subdomains. */
  trustedServiceUrlHosts: z.array(z.string()).default([...DEFAULT_TRUSTED_SERVICE_URL_HOSTS]),
  /** For tests and sovereign clouds only: Bot Framework's OpenID metadata (its keys and issuer). https only. */
  openIdMetadataUrl: z.string().default(DEFAULT_OPENID_METADATA_URL),
  /** For tests and sovereign clouds only: the OAuth token URL; empty = Microsoft's login for tenantId. https only. */
  tokenUrl: z.string().default(''),
});

export type MsTeamsSettings = z.infer<typeof msteamsSettingsSchema>;

/** Where the bot's client-credentials token comes from. */
export function tokenUrlOf(settings: Pick<MsTeamsSettings, 'tokenUrl' | 'tenantId'>): string {
  if (settings.tokenUrl.trim()) return settings.tokenUrl.trim();
  const tenant = settings.tenantId.trim() || 'botframework.com';
  return `https://login.microsoftonline.com/${encodeURIComponent(tenant)}/oauth2/v2.0/token`;
}

const CREDENTIALS_HINT =
  'Register a bot (Teams Developer Portal → Tools → Bot management, or an Azure Bot resource): its Microsoft App ID ' +
  'is channels.msteams.appId, and a client secret you create for it is appPassword.';

export const msteamsChannel = defineChannel<MsTeamsSettings>({
  name: 'msteams',
  displayName: 'Microsoft Teams',
  schema: msteamsSettingsSchema,
  setup: {
    officialUrl: 'https://dev.teams.microsoft.com/apps',
    fields: [
      {
        key: 'appId',
        kind: 'string',
        label: 'App ID',
        help: 'The bot’s Microsoft App ID (Teams Developer Portal → Bot management, or the Azure Bot’s Configuration).',
        required: true,
        credential: true,
      },
      {
        key: 'appPassword',
        kind: 'secret',
        label: 'Client secret',
        help: 'A client secret of the bot’s app registration: its Value (shown once when you create it), not its ID.',
        required: true,
        credential: true,
      },
      {
        key: 'tenantId',
        kind: 'string',
        label: 'Tenant ID',
        help: 'Your Entra tenant id for a single-tenant bot; leave empty for a multi-tenant one.',
      },
      {
        key: 'port',
        kind: 'int',
        label: 'Port',
        help: 'The messaging endpoint’s port; put it behind https (a reverse proxy or tunnel) and register that URL.',
        defaultValue: 3978,
      },
      {
        key: 'path',
        kind: 'string',
        label: 'Callback path',
        help: 'The messaging endpoint’s path: the bot’s messaging endpoint is https://<your host><path>.',
        defaultValue: '/api/messages',
      },
      allowFromField,
      groupPolicyField(),
    ],
  } satisfies ChannelSetup,
  setupHint:
    'Register a bot for Teams (dev.teams.microsoft.com → Tools → Bot management), put its App ID and a client ' +
    'secret in channels.msteams.appId and appPassword, and point its messaging endpoint at https://<host>/api/messages.',
  validate(settings) {
    requireSetting('msteams', 'appId', settings.appId, CREDENTIALS_HINT);
    requireSetting('msteams', 'appPassword', settings.appPassword, CREDENTIALS_HINT);
    if (!settings.validateInboundAuth) {
      throw new UserError(
        'channels.msteams.validateInboundAuth is false, but nanobot-ts always checks that an activity comes from Bot Framework.',
        'Remove validateInboundAuth (anyone who finds the endpoint could otherwise write as anyone); tests can ' +
          'point openIdMetadataUrl and tokenUrl at a local fake instead.',
      );
    }
    if (!settings.path.startsWith('/') || /[\s?#]/.test(settings.path)) {
      throw new UserError(`channels.msteams.path must be a URL path such as /api/messages: ${settings.path}`);
    }
    for (const key of ['openIdMetadataUrl', 'tokenUrl'] as const) {
      const value = settings[key].trim();
      if (key === 'tokenUrl' && value === '') continue;
      const checked = checkSecureUrl(value);
      if ('error' in checked) {
        throw new UserError(
          `channels.msteams.${key} ${checked.error}: ${value}`,
          key === 'tokenUrl'
            ? 'The client secret is sent there. Leave it empty for Microsoft’s login.'
            : 'It decides which signatures are trusted. Leave it out for Bot Framework’s.',
        );
      }
    }
    for (const host of settings.trustedServiceUrlHosts) {
      const problem = hostPatternProblem(host);
      if (problem) {
        throw new UserError(
          `channels.msteams.trustedServiceUrlHosts: ${JSON.stringify(host)} ${problem}.`,
          'List host names the bot’s token may go to, e.g. smba.trafficmanager.net or *.botframework.com.',
        );
      }
    }
  },
  verify: verifyCredentials,
  async createPlatform(settings, context) {
    const jose = await channelSdk('msteams', 'Microsoft Teams', 'jose', () => import('jose'));
    const { TeamsPlatform } = await import('./platform.js');
    return new TeamsPlatform({ jose, settings, dataDir: context.dataDir, log: context.log });
  },
});

/** A client-credentials token from Microsoft's login: do appId, appPassword and tenantId work together. */
async function verifyCredentials(settings: MsTeamsSettings): Promise<VerifyResult> {
  const tokens = new AppTokenSource({
    tokenUrl: tokenUrlOf(settings),
    appId: settings.appId,
    appPassword: settings.appPassword,
    scope: BOT_FRAMEWORK_SCOPE,
  });
  try {
    await tokens.token();
  } catch (err) {
    if (err instanceof CredentialsRejected) return { status: 'fail', message: err.message };
    return { status: 'warn', message: 'Could not reach Microsoft’s login now. Try again later.' };
  }
  return { status: 'pass', message: 'Microsoft issued the bot a token.', identity: { account: settings.appId } };
}
