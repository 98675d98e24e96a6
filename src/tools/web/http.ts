/** Small HTTP helpers shared by the web tools. */
import type { Response } from 'undici';
import { NetworkBlockedError } from '../../security/network.js';

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

/** One line for the model: the block reason, a timeout, or the network error code behind `fetch failed`. */
export function describeFetchError(error: unknown, signal?: AbortSignal): string {
  if (error instanceof NetworkBlockedError) return error.message;
  if (signal?.aborted) {
    const reason: unknown = signal.reason;
    if (reason instanceof Error && reason.name === 'TimeoutError') return 'the request timed out';
    return 'the request was cancelled';
  }
  if (error instanceof Error) {
    const cause: unknown = error.cause;
    if (cause instanceof Error) {
      const code = (cause as NodeJS.ErrnoException).code;
      return `${error.message} (${code ? `${code}: ` : ''}${cause.message})`;
    }
    return error.message;
  }
  return String(error);
}

/** A short, readable reason for a non-2xx status; `keyed` adds the API-key hint that auth failures need. */
export function describeStatus(status: number, statusText: string, keyed = false): string {
  const hint =
    keyed && (status === 401 || status === 403)
      ? ' (check the API key)'
      : status === 429
        ? ' (rate limited; try again later)'
        : '';
  return `HTTP ${status}${statusText ? ` ${statusText}` : ''}${hint}`;
}
