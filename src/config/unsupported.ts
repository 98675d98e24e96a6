/**
 * Keys of upstream nanobot's config that this version accepts but does not act on yet, each with why and what
 * brings it. `doctor`, `status` and the gateway's start-up log name every one a user's config sets (a value other
 * than upstream's default), so nothing a user set is silently ignored. Remove an entry when its key starts working.
 */
import { isPlainObject } from './keys.js';

export interface UnsupportedKey {
  /** Dot path in camelCase; `*` stands for any name (`providers.*.proxy`). A block covers every key under it. */
  path: string;
  /** One line: what it does upstream and when it comes here. */
  reason: string;
  /** Upstream's default: a value equal to it (or null) is not "set". A block compares key by key. */
  default?: unknown;
  /** Overrides the comparison with the default (channel blocks count when enabled). */
  isSet?: (value: unknown) => boolean;
}

/** Upstream's NapCat group policy may be a reply probability; 0 and 1 are mention and open. */
const isProbability = (value: unknown) => typeof value === 'number' && value !== 0 && value !== 1;
const PROBABILITY =
  'a reply probability is not supported here: 1 answers every message (open), any other number only mentions';

/** Keys of upstream's blocks for the channels this version has, which those channels do not act on (yet). */
const CHANNEL_KEYS_NOT_ACTED_ON: readonly UnsupportedKey[] = [
  ...channelKeys('telegram', 'the Telegram channel does not use it yet', {
    reactEmoji: '👀',
    connectionPoolSize: 32,
    poolTimeout: 5,
    inlineKeyboards: false,
    richMessages: false,
  }),
  ...channelKeys('discord', 'the Discord channel does not use it yet', {
    readReceiptEmoji: '👀',
    workingEmoji: '🔧',
    workingEmojiDelay: 2,
    proxyUsername: null,
    proxyPassword: null,
  }),
  {
    path: 'channels.discord.proxy',
    reason: 'discord.js cannot send its gateway connection through a proxy',
    isSet: (value) => typeof value === 'string' && value.trim() !== '',
  },
  ...channelKeys('slack', 'the Slack channel does not use it yet', {
    userTokenReadOnly: true,
    reactEmoji: 'eyes',
    doneEmoji: 'white_check_mark',
    webhookPath: '/slack/events',
  }),
  ...channelKeys('feishu', 'the Feishu channel does not react to messages yet', {
    reactEmoji: 'THUMBSUP',
    doneEmoji: null,
    toolHintPrefix: '🔧',
  }),
  ...channelKeys('email', 'the email channel does not expunge moved mail yet', { postActionExpunge: false }),
  ...channelKeys('matrix', 'the Matrix channel does not use it yet', {
    sasVerification: false,
    syncStopGraceSeconds: 2,
    maxMediaBytes: 20_971_520,
    maxConcurrentMediaDownloads: 2,
  }),
  ...channelKeys('mattermost', 'the Mattermost channel does not use it yet', {
    reactEmoji: 'eyes',
    doneEmoji: 'white_check_mark',
    streamingMaxChars: 16000,
  }),
  {
    path: 'channels.mattermost.allowFromMatchMode',
    reason: 'allowFrom entries are user ids or @usernames here; e-mail addresses admit nobody (strangers can pair)',
    isSet: (value) => value === 'email',
  },
  {
    path: 'channels.msteams.validateInboundAuth',
    reason: 'the Bot Framework token check cannot be switched off here (with false the channel does not start)',
    isSet: (value) => value === false,
  },
  ...channelKeys(
    'weixin',
    'the WeChat channel sends no live blocks or structured progress yet (answers arrive whole)',
    {
      replyProgressMessages: false,
      replyProgressMaxMessages: 2,
      blockStreaming: false,
      blockStreamingMinChars: 1200,
      blockStreamingMaxMessages: 3,
    },
  ),
  {
    path: 'channels.napcat.groupPolicy',
    reason: PROBABILITY,
    isSet: isProbability,
  },
  {
    path: 'channels.napcat.groupPolicyOverrides',
    reason: PROBABILITY,
    isSet: (value) => isPlainObject(value) && Object.values(value).some(isProbability),
  },
  ...channelKeys(
    'dingtalk',
    'the agent sends local files here, so remote media URLs (and their redirects) are never fetched for sending',
    { allowRemoteMediaRedirects: false, remoteMediaRedirectAllowedHosts: [] },
  ),
  {
    path: 'channels.qq.mediaDir',
    reason: 'attachments are saved under ~/.nanobot/media like every channel’s (upstream’s custom folder is not used)',
    default: '',
  },
  {
    path: 'channels.qq.downloadChunkSize',
    reason: 'downloads stream in the network’s own chunks here; only the size cap (downloadMaxBytes) applies',
    default: 262_144,
  },
  {
    path: 'channels.whatsapp.bridgeUrl',
    reason: 'no bridge process here: Baileys runs inside the gateway (upstream dropped the bridge too)',
  },
  {
    path: 'channels.whatsapp.bridgeToken',
    reason: 'no bridge process here: Baileys runs inside the gateway, so there is no bridge to authenticate to',
    default: '',
  },
  {
    path: 'channels.whatsapp.databasePath',
    reason: 'upstream’s neonize SQLite session; the session here is Baileys’ multi-file folder (whatsapp-auth)',
    default: '',
  },
  ...channelKeys('websocket', 'the WebSocket channel does not use it yet', {
    unixSocketPath: '',
    trustedProxyAuth: null,
    pingTimeoutS: 20,
    sslCertfile: '',
    sslKeyfile: '',
  }),
];

