/**
 * `channels.websocket` (nanobot's keys): where the server listens, how clients authenticate, and frame limits.
 * On by default, on loopback, with a token: the WebUI is part of every gateway.
 */
import { z } from 'zod';
import { isLoopbackHost } from '../../security/hosts.js';
import { UserError } from '../../util/errors.js';
import { channelSettingsSchema } from '../settings.js';

export const websocketSettingsSchema = channelSettingsSchema.extend({
  enabled: z.boolean().default(true),
  /** `client_id`s allowed to connect; `"*"` = any client that has the token. */
  allowFrom: z.array(z.union([z.string(), z.number()]).transform(String)).default(['*']),
  host: z.string().default('127.0.0.1'),
  port: z.int().min(0).max(65535).default(8765),
  /** The WebSocket upgrade path. */
  path: z.string().default('/'),
  /** A fixed token; empty = the random one in `<data dir>/webui-token`. Required to listen beyond loopback. */
  token: z.string().default(''),
  /**
   * nanobot's token-issue route: GET here returns `{token, expires_in}`, a one-connection WebSocket token. Empty = no
   * such route (`/webui/bootstrap` is always there).
   */
  tokenIssuePath: z.string().default(''),
  /** The secret `/webui/bootstrap` and tokenIssuePath require (`Authorization: Bearer` or `X-Nanobot-Auth`). */
  tokenIssueSecret: z.string().default(''),
  /** How long an issued token is good for, in seconds. */
  tokenTtlS: z.int().min(30).max(86_400).default(300),
  /** The WebSocket URL the bootstrap names (behind a proxy), instead of one derived from the request's Host. */
  publicWsUrl: z.string().default(''),
  /** false lets clients connect without a token (loopback only). */
  websocketRequiresToken: z.boolean().default(true),
  /** Extra browser origins allowed to connect, e.g. `https://nanobot.example.com` behind a reverse proxy. */
  allowedOrigins: z.array(z.string()).default([]),
  /** Largest frame a client may send, in bytes (files go through `POST /api/uploads`, not frames). */
  maxMessageBytes: z.int().min(1024).max(41_943_040).default(1_048_576),
  /** Seconds between keep-alive pings; a client that misses one is dropped. */
  pingIntervalS: z.number().min(1).max(300).default(20),
  /** Serve the WebUI on this port. */
  webui: z.boolean().default(true),
});

export type WebSocketSettings = z.infer<typeof websocketSettingsSchema>;

export function validateWebSocketSettings(settings: WebSocketSettings): void {
  if (!settings.path.startsWith('/')) throw new UserError('channels.websocket.path must start with "/".');
  if (settings.path.startsWith('/api')) throw new UserError('channels.websocket.path must not be under /api.');
  validateIssueSettings(settings);
  for (const origin of settings.allowedOrigins) {
    if (!/^https?:\/\/[^/]+$/.test(origin)) {
      throw new UserError(`channels.websocket.allowedOrigins: "${origin}" is not an origin like https://host[:port].`);
    }
  }
  if (isLoopbackHost(settings.host)) return;
  if (!settings.websocketRequiresToken) {
    throw new UserError(
      `channels.websocket.host is ${settings.host} but websocketRequiresToken is false: anyone on the network could run your agent.`,
      'Bind 127.0.0.1, or turn websocketRequiresToken back on and set channels.websocket.token.',
    );
  }
  if (settings.token.trim().length < 16) {
    throw new UserError(
      `channels.websocket.host is ${settings.host} (beyond this machine), so channels.websocket.token must be set (16+ characters).`,
      'Set a long random token (e.g. `openssl rand -hex 24`), or bind 127.0.0.1.',
    );
  }
}

/** The bootstrap's own route: nanobot's WebUI asks here first. */
export const BOOTSTRAP_PATH = '/webui/bootstrap';

function validateIssueSettings(settings: WebSocketSettings): void {
  if (normalizePath(settings.path) === BOOTSTRAP_PATH) {
    throw new UserError(`channels.websocket.path must not be ${BOOTSTRAP_PATH} (the WebUI's bootstrap route).`);
  }
  const issue = settings.tokenIssuePath.trim();
  if (issue) {
    if (!issue.startsWith('/')) throw new UserError('channels.websocket.tokenIssuePath must start with "/".');
    const normal = normalizePath(issue);
    if (normal === normalizePath(settings.path)) {
      throw new UserError('channels.websocket.tokenIssuePath must differ from channels.websocket.path.');
    }
    if (normal === '/api' || normal.startsWith('/api/') || normal === BOOTSTRAP_PATH) {
      throw new UserError(`channels.websocket.tokenIssuePath must not be ${BOOTSTRAP_PATH} or under /api.`);
    }
  }
  const publicUrl = settings.publicWsUrl.trim();
  if (publicUrl) {
    let url: URL | undefined;
    try {
      url = new URL(publicUrl);
    } catch {
      url = undefined;
    }
    if (!url || (url.protocol !== 'ws:' && url.protocol !== 'wss:') || url.username || url.password || url.search) {
      throw new UserError('channels.websocket.publicWsUrl must be a ws:// or wss:// URL without credentials or query.');
    }
    if (normalizePath(url.pathname) !== normalizePath(settings.path)) {
      throw new UserError('channels.websocket.publicWsUrl: its path must be channels.websocket.path.');
    }
  }
}

/** `/chat/ws/` → `/chat/ws`; `/` stays. */
export function normalizePath(path: string): string {
  const trimmed = path.replace(/\/+$/, '');
  return trimmed === '' ? '/' : trimmed;
}

/** The host to put in a URL: a wildcard bind is reached on loopback, IPv6 gets brackets. */
export function hostForUrl(host: string): string {
  if (host === '0.0.0.0' || host === '::') return '127.0.0.1';
  return host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
}
