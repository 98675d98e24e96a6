/**
 * A loopback proxy (127.0.0.1, random port) in front of the fake LLM that delivers each streamed (SSE) reply one
 * event at a time, `eventGapMs` apart, so a client can be caught in the middle of a model stream. It reports
 * every request start, every event written and every reply end to `listener`, which is how a crash test times its
 * kills ("after event 5 of 14 of request 2", "80 ms after request 1 ended"). Non-streamed replies pass through whole.
 *
 *   const fake = await startFakeLLM(script);
 *   const slow = await startSlowStreamProxy(fake.url, { eventGapMs: 8 });
 *   slow.listener = (event) => { if (event.type === 'event-sent' && event.index === 3) child.kill('SIGKILL'); };
 *   // … point the provider at `${slow.url}/v1` …
 *   await slow.close();
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export type SlowStreamEvent =
  | { type: 'request-start'; request: number; body: Record<string, unknown> }
  /** `index` counts from 0; `count` is the number of SSE events in the whole reply. */
  | { type: 'event-sent'; request: number; index: number; count: number }
  /** `complete` is false when the client went away before the whole reply was written. */
  | { type: 'reply-end'; request: number; complete: boolean };

export interface SlowStreamProxy {
  url: string;
  /** Requests received since the proxy started (numbered from 1 in the events). */
  readonly requestCount: number;
  listener: ((event: SlowStreamEvent) => void) | undefined;
  close(): Promise<void>;
}

export interface SlowStreamOptions {
  /** Pause before each SSE event after the first. */
  eventGapMs: number;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export async function startSlowStreamProxy(upstreamUrl: string, options: SlowStreamOptions): Promise<SlowStreamProxy> {
  let requestCount = 0;
  const proxy: SlowStreamProxy = {
    url: '',
    get requestCount() {
      return requestCount;
    },
    listener: undefined,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };

  const server = http.createServer((req, res) => {
    forward(req, res).catch((error: unknown) => {
      if (!res.headersSent) res.writeHead(502, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: `slow-stream proxy: ${String(error)}`, type: 'proxy_error' } }));
    });
  });

  async function forward(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const parts: Buffer[] = [];
    for await (const chunk of req) parts.push(Buffer.from(chunk as Uint8Array));
    const raw = Buffer.concat(parts).toString('utf8');
    const request = ++requestCount;
    proxy.listener?.({ type: 'request-start', request, body: parseObject(raw) });

    const upstream = await fetch(`${upstreamUrl}${req.url ?? '/'}`, {
      method: req.method ?? 'GET',
      headers: { 'content-type': req.headers['content-type'] ?? 'application/json' },
      ...(req.method === 'GET' || req.method === 'HEAD' ? {} : { body: raw }),
    });
    const contentType = upstream.headers.get('content-type') ?? 'application/json';
    const text = await upstream.text();
    let clientGone = false;
    res.on('close', () => {
      clientGone = !res.writableFinished;
    });

    if (!contentType.startsWith('text/event-stream')) {
      res.writeHead(upstream.status, { 'content-type': contentType });
      res.end(text);
      proxy.listener?.({ type: 'reply-end', request, complete: true });
      return;
    }

    const events = text.split(/(?<=\n\n)/).filter((event) => event.trim() !== '');
    res.writeHead(upstream.status, { 'content-type': contentType, 'cache-control': 'no-cache' });
    for (const [index, event] of events.entries()) {
      if (index > 0) await sleep(options.eventGapMs);
      if (clientGone || res.destroyed) break;
      await new Promise<void>((resolve) => res.write(event, () => resolve()));
      proxy.listener?.({ type: 'event-sent', request, index, count: events.length });
    }
    const complete = !clientGone && !res.destroyed;
    if (complete) res.end();
    proxy.listener?.({ type: 'reply-end', request, complete });
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  proxy.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return proxy;
}

function parseObject(raw: string): Record<string, unknown> {
  try {
    const value: unknown = JSON.parse(raw);
    return typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}
