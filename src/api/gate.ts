/**
 * The API's gate, run before any handler: who may call (Host, Origin), CORS answers, the API key with its wrong-key
 * limiter, and the JSON-only body rule. Each check throws an HttpError saying what is wrong and how to fix it.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AuthLimiter } from '../security/auth-limiter.js';
import { hostHeaderAllowed, originAllowed } from '../security/hosts.js';
import { secretMatches } from '../security/secrets.js';
import { HttpError } from './http.js';

/** The request fields the gate reads (a plain object in tests). */
export type GateRequest = Pick<IncomingMessage, 'headers' | 'method'> & {
  socket: { remoteAddress?: string | undefined };
};

/** A browser page of another site (by `Origin`) or a rebound DNS name (by `Host`) gets nothing, not even /health. */
export function refuseForeignCallers(req: GateRequest, bindHost: string, corsOrigins: readonly string[]): void {
  const alsoAllowed = corsOrigins.flatMap((origin) => hostOf(origin));
  if (!hostHeaderAllowed(req.headers.host, { bindHost, alsoAllowed })) {
    throw new HttpError(
      421,
      `the Host header ${quote(req.headers.host)} does not name this server: it listens on ${bindHost}, so requests ` +
        'must be sent to 127.0.0.1, localhost or [::1] (behind a reverse proxy, add its origin to api.corsOrigins)',
      'invalid_request_error',
      'host_not_allowed',
    );
  }
  if (!originAllowed(req.headers.origin, { allowed: corsOrigins })) {
    throw new HttpError(
      403,
      `requests from the web page ${quote(req.headers.origin)} are refused: add that origin to api.corsOrigins in ` +
        '~/.nanobot/config.json to allow it (clients that are not browsers send no Origin header)',
      'invalid_request_error',
      'origin_not_allowed',
    );
  }
}

/** The body must be JSON: what a page can POST cross-site without a preflight (text/plain, forms) is refused. */
export function requireJson(req: GateRequest): void {
  const header = req.headers['content-type'] ?? '';
  const [type = '', ...params] = header.split(';').map((part) => part.trim().toLowerCase());
  const charset = params
    .find((param) => param.startsWith('charset='))
    ?.slice('charset='.length)
    .replace(/"/g, '');
  if (type === 'application/json' && (charset === undefined || charset === 'utf-8' || charset === 'utf8')) return;
  throw new HttpError(
    415,
    `the request body must be JSON: send "Content-Type: application/json" (got ${quote(req.headers['content-type'])})`,
    'invalid_request_error',
    'unsupported_media_type',
  );
}

/** With an API key configured: a limited address gets 429, a missing or wrong key 401 (and counts as a failure). */
export function authorize(req: GateRequest, apiKey: string | null | undefined, limiter: AuthLimiter): void {
  if (!apiKey) return;
  const address = req.socket.remoteAddress;
  const wait = limiter.retryAfterS(address);
  if (wait > 0) {
    throw new HttpError(
      429,
      `too many requests with a wrong API key from this address; retry in ${wait} s with the right api.apiKey`,
      'rate_limit_error',
      'too_many_auth_failures',
      wait,
    );
  }
  const match = /^Bearer\s+(.+)$/i.exec(req.headers.authorization ?? '');
  if (!secretMatches(apiKey, match?.[1]?.trim())) {
    limiter.recordFailure(address);
    throw new HttpError(401, 'missing or wrong API key: send "Authorization: Bearer <api.apiKey>"', 'invalid_api_key');
  }
}

/** Adds CORS headers for allowed origins; answers preflight requests (returns true when it did). */
export function applyCors(
  req: GateRequest,
  res: Pick<ServerResponse, 'setHeader' | 'writeHead'>,
  allowed: readonly string[],
): boolean {
  const origin = req.headers.origin;
  const ok = origin !== undefined && originAllowed(origin, { allowed });
  if (ok) {
    res.setHeader('access-control-allow-origin', allowed.includes('*') ? '*' : origin);
    res.setHeader('vary', 'Origin');
  }
  if (req.method !== 'OPTIONS') return false;
  if (ok) {
    res.setHeader('access-control-allow-methods', 'GET, POST, OPTIONS');
    res.setHeader('access-control-allow-headers', 'authorization, content-type');
    res.setHeader('access-control-max-age', '600');
  }
  res.writeHead(ok ? 204 : 403).end();
  return true;
}

/** `https://proxy.example` → [`proxy.example`]; nothing for `*` or a malformed entry. */
function hostOf(origin: string): string[] {
  try {
    return origin === '*' ? [] : [new URL(origin).host];
  } catch {
    return [];
  }
}

/** A header value for an error message: quoted, cut short (it comes from the client). */
function quote(value: string | undefined): string {
  if (value === undefined) return '(none)';
  return JSON.stringify(value.length > 100 ? `${value.slice(0, 100)}…` : value);
}
