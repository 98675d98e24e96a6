/**
 * Maps whatever an upstream call threw (openai / @anthropic-ai/sdk errors, fetch/undici errors, aborts) to a typed
 * `ProviderError`. Duck-typed on purpose: importing both SDKs here would cost ~300 ms at every CLI start.
 */
import type { ProviderError, ProviderErrorKind } from './types.js';

/** What the user can do about a failed model request, naming the setting to check (CLI, chats and the WebUI). */
export function providerErrorHint(kind: ProviderErrorKind, provider: string): string {
  const hints: Record<ProviderErrorKind, string> = {
    auth: `Check providers.${provider}.apiKey in the config (or the provider's API key variable).`,
    quota: 'The account is out of credit or quota; top it up or switch provider/model.',
    rate_limit: 'The provider is rate-limiting; wait a moment and try again.',
    // A stall or the turn deadline names its own setting; a slow start is NANOBOT_LLM_TIMEOUT_S.
    timeout:
      'Try again; if the provider is just slow, raise the limit named above (NANOBOT_LLM_TIMEOUT_S for a slow start).',
    network: `Could not reach the provider; check the network and providers.${provider}.apiBase.`,
    server: 'The provider had an internal error; try again shortly.',
    context_overflow: 'The conversation is too long for the model; start a fresh one with /new.',
    bad_request: 'The provider rejected the request; check the model name and provider settings.',
    aborted: 'The request was cancelled.',
  };
  return hints[kind];
}

// Deliberately narrow: a request-side limit ("max_tokens exceeds the maximum") is a bad request, not an overflow.
const CONTEXT_OVERFLOW =
  /context_length_exceeded|context length|context window|prompt is too long|too many tokens|input is too long|上下文长度|超出.*上下文/i;
// Quota / arrears: the account cannot pay. Retrying does not help; the user has to act.
const QUOTA =
  /insufficient_quota|exceeded your current quota|quota exceeded|billing|credit balance|insufficient (?:balance|credits?|funds)|out of credits?|payment required|余额不足|欠费|额度不足|额度已用尽|账户余额|arrearage|not in good standing/i;
// A per-minute quota (Gemini's free tier says "Quota exceeded … per minute … retry in 20s") is a rate limit.
const TEMPORARY_QUOTA = /per[ _-]?minute|per[ _-]?second|retry in \d|retrydelay|请稍后(?:再)?试/i;
const RATE_LIMIT =
  /rate[ _-]?limit|too many requests|too_many_requests|请求过于频繁|访问过于频繁|请求频率|请求太频繁|限流|速率限制|频率限制|频率超限|并发数?超/i;
const OVERLOADED = /overloaded|server_error|service unavailable|temporarily unavailable|服务繁忙|系统繁忙/i;
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'UND_ERR_SOCKET',
  'UND_ERR_CLOSED',
  // node-fetch (the SDKs' HTTP client): the connection closed before the body ended.
  'ERR_STREAM_PREMATURE_CLOSE',
]);
/**
 * The host name did not resolve. Retrying at 1 s / 2 s / 4 s only delays the answer (a typo in apiBase, no network,
 * no DNS server): the error is returned at once, naming the setting to check. A fallback model may still serve.
 */
const DNS_CODES = new Set(['ENOTFOUND', 'EAI_AGAIN', 'EAI_NONAME', 'EAI_FAIL', 'EAI_NODATA']);
const DNS_TEXT = /getaddrinfo (ENOTFOUND|EAI_AGAIN|EAI_NONAME|EAI_FAIL|EAI_NODATA)\b/;
const TIMEOUT_CODES = new Set([
  'ETIMEDOUT',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
]);

/** The cap on a server-requested wait; beyond it we would rather fail and let the user decide. */
export const MAX_RETRY_AFTER_MS = 60_000;