function channelKeys(name: string, reason: string, defaults: Record<string, unknown>): UnsupportedKey[] {
  return Object.entries(defaults).map(([key, value]) => ({
    path: `channels.${name}.${key}`,
    reason,
    ...(value === null ? {} : { default: value }),
  }));
}
export const UNSUPPORTED_KEYS: readonly UnsupportedKey[] = [
  {
    path: 'agents.defaults.contextBlockLimit',
    reason: 'a fixed prompt budget; the history budget here is contextWindowTokens minus maxTokens',
  },
  {
    path: 'agents.defaults.failOnToolError',
    // Upstream's default (true) ends a turn at the first tool error; here every tool error goes back to the model,
    // which is upstream's `false`. Only a value other than upstream's default is reported, like every entry.
    reason: 'here every tool error goes back to the model (upstream’s false); ending the turn (true) comes later',
    default: true,
  },
  {
    path: 'agents.defaults.fallbackModels.*.contextWindowTokens',
    reason: 'a fallback model uses the primary model’s context window here',
  },
  {
    path: 'agents.defaults.dream.cron',
    reason: 'Dream runs every dream.intervalH hours here; the legacy cron expression is not read',
  },
  {
    path: 'tools.my',
    reason: 'the self-inspection tool `my` is not in nanobot-ts yet (a later issue)',
    default: { enable: true, allowSet: false },
  },
  {
    path: 'tools.cliApps',
    reason: 'the CLI-apps tool is not in nanobot-ts yet (a later issue)',
    default: { enable: true, installTimeout: 300, runTimeout: 60, catalogTtlSeconds: 3600 },
  },
  {
    path: 'tools.webuiAllowLocalServiceAccess',
    reason: 'the WebUI has no Full Access mode in this version (a later issue)',
    default: true,
  },
  {
    path: 'tools.webuiAllowRemotePackageInstall',
    reason: 'the WebUI does not install packages or skills here',
    default: false,
  },
  ...CHANNEL_KEYS_NOT_ACTED_ON,
];

/**
 * Keys upstream reads no more either (deprecated, or written by older releases): known, so not "unknown", and not
 * reported, since setting them does nothing in upstream too.
 */
export const IGNORED_KEYS: readonly string[] = [
  'channels.extractDocumentText',
  'agents.defaults.dream.maxBatchSize',
  'agents.defaults.dream.maxIterations',
  'agents.defaults.dream.annotateLineAges',
];

export interface UnsupportedFinding {
  /** The key as set (`providers.openai.proxy`). */
  path: string;
  /** The keys set inside a block (`enabled, model`), when the entry is a block. */
  keys: string[];
  reason: string;
}

/** The unsupported keys a (normalised, null-free) config tree sets. */
export function findUnsupported(tree: Record<string, unknown>): UnsupportedFinding[] {
  const found: UnsupportedFinding[] = [];
  for (const entry of UNSUPPORTED_KEYS) {
    for (const [path, value] of valuesAt(tree, entry.path.split('.'), [])) {
      if (value === null || value === undefined) continue;
      const keys = entry.isSet ? (entry.isSet(value) ? [] : undefined) : differingKeys(value, entry.default);
      if (keys) found.push({ path: path.join('.'), keys, reason: entry.reason });
    }
  }
  return found;
}

/** undefined: the value is upstream's default; else the keys of a block that differ (empty for a plain value). */
function differingKeys(value: unknown, fallback: unknown): string[] | undefined {
  if (isPlainObject(value) && isPlainObject(fallback)) {
    const keys = Object.keys(value).filter((key) => value[key] !== null && !sameJson(value[key], fallback[key]));
    return keys.length ? keys : undefined;
  }
  return fallback !== undefined && sameJson(value, fallback) ? undefined : [];
}

function sameJson(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/** Every value at a path with `*` segments (object members and array items), with its concrete path. */
function valuesAt(node: unknown, path: string[], at: string[]): [string[], unknown][] {
  if (path.length === 0) return [[at, node]];
  const [head, ...rest] = path as [string, ...string[]];
  if (head === '*') {
    if (Array.isArray(node)) return node.flatMap((item, i) => valuesAt(item, rest, [...at, String(i)]));
    if (!isPlainObject(node)) return [];
    return Object.entries(node).flatMap(([key, child]) => valuesAt(child, rest, [...at, key]));
  }
  if (!isPlainObject(node) || !(head in node)) return [];
  return valuesAt(node[head], rest, [...at, head]);
}

/** Is `path` (concrete) covered by an unsupported or ignored entry, itself or under a block? */
export function isRegistered(path: string[]): boolean {
  return [...UNSUPPORTED_KEYS.map((entry) => entry.path), ...IGNORED_KEYS].some((pattern) => {
    const parts = pattern.split('.');
    return parts.length <= path.length && parts.every((part, i) => part === '*' || part === path[i]);
  });
}
