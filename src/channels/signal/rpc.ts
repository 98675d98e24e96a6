/**
 * signal-cli's HTTP daemon: JSON-RPC 2.0 requests to POST /api/v1/rpc, the liveness check at GET /api/v1/check, and
 * the stream of received messages at GET /api/v1/events (server-sent events, read by `readEvents`). The daemon
 * runs on this machine (index.ts refuses any other host) and has no authentication of its own.
 */
import { z } from 'zod';
import { errorMessage } from '../../util/errors.js';

/** signal-cli's JSON-RPC error codes (SignalJsonRpcCommandHandler). */
const RATE_LIMIT_ERROR = -5;
const UNTRUSTED_KEY_ERROR = -4;

export class SignalRpcError extends Error {
  constructor(
    message: string,
    readonly code?: number,
  ) {
    super(message);
  }
  get rateLimited(): boolean {
    return this.code === RATE_LIMIT_ERROR;
  }
}

const responseSchema = z.looseObject({
  jsonrpc: z.literal('2.0').optional(),
  result: z.unknown().optional(),
  error: z.looseObject({ code: z.number().optional(), message: z.string().optional() }).nullish(),
});

export class SignalRpc {
  private nextId = 1;

  constructor(
    readonly root: string,
    private readonly fetchImpl: typeof fetch = fetch,
  ) {}

  /** One request; resolves to the result (checked against `schema`), rejects with a SignalRpcError. */
  async call<T>(
    method: string,
    params: Record<string, unknown>,
    schema: z.ZodType<T>,
    timeoutMs = 30_000,
    signal?: AbortSignal,
  ): Promise<T> {
    const id = this.nextId++;
    const signals = [AbortSignal.timeout(timeoutMs), ...(signal ? [signal] : [])];
    let response: Response;
    try {
      response = await this.fetchImpl(`${this.root}/api/v1/rpc`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ jsonrpc: '2.0', method, params, id }),
        redirect: 'manual',
        signal: AbortSignal.any(signals),
      });
    } catch (err) {
      throw new SignalRpcError(
        `signal-cli ${method}: the daemon at ${this.root} did not answer (${errorMessage(err)})`,
      );
    }
    if (response.status === 421)
      throw new SignalRpcError(
        `signal-cli ${method}: the daemon refused the Host header: channels.signal.daemonHost must be the address it listens on`,
      );
    if (response.status !== 200) {
      await response.body?.cancel().catch(() => {});
      throw new SignalRpcError(`signal-cli ${method}: HTTP ${response.status} from ${this.root}/api/v1/rpc`);
    }
    const body = responseSchema.safeParse(await response.json().catch(() => undefined));
    if (!body.success) throw new SignalRpcError(`signal-cli ${method}: the daemon's answer is not JSON-RPC`);
    if (body.data.error) {
      const { code, message } = body.data.error;
      throw new SignalRpcError(`signal-cli ${method} failed: ${describeError(code, message)}`, code);
    }
    const result = schema.safeParse(body.data.result);
    if (!result.success) throw new SignalRpcError(`signal-cli ${method}: unexpected result (${result.error.message})`);
    return result.data;
  }

  /** GET /api/v1/check: 200 when the daemon runs. */
  async check(timeoutMs = 5_000): Promise<void> {
    let response: Response;
    try {
      response = await this.fetchImpl(`${this.root}/api/v1/check`, {
        redirect: 'manual',
        signal: AbortSignal.timeout(timeoutMs),
      });
    } catch (err) {
      throw new SignalRpcError(`no signal-cli daemon answers at ${this.root} (${errorMessage(err)})`);
    }
    await response.body?.cancel().catch(() => {});
    if (response.status !== 200)
      throw new SignalRpcError(`${this.root}/api/v1/check answered HTTP ${response.status}: is that signal-cli?`);
  }

  /** Opens the event stream; resolves once the daemon answered with a stream, rejects otherwise. */
  async openEvents(account: string, signal: AbortSignal, timeoutMs = 15_000): Promise<ReadableStream<Uint8Array>> {
    // The timeout covers the answer's headers only: the stream itself stays open as long as `signal` allows.
    const controller = new AbortController();
    const abort = () => controller.abort(signal.reason);
    signal.addEventListener('abort', abort, { once: true });
    const timer = setTimeout(() => controller.abort(new Error('no answer in time')), timeoutMs);
    let response: Response;
    try {
      response = await this.fetchImpl(`${this.root}/api/v1/events?account=${encodeURIComponent(account)}`, {
        headers: { accept: 'text/event-stream' },
        redirect: 'manual',
        signal: controller.signal,
      });
    } catch (err) {
      signal.removeEventListener('abort', abort);
      throw new SignalRpcError(`cannot open signal-cli's event stream at ${this.root} (${errorMessage(err)})`);
    } finally {
      clearTimeout(timer);
    }
    const type = response.headers.get('content-type') ?? '';
    if (response.status !== 200 || !type.startsWith('text/event-stream') || !response.body) {
      await response.body?.cancel().catch(() => {});
      throw new SignalRpcError(
        response.status === 400
          ? `signal-cli has no account ${account}: check channels.signal.phoneNumber (link or register it first)`
          : `signal-cli's event stream answered HTTP ${response.status} (${type || 'no content type'})`,
      );
    }
    return response.body;
  }
}