export function toProviderError(error: unknown, signal?: AbortSignal): ProviderError {
  if (signal?.aborted || isAbortError(error)) {
    return { kind: 'aborted', message: 'Request aborted.', retryable: false };
  }
  const classes = classNames(error);
  if (classes.includes('APIConnectionTimeoutError') || errorName(error) === 'TimeoutError') {
    return { kind: 'timeout', message: 'The provider did not answer in time.', retryable: true };
  }
  const status = readNumber(error, 'status');
  const text = describe(error);
  if (status !== undefined) return providerErrorFromStatus(status, text, readHeaders(error));
  const code = networkCode(error);
  const dnsCode = code && DNS_CODES.has(code) ? code : DNS_TEXT.exec(text)?.[1];
  if (dnsCode) {
    return {
      kind: 'network',
      message: `Could not resolve the provider's host name (${dnsCode}, not retried): ${causeMessage(error)}`,
      retryable: false,
    };
  }
  if (code && TIMEOUT_CODES.has(code)) {
    return { kind: 'timeout', message: `The provider did not answer in time (${code}).`, retryable: true };
  }
  if (classes.includes('APIConnectionError') || code || /fetch failed|terminated|socket hang up/i.test(text)) {
    return { kind: 'network', message: `Could not reach the provider: ${causeMessage(error)}`, retryable: true };
  }
  // No status: an error event inside the stream, or a body we could not parse. Judge by the words.
  return classifyByMessage(text);
}

/** Classifies an HTTP error response. `message` is the upstream text (body or SDK message). */
export function providerErrorFromStatus(status: number, message: string, headers?: HeaderSource): ProviderError {
  const base = { status, message: `${statusLabel(status)}: ${message}` };
  if (status === 413 || (status < 500 && CONTEXT_OVERFLOW.test(message))) {
    return { ...base, kind: 'context_overflow', retryable: false };
  }
  if (isQuota(status, message)) {
    return { status, message: `Out of credit or quota (HTTP ${status}): ${message}`, kind: 'quota', retryable: false };
  }
  if (status === 429 || RATE_LIMIT.test(message)) {
    return withRetryAfter({ ...base, kind: 'rate_limit', retryable: true }, headers);
  }
  if (status === 401 || status === 403) return { ...base, kind: 'auth', retryable: false };
  if (status === 408) return withRetryAfter({ ...base, kind: 'timeout', retryable: true }, headers);
  // 409: Anthropic's "conflict" is a transient lock; its own SDK retries it.
  if (status >= 500 || status === 409 || OVERLOADED.test(message)) {
    return withRetryAfter({ ...base, kind: 'server', retryable: true }, headers);
  }
  return { ...base, kind: 'bad_request', retryable: false };
}

function isQuota(status: number | undefined, message: string): boolean {
  if (status === 402) return true;
  return status !== 401 && QUOTA.test(message) && !TEMPORARY_QUOTA.test(message);
}

function classifyByMessage(text: string): ProviderError {
  const message = text || 'Unknown provider error.';
  if (CONTEXT_OVERFLOW.test(text)) return { kind: 'context_overflow', message, retryable: false };
  if (isQuota(undefined, text)) {
    return { kind: 'quota', message: `Out of credit or quota: ${message}`, retryable: false };
  }
  if (RATE_LIMIT.test(text)) return { kind: 'rate_limit', message, retryable: true };
  if (OVERLOADED.test(text)) return { kind: 'server', message, retryable: true };
  return { kind: 'server', message, retryable: false };
}

export type HeaderSource = { get(name: string): string | null } | Record<string, string | string[] | undefined>;

