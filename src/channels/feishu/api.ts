/**
 * Talking to the Feishu Open Platform through the Lark SDK: its errors as one type, a retry for rate limits and
 * revoked tokens, request timeouts, a token cache per channel, and the SDK's own logging routed to ours.
 */
import type { Cache, HttpInstance, HttpRequestOptions, Logger as LarkLogger } from '@larksuiteoapi/node-sdk';
import { errorMessage, UserError } from '../../util/errors.js';
import type { Logger } from '../../util/log.js';

/** What Feishu answered when a call did not succeed. `status` is the HTTP status (200 for `code != 0` bodies). */
export class FeishuApiError extends Error {
  constructor(
    readonly code: number,
    readonly description: string,
    readonly status: number,
  ) {
    super(`Feishu answered code ${code}: ${description}`);
    this.name = 'FeishuApiError';
  }

  /** The request itself was refused (bad content, unknown chat…), as opposed to a passing failure. */
  get refused(): boolean {
    return this.status >= 400 && this.status < 500 && this.status !== 429;
  }
}

/** Feishu's "too many requests" codes (frequency limits per app, per chat and per message). */
const RATE_LIMITED = new Set([99991400, 230020, 11232]);
/** The tenant access token was revoked or expired early. */
const TOKEN_INVALID = new Set([99991661, 99991663, 99991668]);
const RATE_LIMIT_WAIT_MS = 1_000;

/** The SDK throws axios errors; Feishu puts its code and message in the body. */
export function asFeishuError(err: unknown): FeishuApiError | undefined {
  if (err instanceof FeishuApiError) return err;
  const response = (err as { response?: { status?: unknown; data?: unknown } } | undefined)?.response;
  if (!response || typeof response.status !== 'number') return undefined;
  const body = response.data as { code?: unknown; msg?: unknown } | undefined;
  if (body && typeof body === 'object' && typeof body.code === 'number') {
    return new FeishuApiError(body.code, String(body.msg ?? ''), response.status);
  }
  return new FeishuApiError(-1, `HTTP ${response.status}`, response.status);
}

export interface CallHooks {
  /** Forget the cached token (the next call fetches a new one). */
  resetToken(): void;
}

/**
 * Runs one SDK call: a body with `code != 0` becomes a FeishuApiError; a rate limit is waited out once and a
 * revoked token is renewed once.
 */
export async function feishuCall<T>(run: () => Promise<T>, hooks: CallHooks): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      const result = await run();
      const body = result as { code?: unknown; msg?: unknown } | null;
      if (body && typeof body.code === 'number' && body.code !== 0) {
        throw new FeishuApiError(body.code, String(body.msg ?? ''), 200);
      }
      return result;
    } catch (err) {
      const error = asFeishuError(err);
      if (!error || attempt > 0) throw error ?? err;
      if (RATE_LIMITED.has(error.code) || error.status === 429) {
        await new Promise((resolve) => setTimeout(resolve, RATE_LIMIT_WAIT_MS));
        continue;
      }
      if (TOKEN_INVALID.has(error.code)) {
        hooks.resetToken();
        continue;
      }
      throw error;
    }
  }
}

/**
 * A setup mistake reported by Feishu while connecting, as a UserError (not retried); anything else (network,
 * server errors) stays a plain error and the connection is retried.
 */
export function connectError(err: unknown): Error {
  const message = errorMessage(err);
  const token = /failed to get tenant_access_token, code: (\d+), msg: (.*)$/.exec(message);
  if (token) {
    return new UserError(
      `Feishu refused channels.feishu.appId / appSecret (code ${token[1]}: ${token[2]}).`,
      'Copy the App ID and App Secret again from the app’s Credentials page (open.feishu.cn/app; Lark: ' +
        'open.larksuite.com/app), and check channels.feishu.domain (feishu or lark).',
    );
  }
  const api = asFeishuError(err);
  if (api?.refused) {
    return new UserError(
      `Feishu refused the bot info request (code ${api.code}: ${api.description}).`,
      'Enable the Bot capability of the app and publish a version of it in the developer console.',
    );
  }
  return err instanceof Error ? err : new Error(message);
}

/** The SDK logs to the console by default: its lines go to our log at debug level instead. */
export function sdkLogger(log: Logger): LarkLogger {
  const write = (...args: unknown[]) => log.debug(`sdk: ${describeArgs(args)}`);
  return { error: write, warn: write, info: write, debug: write, trace: () => {} };
}

/** Messages only: the SDK also logs request configs, whose bodies can hold the app secret. */
function describeArgs(args: unknown[]): string {
  return args
    .flat(2)
    .map((arg) => {
      if (typeof arg === 'string') return arg;
      if (arg instanceof Error) return arg.message;
      if (arg && typeof arg === 'object') {
        const { code, msg, message } = arg as { code?: unknown; msg?: unknown; message?: unknown };
        if (code !== undefined && msg !== undefined) return `code ${String(code)}: ${String(msg)}`;
        if (typeof message === 'string') return message;
        return '';
      }
      return String(arg);
    })
    .filter(Boolean)
    .join(' ');
}

/** The SDK's HTTP client with a default timeout: a request never hangs a send or a reconnect forever. */
export function withTimeout(base: HttpInstance, timeoutMs: number): HttpInstance {
  const options = <D>(given?: HttpRequestOptions<D>): HttpRequestOptions<D> => ({ timeout: timeoutMs, ...given });
  return {
    request: (given) => base.request(options(given)),
    get: (url, given) => base.get(url, options(given)),
    delete: (url, given) => base.delete(url, options(given)),
    head: (url, given) => base.head(url, options(given)),
    options: (url, given) => base.options(url, options(given)),
    post: (url, data, given) => base.post(url, data, options(given)),
    put: (url, data, given) => base.put(url, data, options(given)),
    patch: (url, data, given) => base.patch(url, data, options(given)),
  };
}

type CacheKey = Parameters<Cache['get']>[0];

/** The tenant token cache of one channel (the SDK's default is process-wide and cannot be cleared). */
export class TokenCache implements Cache {
  private readonly entries = new Map<string, { value: unknown; expiresAt?: number }>();

  async set(key: CacheKey, value: unknown, expiresAt?: number, options?: { namespace?: string }) {
    this.entries.set(cacheKey(key, options), { value, ...(expiresAt !== undefined ? { expiresAt } : {}) });
    return true;
  }

  async get(key: CacheKey, options?: { namespace?: string }) {
    const entry = this.entries.get(cacheKey(key, options));
    if (!entry) return undefined;
    if (entry.expiresAt !== undefined && entry.expiresAt < Date.now()) {
      this.entries.delete(cacheKey(key, options));
      return undefined;
    }
    return entry.value;
  }

  clear(): void {
    this.entries.clear();
  }
}

function cacheKey(key: CacheKey, options?: { namespace?: string }): string {
  return `${options?.namespace ?? ''}/${String(key)}`;
}
