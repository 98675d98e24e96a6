/**
 * Small HTTP helpers shared by the web tools. What a server wrote (a reason phrase, a redirect target, an error's
 * text) reaches the model only inside an untrusted fence; our own words around it stay outside.
 */
import { STATUS_CODES } from 'node:http';
import type { Response } from 'undici';
import { NETWORK_HARD_BOUNDARY, NetworkBlockedError } from '../../security/network.js';
import { fenceDetails } from '../../security/untrusted.js';

/** A common desktop browser string: some sites (and DuckDuckGo's HTML endpoint) refuse unknown agents. */
export const DEFAULT_USER_AGENT =
  'Mozilla/5.0 (Macintosh; Intel Mac OS X 14_7_2) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0 Safari/537.36';

/** Aborts when the turn is cancelled or the timeout passes, whichever comes first. */
export function withTimeout(signal: AbortSignal | undefined, timeoutMs: number): AbortSignal {
  const timeout = AbortSignal.timeout(timeoutMs);
  return signal ? AbortSignal.any([signal, timeout]) : timeout;
}

/** Reads at most `maxBytes` of the body (cancelling the rest) so a huge or endless response cannot fill memory. */
export async function readBodyCapped(
  response: Response,
  maxBytes: number,
): Promise<{ bytes: Uint8Array; truncated: boolean }> {
  if (!response.body) return { bytes: new Uint8Array(), truncated: false };
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  let truncated = false;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    const room = maxBytes - total;
    if (value.byteLength > room) {
      chunks.push(value.subarray(0, room));
      total += room;
      truncated = true;
      await reader.cancel().catch(() => {});
      break;
    }
    chunks.push(value);
    total += value.byteLength;
  }
  return { bytes: Buffer.concat(chunks, total), truncated };
}

/** Decodes bytes with the charset a response declares, falling back to UTF-8 for unknown labels. */
export function decodeText(bytes: Uint8Array, charset: string | undefined): string {
  try {
    return new TextDecoder(charset ?? 'utf-8').decode(bytes);
  } catch {
    return new TextDecoder('utf-8').decode(bytes);
  }
}

/** `text/html; charset=ISO-8859-1` → `{ mime: 'text/html', charset: 'iso-8859-1' }`. */
export function parseContentType(header: string | null): { mime: string; charset?: string } {
  if (!header) return { mime: '' };
  const [mime = '', ...params] = header.split(';');
  const charset = params
    .map((p) => /^\s*charset\s*=\s*"?([^";\s]+)"?/i.exec(p)?.[1])
    .find((c): c is string => c !== undefined);
  return { mime: mime.trim().toLowerCase(), ...(charset ? { charset: charset.toLowerCase() } : {}) };
}

/**
 * One line for the model: the block reason, a timeout, or the network error code behind `fetch failed`. `requested`
 * is the URL the model asked for: a refusal of any other URL (a redirect target) and any message that may carry a
 * server's words are fenced.
 */
export function describeFetchError(error: unknown, signal?: AbortSignal, requested?: string): string {
  if (error instanceof NetworkBlockedError) {
    if (requested === undefined || error.url === requested) return error.message;
    const details = fenceDetails({ 'redirect target': error.url, reason: error.reason }, 'redirect');
    return `a redirect led to an address that is refused. ${NETWORK_HARD_BOUNDARY}${details}`;
  }
  if (signal?.aborted) {
    const reason: unknown = signal.reason;
    if (reason instanceof Error && reason.name === 'TimeoutError') return 'the request timed out';
    return 'the request was cancelled';
  }
  if (error instanceof Error) {
    const cause: unknown = error.cause;
    const code = cause instanceof Error ? (cause as NodeJS.ErrnoException).code : undefined;
    // Node's and undici's own errors carry a code and describe the socket, not what the server said.
    if (cause instanceof Error && code) return `${error.message} (${code}: ${cause.message})`;
    const detail = cause instanceof Error ? `${error.message}: ${cause.message}` : error.message;
    return `the request failed (details below)${fenceDetails({ error: detail }, 'network error')}`;
  }
  return `the request failed (details below)${fenceDetails({ error: String(error) }, 'network error')}`;
}

/**
 * A short, readable reason for a non-2xx status with the standard phrase (`HTTP 403 Forbidden`); `keyed` adds the
 * API-key hint that auth failures need. The server's own reason phrase is attacker-controlled: see `serverReasonPhrase`.
 */
export function describeStatus(status: number, keyed = false): string {
  const hint =
    keyed && (status === 401 || status === 403)
      ? ' (check the API key)'
      : status === 429
        ? ' (rate limited; try again later)'
        : '';
  const phrase = STATUS_CODES[status];
  return `HTTP ${status}${phrase ? ` ${phrase}` : ''}${hint}`;
}

/** The server's reason phrase when it differs from the standard one (else undefined), for a fenced detail. */
export function serverReasonPhrase(status: number, statusText: string): string | undefined {
  const text = statusText.trim();
  return text && text.toLowerCase() !== STATUS_CODES[status]?.toLowerCase() ? text : undefined;
}
