/**
 * The MoChat channel (mochat.io, the chat service of "claw" agents): sessions (one-to-one chats with the agent) and
 * panels (group channels), over MoChat's Socket.IO endpoint, with its HTTP long-poll API as the fallback when the
 * socket cannot be had; replies go out through its HTTP API. Settings are upstream nanobot's `channels.mochat` keys
 * (camelCase as its config writes them). socket.io-client (and its msgpack parser) are installed on demand and
 * imported only when the channel starts.
 */
import { z } from 'zod';
import { checkSecureUrl } from '../../security/hosts.js';
import { UserError } from '../../util/errors.js';
import { defineChannel, type VerifyResult } from '../definition.js';
import { channelSdk, channelSettingsSchema, idList, requireSetting } from '../settings.js';
import { allowFromField, type ChannelSetup, groupPolicyField } from '../setup.js';

export const MOCHAT_URL = 'https://mochat.io';

export const mochatSettingsSchema = channelSettingsSchema.extend({
  /** MoChat's address: the HTTP API is under it (and the socket, unless socketUrl says otherwise). */
  baseUrl: z.string().default(MOCHAT_URL),
  /** The Socket.IO server's address; empty: baseUrl. */
  socketUrl: z.string().default(''),
  socketPath: z.string().default('/socket.io'),
  /** true: the socket speaks Socket.IO's JSON packets instead of msgpack. */
  socketDisableMsgpack: z.boolean().default(false),
  socketReconnectDelayMs: z.int().min(0).default(1000),
  socketMaxReconnectDelayMs: z.int().min(0).default(10000),
  socketConnectTimeoutMs: z.int().min(0).default(10000),
  /** How often the session and panel lists are read again (for `"*"`), and the panel poll's pace when polling. */
  refreshIntervalMs: z.int().min(0).default(30000),
  /** How long one HTTP long-poll of a session waits for events (fallback mode). */
  watchTimeoutMs: z.int().min(0).default(25000),
  /** Most events (or panel messages) fetched at once. */
  watchLimit: z.int().min(1).default(100),
  /** Pause after a failed long-poll before the next. */
  retryDelayMs: z.int().min(0).default(500),
  /** Socket reconnects before giving up for a while; 0: no limit. */
  maxRetryAttempts: z.int().min(0).default(0),
  /** The agent's claw token (X-Claw-Token on every call, and the socket's auth). */
  clawToken: z.string().default(''),
  /** The agent's own user id: its own messages are skipped, and `@<id>` mentions it. */
  agentUserId: z.string().default(''),
  /** Session ids to subscribe; `"*"`: every session of the agent (listed again every refreshIntervalMs). */
  sessions: idList.default([]),
  /** Panel ids to subscribe; `"*"`: every panel of the workspace group (none: any panel's pushes, as upstream). */
  panels: idList.default([]),
  mention: z.looseObject({ requireInGroups: z.boolean().default(false) }).prefault({}),
  /** Per group or panel id (or `"*"`): whether a panel message must mention the agent to be answered. */
  groups: z.record(z.string(), z.looseObject({ requireMention: z.boolean().default(false) })).default({}),
  /** `non-mention`: panel messages that do not mention the agent wait replyDelayMs and go to it together. */
  replyDelayMode: z.string().default('non-mention'),
  replyDelayMs: z.int().min(0).default(120000),
});

export type MochatSettings = z.infer<typeof mochatSettingsSchema>;

const HINT =
  'Register the agent on MoChat (https://mochat.io/) and put its claw token in channels.mochat.clawToken and its ' +
  'user id in channels.mochat.agentUserId; list the sessions and panels to serve ("*" for all).';

/** An http(s) root without a trailing slash; the claw token goes with every request, so http only to this machine. */
export function rootOf(key: 'baseUrl' | 'socketUrl', value: string): string {
  const checked = checkSecureUrl(value.trim());
  const problem =
    'error' in checked
      ? checked.error
      : checked.url.search || checked.url.hash || checked.url.username || checked.url.password
        ? 'must be just the server address (no query, #fragment or user name)'
        : undefined;
  if (problem) {
    throw new UserError(
      `channels.mochat.${key} ${problem}: ${value}`,
      `The claw token is sent there; the default is ${MOCHAT_URL}.`,
    );
  }
  return value.trim().replace(/\/+$/, '');
}

