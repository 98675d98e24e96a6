/**
 * The bot's own access token for the Bot Connector API: OAuth2 client credentials (appId + appPassword) at
 * Microsoft's login (`login.microsoftonline.com/<tenantId or botframework.com>`), scope `<issuer>/.default`.
 * Kept until shortly before it expires, fetched once for any number of concurrent sends, and dropped when the
 * connector refuses it. Credentials Microsoft rejects are a setup mistake (a UserError, not retried); anything else
 * (no network, a 5xx) is an ordinary error the caller retries.
 */
import { z } from 'zod';
import { UserError } from '../../util/errors.js';

/** A token is replaced this long before it expires (or halfway through a shorter life). */
const REFRESH_MARGIN_MS = 5 * 60_000;
const REQUEST_TIMEOUT_MS = 15_000;

const TokenResponse = z.looseObject({
  access_token: z.string().min(1),
  expires_in: z.coerce.number().positive(),
});
const TokenError = z.looseObject({ error: z.string().optional(), error_description: z.string().optional() });

export interface AppTokenOptions {
  tokenUrl: string;
  appId: string;
  appPassword: string;
  scope: string;
  fetch?: typeof fetch;
  now?: () => number;
}

/** Microsoft's login refused the app's credentials: the user must fix appId, appPassword or tenantId. */
export class CredentialsRejected extends UserError {}

export class AppTokenSource {
  private current?: { token: string; refreshAt: number };
  private pending?: Promise<string>;
  private readonly fetch: typeof fetch;
  private readonly now: () => number;

  constructor(private readonly options: AppTokenOptions) {
    this.fetch = options.fetch ?? globalThis.fetch;
    this.now = options.now ?? Date.now;
  }

  /** A token valid for a few more minutes at least; concurrent callers share one request. */
  async token(): Promise<string> {
    if (this.current && this.now() < this.current.refreshAt) return this.current.token;
    this.pending ??= this.request().finally(() => {
      this.pending = undefined;
    });
    return this.pending;
  }

  /** The connector refused this token (revoked, or the app's secret changed): the next call fetches a new one. */
  invalidate(token: string): void {
    if (this.current?.token === token) this.current = undefined;
  }

  private async request(): Promise<string> {
    const { tokenUrl, appId, appPassword, scope } = this.options;
    const body = new URLSearchParams({
      grant_type: 'client_credentials',
      client_id: appId,
      client_secret: appPassword,
      scope,
    });
    const started = this.now();
    let response: Response;
    try {
      response = await this.fetch(tokenUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body,
        redirect: 'error',
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      });
    } catch (err) {
      throw new Error(`cannot reach Microsoft's login at ${new URL(tokenUrl).host} for the bot's token`, {
        cause: err,
      });
    }
    const json: unknown = await response.json().catch(() => undefined);
    if (!response.ok) throw tokenFailure(response.status, json);
    const parsed = TokenResponse.safeParse(json);
    if (!parsed.success)
      throw new Error(`Microsoft's login answered without an access token (HTTP ${response.status})`);
    const lifeMs = parsed.data.expires_in * 1000;
    const refreshAt = started + lifeMs - Math.min(REFRESH_MARGIN_MS, lifeMs / 2);
    this.current = { token: parsed.data.access_token, refreshAt };
    return parsed.data.access_token;
  }
}

/** Rejected credentials (4xx with an OAuth error) become a UserError that says which key to check. */
function tokenFailure(status: number, json: unknown): Error {
  const parsed = TokenError.safeParse(json);
  const error = parsed.success ? (parsed.data.error ?? '') : '';
  // The description starts with the AADSTS code and its one-line meaning; the rest is trace ids.
  const description = parsed.success ? (parsed.data.error_description ?? '').split(/\r?\n/)[0]?.slice(0, 300) : '';
  if (status >= 400 && status < 500 && status !== 429 && error !== '') {
    return new CredentialsRejected(
      `Microsoft's login rejected the Teams bot's credentials (${error}${description ? `: ${description}` : ''}).`,
      'Check channels.msteams.appId (the Microsoft App ID), appPassword (a client secret’s Value, not its ID; ' +
        'secrets expire) and tenantId (your Entra tenant for a single-tenant bot, empty for a multi-tenant one).',
    );
  }
  return new Error(`Microsoft's login answered HTTP ${status} for the bot's token`);
}