/** Reads `retry-after-ms` (OpenAI/Anthropic extension) or `retry-after` (seconds or an HTTP date). */
export function parseRetryAfter(headers: HeaderSource | undefined, now = Date.now()): number | undefined {
  if (!headers) return undefined;
  const ms = Number.parseFloat(headerValue(headers, 'retry-after-ms') ?? '');
  if (Number.isFinite(ms) && ms >= 0) return Math.round(ms);
  const raw = headerValue(headers, 'retry-after');
  if (raw === undefined || raw.trim() === '') return undefined;
  const seconds = Number(raw);
  if (Number.isFinite(seconds) && seconds >= 0) return Math.round(seconds * 1000);
  const date = Date.parse(raw);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

function withRetryAfter(error: ProviderError, headers: HeaderSource | undefined): ProviderError {
  const retryAfterMs = parseRetryAfter(headers);
  return retryAfterMs === undefined ? error : { ...error, retryAfterMs };
}

function headerValue(headers: HeaderSource, name: string): string | undefined {
  if (typeof headers.get === 'function') return headers.get(name) ?? undefined;
  const record = headers as Record<string, string | string[] | undefined>;
  const key = Object.keys(record).find((k) => k.toLowerCase() === name);
  const value = key === undefined ? undefined : record[key];
  return Array.isArray(value) ? value[0] : value;
}

function statusLabel(status: number): string {
  if (status === 429) return 'Rate limited (429)';
  if (status === 401 || status === 403) return `Authentication failed (${status})`;
  return `HTTP ${status}`;
}

function isAbortError(error: unknown): boolean {
  const name = errorName(error);
  return name === 'AbortError' || classNames(error).includes('APIUserAbortError');
}

function errorName(error: unknown): string | undefined {
  return error instanceof Error ? error.name : undefined;
}

/** Constructor names up the prototype chain, so subclasses (RateLimitError → APIError) are recognised. */
function classNames(error: unknown): string[] {
  const names: string[] = [];
  let proto: unknown = typeof error === 'object' && error !== null ? Object.getPrototypeOf(error) : null;
  while (proto && proto !== Object.prototype) {
    const ctor: unknown = (proto as { constructor?: unknown }).constructor;
    if (typeof ctor === 'function' && ctor.name) names.push(ctor.name);
    proto = Object.getPrototypeOf(proto);
  }
  return names;
}

function readNumber(value: unknown, key: string): number | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const field = (value as Record<string, unknown>)[key];
  return typeof field === 'number' && Number.isFinite(field) ? field : undefined;
}

function readHeaders(error: unknown): HeaderSource | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const headers = (error as { headers?: unknown }).headers;
  if (typeof headers !== 'object' || headers === null) return undefined;
  return headers as HeaderSource;
}

/** `code` on the error or anywhere down its `cause` chain (undici nests the socket error). */
function networkCode(error: unknown): string | undefined {
  let current: unknown = error;
  for (let depth = 0; depth < 5 && typeof current === 'object' && current !== null; depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string' && (NETWORK_CODES.has(code) || TIMEOUT_CODES.has(code) || DNS_CODES.has(code)))
      return code;
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}

function causeMessage(error: unknown): string {
  const messages: string[] = [];
  let current: unknown = error;
  for (let depth = 0; depth < 5 && current instanceof Error; depth++) {
    if (current.message && !messages.includes(current.message)) messages.push(current.message);
    current = current.cause;
  }
  return messages.join(': ') || 'connection failed';
}

/**
 * The most specific human text available: the provider's own message from the error body when there is one
 * (`{error: {message}}` on both wires), else the SDK message. Capped: a proxy may answer with a whole HTML page.
 */
function describe(error: unknown): string {
  if (typeof error !== 'object' || error === null) return String(error ?? '');
  const fromBody = findMessage((error as { error?: unknown }).error);
  const text = fromBody ?? (error instanceof Error ? error.message : JSON.stringify(error));
  return text.length > 500 ? `${text.slice(0, 500)}…` : text;
}

function findMessage(body: unknown, depth = 0): string | undefined {
  if (typeof body === 'string') return body;
  if (typeof body !== 'object' || body === null || depth > 3) return undefined;
  const record = body as Record<string, unknown>;
  if (typeof record.message === 'string') {
    const code = typeof record.code === 'string' ? record.code : typeof record.type === 'string' ? record.type : '';
    return code && !record.message.includes(code) ? `${record.message} [${code}]` : record.message;
  }
  return findMessage(record.error, depth + 1);
}
