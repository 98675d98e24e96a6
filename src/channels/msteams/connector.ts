/**
 * The Bot Connector REST API (v3) at a conversation's serviceUrl: send an activity, reply to one, look up a member.
 * The token goes only to a trusted serviceUrl (trust.ts), never through a redirect. A message that meets a
 * transient failure (no network, 429, 5xx: an outage at Microsoft, or Teams throttling the bot) is retried with
 * backoff, as Microsoft asks, for up to a couple of minutes (Retry-After honoured), so an outage shorter than that
 * loses nothing; the router retries once more after that. A refused token is fetched again once.
 */
import { setTimeout as delay } from 'node:timers/promises';
import { z } from 'zod';
import { errorMessage } from '../../util/errors.js';
import type { Logger } from '../../util/log.js';
import { type AppTokenSource, CredentialsRejected } from './token.js';
import { isTrustedServiceUrl, originOf } from './trust.js';

const REQUEST_TIMEOUT_MS = 30_000;
const RETRY_WINDOW_MS = 120_000;
const FIRST_RETRY_MS = 500;
const MAX_RETRY_MS = 10_000;
const MAX_RETRY_AFTER_MS = 60_000;
const TRANSIENT = new Set([408, 429, 500, 502, 503, 504]);

export interface ConversationAddress {
  serviceUrl: string;
  conversationId: string;
}

/** An outgoing activity (message or typing), as Bot Framework's schema names its fields. */
export type OutgoingActivity = Record<string, unknown> & { type: 'message' | 'typing' };

const ResourceResponse = z.looseObject({ id: z.string().optional() });
const Member = z.looseObject({
  id: z.string(),
  name: z.string().optional(),
  userPrincipalName: z.string().optional(),
  email: z.string().optional(),
});
export type Member = z.infer<typeof Member>;
const ErrorBody = z.looseObject({
  error: z.looseObject({ code: z.string().optional(), message: z.string().optional() }),
});

export interface ConnectorOptions {
  tokens: AppTokenSource;
  trustedHosts: () => readonly string[];
  log: Logger;
  fetch?: typeof fetch;
  now?: () => number;
}

/** A failure Microsoft may recover from by itself: worth retrying. */
class TransientFailure extends Error {
  constructor(
    message: string,
    readonly retryAfterMs?: number,
  ) {
    super(message);
  }
}

export class ConnectorClient {
  private readonly fetch: typeof fetch;
  private readonly now: () => number;

  constructor(private readonly options: ConnectorOptions) {
    this.fetch = options.fetch ?? globalThis.fetch;
    this.now = options.now ?? Date.now;
  }

  /**
   * Posts an activity to a conversation (as a reply to `replyToId` when given); resolves to the new activity's id.
   * `retry: false` (typing) makes one attempt.
   */
  async send(
    address: ConversationAddress,
    activity: OutgoingActivity,
    options: { replyToId?: string; retry: boolean; signal: AbortSignal },
  ): Promise<string> {
    const path = `/v3/conversations/${encodeURIComponent(address.conversationId)}/activities${
      options.replyToId ? `/${encodeURIComponent(options.replyToId)}` : ''
    }`;
    const url = this.urlFor(address.serviceUrl, path);
    const body = JSON.stringify({
      ...activity,
      conversation: { id: address.conversationId },
      ...(options.replyToId ? { replyToId: options.replyToId } : {}),
    });
    const started = this.now();
    for (let attempt = 0; ; attempt += 1) {
      try {
        const json = await this.request(url, { method: 'POST', body }, options.signal);
        return ResourceResponse.parse(json ?? {}).id ?? '';
      } catch (err) {
        const wait = Math.min(MAX_RETRY_MS, FIRST_RETRY_MS * 2 ** attempt);
        const retryAfter = err instanceof TransientFailure ? err.retryAfterMs : undefined;
        const next = Math.max(wait, retryAfter ?? 0);
        if (!options.retry || !(err instanceof TransientFailure) || this.now() - started + next > RETRY_WINDOW_MS) {
          throw err;
        }
        if (attempt === 0) this.options.log.warn(`${errorMessage(err)}; retrying`);
        await delay(next, undefined, { signal: options.signal });
      }
    }
  }

  /** A member of a conversation (Teams adds userPrincipalName and email); undefined when Teams does not say. */
  async member(address: ConversationAddress, memberId: string, signal: AbortSignal): Promise<Member | undefined> {
    const path = `/v3/conversations/${encodeURIComponent(address.conversationId)}/members/${encodeURIComponent(memberId)}`;
    const json = await this.request(this.urlFor(address.serviceUrl, path), { method: 'GET' }, signal);
    const member = Member.safeParse(json);
    return member.success ? member.data : undefined;
  }

  private urlFor(serviceUrl: string, path: string): string {
    if (!isTrustedServiceUrl(serviceUrl, this.options.trustedHosts())) {
      throw new Error(
        `not sending the bot's token to ${originOf(serviceUrl)}: it is not in channels.msteams.trustedServiceUrlHosts`,
      );
    }
    return `${serviceUrl.replace(/\/+$/, '')}${path}`;
  }

  /** One request, with the token fetched again once if the connector refuses it. */
  private async request(url: string, init: { method: string; body?: string }, signal: AbortSignal): Promise<unknown> {
    for (let refreshed = false; ; refreshed = true) {
      const token = await this.options.tokens.token().catch((err: unknown) => {
        throw err instanceof CredentialsRejected ? err : new TransientFailure(errorMessage(err));
      });
      let response: Response;
      try {
        response = await this.fetch(url, {
          ...init,
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json; charset=utf-8' },
          redirect: 'error',
          signal: AbortSignal.any([signal, AbortSignal.timeout(REQUEST_TIMEOUT_MS)]),
        });
      } catch (err) {
        if (signal.aborted) throw err;
        throw new TransientFailure(`cannot reach Teams at ${new URL(url).host}: ${errorMessage(err)}`);
      }
      const json: unknown = await response.json().catch(() => undefined);
      if (response.ok) return json;
      if (response.status === 401 && !refreshed) {
        this.options.tokens.invalidate(token);
        continue;
      }
      throw failure(response, json, new URL(url).host);
    }
  }
}

function failure(response: Response, json: unknown, host: string): Error {
  const parsed = ErrorBody.safeParse(json);
  const detail = parsed.success ? [parsed.data.error.code, parsed.data.error.message].filter(Boolean).join(': ') : '';
  const message = `Teams at ${host} answered HTTP ${response.status}${detail ? ` (${detail.slice(0, 300)})` : ''}`;
  if (!TRANSIENT.has(response.status)) return new Error(message);
  const seconds = Number(response.headers.get('retry-after'));
  const retryAfterMs =
    Number.isFinite(seconds) && seconds > 0 ? Math.min(seconds * 1000, MAX_RETRY_AFTER_MS) : undefined;
  return new TransientFailure(message, retryAfterMs);
}