/** The parts of socket.io-client the channel uses (loaded only when it starts). */
export type SocketIoSdk = Pick<typeof import('socket.io-client'), 'io'>;
/** A Socket.IO parser (socket.io-msgpack-parser's shape). */
export type SocketIoParser = Pick<typeof import('socket.io-msgpack-parser'), 'Encoder' | 'Decoder' | 'protocol'>;

function parserOf(loaded: unknown): SocketIoParser {
  for (const candidate of [loaded, (loaded as { default?: unknown } | null)?.default]) {
    const parser = candidate as Partial<SocketIoParser> | null | undefined;
    if (typeof parser?.Encoder === 'function' && typeof parser.Decoder === 'function') return parser as SocketIoParser;
  }
  throw new Error('socket.io-msgpack-parser did not load as expected (no Encoder or Decoder)');
}

export const mochatChannel = defineChannel<MochatSettings>({
  name: 'mochat',
  displayName: 'MoChat',
  schema: mochatSettingsSchema,
  setup: {
    officialUrl: 'https://mochat.io/',
    fields: [
      {
        key: 'baseUrl',
        kind: 'string',
        label: 'Server URL',
        help: `MoChat's address (https; plain http only for a server on this machine).`,
        defaultValue: MOCHAT_URL,
      },
      {
        key: 'clawToken',
        kind: 'secret',
        label: 'Claw token',
        help: 'The agent’s claw token from MoChat.',
        required: true,
        credential: true,
      },
      {
        key: 'agentUserId',
        kind: 'string',
        label: 'Agent user id',
        help: 'The agent’s own MoChat user id: its own messages are skipped and @<id> mentions it.',
      },
      {
        key: 'sessions',
        kind: 'list',
        label: 'Sessions',
        help: 'Session ids (session_…) to serve, comma-separated; * for every session of the agent.',
      },
      {
        key: 'panels',
        kind: 'list',
        label: 'Panels',
        help: 'Panel (group channel) ids to serve, comma-separated; * for every panel of the workspace.',
      },
      {
        ...allowFromField,
        help: 'MoChat user ids who may talk to the agent, comma-separated; * lets everyone in. Strangers get a pairing code in a session.',
      },
      groupPolicyField(),
    ],
  } satisfies ChannelSetup,
  setupHint: HINT,
  validate(settings) {
    requireSetting('mochat', 'clawToken', settings.clawToken, HINT);
    rootOf('baseUrl', settings.baseUrl);
    if (settings.socketUrl.trim()) rootOf('socketUrl', settings.socketUrl);
  },
  verify: verifyToken,
  async createPlatform(settings, context) {
    const sdk = await channelSdk('mochat', 'MoChat', 'socket.io-client', () => import('socket.io-client'));
    const parser = settings().socketDisableMsgpack
      ? undefined
      : parserOf(
          await channelSdk('mochat', 'MoChat', 'socket.io-msgpack-parser', () => import('socket.io-msgpack-parser')),
        );
    const { MochatPlatform } = await import('./platform.js');
    return new MochatPlatform({ sdk, parser, settings, dataDir: context.dataDir, log: context.log });
  },
});

/** Lists the agent's sessions: the cheapest call that needs a valid claw token. */
async function verifyToken(settings: MochatSettings): Promise<VerifyResult> {
  const { MochatApi, MochatApiError } = await import('./api.js');
  const api = new MochatApi({ baseUrl: rootOf('baseUrl', settings.baseUrl), token: settings.clawToken });
  try {
    const listed = await api.post('/api/claw/sessions/list', {}, AbortSignal.timeout(4_000));
    const count = Array.isArray(listed.sessions) ? listed.sessions.length : 0;
    return {
      status: 'pass',
      message: `MoChat accepted the claw token (${count} session(s)).`,
      ...(settings.agentUserId ? { identity: { account: settings.agentUserId } } : {}),
    };
  } catch (err) {
    if (err instanceof MochatApiError && err.refused) return { status: 'fail', message: err.message };
    return { status: 'warn', message: 'Could not reach MoChat now. Try again later.' };
  }
}
