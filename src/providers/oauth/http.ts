/** The few HTTP calls OAuth needs: form posts and JSON reads, with errors that say which step failed. */
import { UserError } from '../../util/errors.js';

export type Fetch = typeof globalThis.fetch;

/** An OAuth step failed (denied, expired, not entitled, endpoint down): shown to the user without a stack trace. */
export class OAuthError extends UserError {
  override name = 'OAuthError';
}

export interface JsonReply {
  status: number;
  body: Record<string, unknown>;
}

export async function postForm(
  fetch: Fetch,
  url: string,
  form: Record<string, string>,
  headers: Record<string, string> = {},
  signal?: AbortSignal,
): Promise<JsonReply> {
  return send(fetch, url, {
    method: 'POST',
    headers: { Accept: 'application/json', 'Content-Type': 'application/x-www-form-urlencoded', ...headers },
    body: new URLSearchParams(form).toString(),
    ...(signal ? { signal } : {}),
  });
}

export async function getJson(
  fetch: Fetch,
  url: string,
  headers: Record<string, string>,
  signal?: AbortSignal,
): Promise<JsonReply> {
  return send(fetch, url, {
    method: 'GET',
    headers: { Accept: 'application/json', ...headers },
    ...(signal ? { signal } : {}),
  });
}

async function send(fetch: Fetch, url: string, init: RequestInit): Promise<JsonReply> {
  let response: Response;
  try {
    response = await fetch(url, init);
  } catch (err) {
    if (init.signal?.aborted) throw err;
    const cause = (err as Error).cause instanceof Error ? `: ${((err as Error).cause as Error).message}` : '';
    throw new OAuthError(
      `Could not reach ${new URL(url).host}${cause}.`,
      'Check the network connection and try again.',
    );
  }
  const text = await response.text();
  let body: Record<string, unknown> = {};
  try {
    const parsed: unknown = JSON.parse(text);
    if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed))
      body = parsed as Record<string, unknown>;
  } catch {
    // GitHub answers some errors as form-encoded text; keep what can be read.
    body = Object.fromEntries(new URLSearchParams(text));
  }
  return { status: response.status, body };
}

export const text = (body: Record<string, unknown>, key: string): string | undefined => {
  const value = body[key];
  return typeof value === 'string' && value !== '' ? value : undefined;
};

export const number = (body: Record<string, unknown>, key: string): number | undefined => {
  const value = body[key];
  if (typeof value === 'number' && Number.isFinite(value)) return value;
  if (typeof value === 'string' && value.trim() !== '' && Number.isFinite(Number(value))) return Number(value);
  return undefined;
};

/** The server's own words for a failed reply: `error_description`, `error`, `message`. */
export function describeFailure(reply: JsonReply): string {
  const detail = text(reply.body, 'error_description') ?? text(reply.body, 'message') ?? text(reply.body, 'error');
  return detail ? `HTTP ${reply.status}: ${detail}` : `HTTP ${reply.status}`;
}
