/**
 * The NapCat channel: QQ through any OneBot v11 implementation (NapCat, LLOneBot, Lagrange, go-cqhttp), over the
 * implementation's forward WebSocket server. Settings are upstream nanobot's `channels.napcat` keys. The protocol is
 * plain JSON over a WebSocket, so the only library is `ws` (already part of nanobot-ts), loaded when it starts.
 */
import { z } from 'zod';
import { isLoopbackHost } from '../../security/hosts.js';
import { errorMessage, UserError } from '../../util/errors.js';
import { defineChannel, type VerifyResult } from '../definition.js';
import { channelSettingsSchema, requireSetting } from '../settings.js';
import { allowFromField, type ChannelSetup, GROUP_POLICIES, groupPolicyField } from '../setup.js';
import type { WebSocketClass } from './onebot.js';

/**
 * Upstream also takes a number p in [0, 1]: mentions always answered, other messages with probability p. Here 1 is
 * `open` and any other number `mention` (unsupported.ts names it), so an upstream config still starts.
 */
const upstreamGroupPolicy = z.union([z.enum(GROUP_POLICIES), z.number().min(0).max(1)]);
export type UpstreamGroupPolicy = z.infer<typeof upstreamGroupPolicy>;

export const napcatSettingsSchema = channelSettingsSchema
  .extend({
    /** The implementation's forward WebSocket server (NapCat: Network → WebSocket server). */
    wsUrl: z.string().default('ws://127.0.0.1:3001'),
    /** Its token, sent as `Authorization: Bearer …`; empty when the server has none. */
    accessToken: z.string().default(''),
    groupPolicy: upstreamGroupPolicy.default('mention'),
    /** Per-group policy by group number, e.g. {"123456": "open"}; others follow groupPolicy. */
    groupPolicyOverrides: z.record(z.string(), upstreamGroupPolicy).default({}),
    /** Tell the agent when someone joins a group (it may greet them; the new member must pass allowFrom). */
    welcomeNewMembers: z.boolean().default(true),
    /** Upstream's cap for images from users, in bytes: sets maxMediaMb when given. */
    maxImageBytes: z.int().min(1).optional(),
  })
  .transform((settings) => ({
    ...settings,
    groupPolicy: asPolicy(settings.groupPolicy),
    groupPolicyOverrides: Object.fromEntries(
      Object.entries(settings.groupPolicyOverrides).map(([group, policy]) => [group, asPolicy(policy)]),
    ),
    maxMediaMb: settings.maxImageBytes !== undefined ? settings.maxImageBytes / (1024 * 1024) : settings.maxMediaMb,
  }));

export type NapcatSettings = z.infer<typeof napcatSettingsSchema>;

function asPolicy(policy: UpstreamGroupPolicy): (typeof GROUP_POLICIES)[number] {
  if (typeof policy === 'string') return policy;
  return policy >= 1 ? 'open' : 'mention';
}

const URL_HINT =
  'In NapCat’s WebUI: Network configuration → add a "WebSocket server" (forward WebSocket), enable it, and put its ' +
  'address in channels.napcat.wsUrl (e.g. ws://127.0.0.1:3001) and its token in channels.napcat.accessToken.';

/** The checked ws(s) URL; anything else is a setup mistake that names the key. */
export function checkWsUrl(value: string): URL {
  let url: URL | undefined;
  try {
    url = new URL(value.trim());
  } catch {
    url = undefined;
  }
  if (!url || (url.protocol !== 'ws:' && url.protocol !== 'wss:')) {
    throw new UserError(`channels.napcat.wsUrl must be a ws:// or wss:// address, not "${value}".`, URL_HINT);
  }
  return url;
}

/** The token crosses the network in the clear on ws:// to another machine: said once at start. */
export function plainTokenWarning(settings: NapcatSettings): string | undefined {
  const url = checkWsUrl(settings.wsUrl);
  if (url.protocol !== 'ws:' || !settings.accessToken || isLoopbackHost(url.hostname)) return undefined;
  return `channels.napcat.wsUrl is plain ws:// to ${url.host}: the access token travels unencrypted (use wss:// or a tunnel)`;
}

async function loadWebSocket(): Promise<WebSocketClass> {
  const { WebSocket } = await import('ws');
  return WebSocket;
}

export const napcatChannel = defineChannel<NapcatSettings>({
  name: 'napcat',
  displayName: 'NapCat (QQ)',
  schema: napcatSettingsSchema,
  setup: {
    officialUrl: 'https://napneko.github.io/',
    fields: [
      {
        key: 'wsUrl',
        kind: 'string',
        label: 'WebSocket URL',
        help: 'The forward WebSocket server of NapCat (or any OneBot v11 implementation), e.g. ws://127.0.0.1:3001.',
        required: true,
        defaultValue: 'ws://127.0.0.1:3001',
      },
      {
        key: 'accessToken',
        kind: 'secret',
        label: 'Access token',
        help: 'The token set on that WebSocket server; empty when it has none.',
        credential: true,
      },
      { ...allowFromField, help: 'QQ numbers who may talk to the agent, comma-separated; * lets everyone in.' },
      groupPolicyField(),
    ],
  } satisfies ChannelSetup,
  setupHint: URL_HINT,
  validate(settings) {
    requireSetting('napcat', 'wsUrl', settings.wsUrl, URL_HINT);
    checkWsUrl(settings.wsUrl);
  },
  verify: verifyLogin,
  async createPlatform(settings, context) {
    const WebSocket = await loadWebSocket();
    const { NapcatPlatform } = await import('./platform.js');
    return new NapcatPlatform({ WebSocket, settings, log: context.log });
  },
});

/** get_login_info over a short-lived connection: is the server there, does it take the token, which QQ account. */
async function verifyLogin(settings: NapcatSettings): Promise<VerifyResult> {
  const { OneBotSocket } = await import('./onebot.js');
  const { loginSchema } = await import('./platform.js');
  const socket = new OneBotSocket({
    WebSocket: await loadWebSocket(),
    url: checkWsUrl(settings.wsUrl).href,
    accessToken: settings.accessToken,
    onEvent: () => undefined,
    onClose: () => undefined,
  });
  try {
    await socket.open();
    const login = loginSchema.parse(await socket.call('get_login_info', {}, 5_000));
    return {
      status: 'pass',
      message: `The OneBot server is logged in to QQ as ${login.nickname || login.user_id}.`,
      identity: { ...(login.nickname ? { name: login.nickname } : {}), account: login.user_id },
    };
  } catch (err) {
    if (err instanceof UserError) return { status: 'fail', message: err.message };
    return { status: 'warn', message: `Could not ask the OneBot server who it is: ${errorMessage(err)}` };
  } finally {
    socket.close();
  }
}