function describeError(code: number | undefined, message: string | undefined): string {
  const text = (message ?? 'unknown error').slice(0, 500);
  if (code === RATE_LIMIT_ERROR) return `Signal is rate-limiting this account: ${text}`;
  if (code === UNTRUSTED_KEY_ERROR)
    return `${text} (a recipient's safety number changed: trust it with \`signal-cli trust\`)`;
  return text;
}

/** One server-sent event. */
export interface ServerEvent {
  event: string;
  data: string;
}

/** The longest event accepted: envelopes are small (attachments are files, not inline). */
const MAX_EVENT_BYTES = 4 * 1024 * 1024;

/**
 * The events of a text/event-stream body, per the HTML spec's parsing rules (data lines joined by \n, one optional
 * space after the colon, comments and unknown fields skipped); `onActivity` is called for every chunk, keep-alive
 * comments included, so a watchdog can tell a quiet stream from a dead one.
 */
export async function* readEvents(
  body: AsyncIterable<Uint8Array>,
  onActivity: () => void = () => {},
): AsyncGenerator<ServerEvent> {
  const decoder = new TextDecoder();
  let buffer = '';
  let data: string[] = [];
  let size = 0;
  let event = '';
  for await (const chunk of body) {
    onActivity();
    buffer += decoder.decode(chunk, { stream: true });
    for (;;) {
      const end = buffer.search(/\r\n|\r|\n/);
      if (end < 0) break;
      // A lone \r at the end of a chunk may be half of \r\n: wait for the next chunk.
      if (buffer[end] === '\r' && end === buffer.length - 1) break;
      const line = buffer.slice(0, end);
      buffer = buffer.slice(end + (buffer.startsWith('\r\n', end) ? 2 : 1));
      if (line === '') {
        if (data.length > 0) yield { event: event || 'message', data: data.join('\n') };
        data = [];
        size = 0;
        event = '';
        continue;
      }
      if (line.startsWith(':')) continue;
      const colon = line.indexOf(':');
      const field = colon < 0 ? line : line.slice(0, colon);
      const value = colon < 0 ? '' : line.slice(colon + (line[colon + 1] === ' ' ? 2 : 1));
      if (field === 'data') {
        size += value.length;
        if (size > MAX_EVENT_BYTES) throw new Error('an event from signal-cli is over 4 MB: refusing it');
        data.push(value);
      } else if (field === 'event') event = value;
    }
    if (buffer.length > MAX_EVENT_BYTES) throw new Error('a line from signal-cli is over 4 MB: refusing it');
  }
}
