/**
 * nanobot's `GET /webui/bootstrap` (and the optional `tokenIssuePath`): how a client gets short-lived credentials.
 * The bootstrap answers `{token, api_token, ws_path, ws_url, expires_in, limits, model_name, runtime_surface,
 * runtime_capabilities}`: `token` opens one WebSocket, `api_token` calls `/api/*` until it expires.
 *
 * Who gets them (nanobot's rule, kept strict): when `tokenIssueSecret` or a fixed `token` is configured, only a
 * request presenting one of them (`Authorization: Bearer` or `X-Nanobot-Auth`), even from this machine. Otherwise a
 * browser on this machine (loopback peer, loopback Host, no proxy header from elsewhere) gets them freely, and any
 * other request must present the stored WebUI token. Wrong secrets count against the same per-address limiter as
 * wrong tokens.
 */
import type { IncomingMessage } from 'node:http';
import type { AuthLimiter } from '../../security/auth-limiter.js';
import { isLocalRequest } from '../../security/hosts.js';
import type { IssuedTokens } from '../../security/issued-tokens.js';
import { secretMatches } from '../../security/secrets.js';
import { MAX_CONTENT_CHARS, MAX_MEDIA_PER_MESSAGE } from './protocol.js';
import { normalizePath, type WebSocketSettings } from './settings.js';

export interface BootstrapContext {
  settings: WebSocketSettings;
  /** The static token (configured or stored); undefined when the WebSocket needs none. */
  token: string | undefined;
  tokens: IssuedTokens;
  limiter: AuthLimiter;
  /** The model the agent answers with now ('' before the gateway bound its backend). */
  modelName(): string;
}

export interface JsonReply {
  status: number;
  body: Record<string, unknown>;
  retryAfterS?: number;
}

/** Room a client leaves in a frame for keys, ids and names besides text and attachments (nanobot's figure). */
export const ENVELOPE_RESERVE_BYTES = 64 * 1024;

/** What a client may send, as nanobot's bootstrap `limits` spell it. */
export function bootstrapLimits(settings: WebSocketSettings): Record<string, Record<string, number>> {
  const maxFileBytes = Math.floor(settings.maxMediaMb * 1024 * 1024);
  return {
    transport: { max_frame_bytes: settings.maxMessageBytes, envelope_reserve_bytes: ENVELOPE_RESERVE_BYTES },
    message: { max_text_bytes: MAX_CONTENT_CHARS },
    attachments: {
      max_count: MAX_MEDIA_PER_MESSAGE,
      max_file_bytes: maxFileBytes,
      max_total_bytes: maxFileBytes * MAX_MEDIA_PER_MESSAGE,
    },
  };
}

/** The browser runtime: none of the desktop app's host powers. */
export const RUNTIME_CAPABILITIES = {
  can_restart_engine: false,
  can_pick_folder: false,
  can_open_logs: false,
  can_export_diagnostics: false,
} as const;

export function handleBootstrap(req: IncomingMessage, context: BootstrapContext): JsonReply {
  const refused = refusal(req, context);
  if (refused) return refused;
  const { settings, tokens } = context;
  if (!tokens.canIssue(true)) return { status: 429, body: { error: 'too many outstanding tokens' } };
  const ttl = settings.tokenTtlS;
  return {
    status: 200,
    body: {
      token: tokens.issueConnect(ttl, 'webui'),
      api_token: tokens.issueApi(ttl),
      ws_path: normalizePath(settings.path),
      ws_url: wsUrl(req, settings),
      expires_in: ttl,
      limits: bootstrapLimits(settings),
      model_name: context.modelName(),
      runtime_surface: 'browser',
      runtime_capabilities: { ...RUNTIME_CAPABILITIES },
    },
  };
}

/** `tokenIssuePath`: one WebSocket token, `{token, expires_in}`. */
export function handleTokenIssue(req: IncomingMessage, context: BootstrapContext): JsonReply {
  const refused = refusal(req, context);
  if (refused) return refused;
  if (!context.tokens.canIssue()) return { status: 429, body: { error: 'too many outstanding tokens' } };
  const ttl = context.settings.tokenTtlS;
  return { status: 200, body: { token: context.tokens.issueConnect(ttl), expires_in: ttl } };
}

function refusal(req: IncomingMessage, context: BootstrapContext): JsonReply | undefined {
  if (req.method !== 'GET') return { status: 405, body: { error: 'method not allowed' } };
  const { settings, limiter } = context;
  const configured = [settings.tokenIssueSecret.trim(), settings.token.trim()].filter(Boolean);
  const accepted = [...configured, ...(context.token ? [context.token] : [])];
  const given = presentedSecret(req);
  if (configured.length === 0 && given === undefined && isLocalRequest(req.socket.remoteAddress, req.headers)) {
    return undefined;
  }
  const address = req.socket.remoteAddress;
  const wait = limiter.retryAfterS(address);
  if (wait > 0) {
    return { status: 429, body: { error: `too many wrong secrets; retry in ${wait} s` }, retryAfterS: wait };
  }
  if (given !== undefined && accepted.some((secret) => secretMatches(secret, given))) return undefined;
  if (given === undefined && configured.length === 0) {
    return { status: 403, body: { error: 'bootstrap is localhost-only (or send the WebUI token in X-Nanobot-Auth)' } };
  }
  limiter.recordFailure(address);
  return {
    status: 401,
    body: { error: 'missing or wrong secret (X-Nanobot-Auth or Authorization: Bearer <tokenIssueSecret or token>)' },
  };
}

/** `Authorization: Bearer <secret>`, else `X-Nanobot-Auth: <secret>`. */
function presentedSecret(req: IncomingMessage): string | undefined {
  const auth = req.headers.authorization;
  const bearer = auth ? /^Bearer\s+(.+)$/i.exec(auth)?.[1]?.trim() : undefined;
  if (bearer) return bearer;
  const header = req.headers['x-nanobot-auth'];
  const value = (Array.isArray(header) ? header[0] : header)?.trim();
  return value || undefined;
}

const SAFE_HOST = /^[A-Za-z0-9.:[\]-]{1,255}$/;

/** `publicWsUrl`, else `ws(s)://<Host><path>` (wss behind a TLS proxy that says so). */
function wsUrl(req: IncomingMessage, settings: WebSocketSettings): string {
  if (settings.publicWsUrl.trim()) return settings.publicWsUrl.trim();
  const host = req.headers.host && SAFE_HOST.test(req.headers.host) ? req.headers.host : '127.0.0.1';
  const proto = String(req.headers['x-forwarded-proto'] ?? '')
    .split(',', 1)[0]
    ?.trim()
    .toLowerCase();
  const scheme = proto === 'https' || proto === 'wss' ? 'wss' : 'ws';
  return `${scheme}://${host}${normalizePath(settings.path)}`;
}
