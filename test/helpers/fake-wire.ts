/**
 * A loopback HTTP server (127.0.0.1, random port) that answers each request with the next scripted step, byte for
 * byte as given: an SSE stream of raw events, or a JSON body with a status. Where fake-llm.ts speaks the usual OpenAI
 * and Anthropic streams, this one lets a test send exactly the chunks a quirky server sends (the Responses API's
 * events, Gemini's `extra_content`, a local server's object arguments, a tag split across chunks).
 *
 *   const wire = await startFakeWire([{ sse: [chatChunk({ content: 'Hi' }), chatChunk({}, 'stop')] }]);
 *   // … point a provider at `${wire.url}/v1` …
 *   expect(wire.requests[0]?.path).toBe('/v1/chat/completions');
 *
 * Every request is recorded in `wire.requests`, with lower-cased headers, the query and the parsed JSON body.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface SseEvent {
  /** The `event:` line; omitted when undefined. */
  event?: string;
  /** JSON-encoded unless it is a string (e.g. "[DONE]"). */
  data: unknown;
}

export type WireStep =
  | { sse: SseEvent[]; headers?: Record<string, string> }
  | { status: number; json: unknown; headers?: Record<string, string> };

export interface WireRequest {
  method: string;
  path: string;
  query: Record<string, string>;
  headers: Record<string, string>;
  body: Record<string, unknown>;
}

export interface FakeWire {
  url: string;
  requests: WireRequest[];
  close(): Promise<void>;
}

export async function startFakeWire(steps: (WireStep | ((request: WireRequest) => WireStep))[]): Promise<FakeWire> {
  const queue = [...steps];
  const requests: WireRequest[] = [];
  const server = http.createServer(async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const parts: Buffer[] = [];
    for await (const chunk of req) parts.push(Buffer.from(chunk as Uint8Array));
    const raw = Buffer.concat(parts).toString('utf8');
    const request: WireRequest = {
      method: req.method ?? 'GET',
      path: url.pathname,
      query: Object.fromEntries(url.searchParams),
      headers: Object.fromEntries(
        Object.entries(req.headers).map(([k, v]) => [k.toLowerCase(), Array.isArray(v) ? v.join(', ') : (v ?? '')]),
      ),
      body: raw ? (JSON.parse(raw) as Record<string, unknown>) : {},
    };
    requests.push(request);
    const next = queue.shift();
    const step = typeof next === 'function' ? next(request) : next;
    if (!step) {
      res.writeHead(500, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: 'fake wire: script exhausted' } }));
      return;
    }
    if ('json' in step) {
      res.writeHead(step.status, { 'content-type': 'application/json', ...step.headers });
      res.end(JSON.stringify(step.json));
      return;
    }
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', ...step.headers });
    for (const { event, data } of step.sse) {
      res.write(
        `${event ? `event: ${event}\n` : ''}data: ${typeof data === 'string' ? data : JSON.stringify(data)}\n\n`,
      );
    }
    res.end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** One OpenAI chat-completion chunk with a single choice. */
export function chatChunk(delta: Record<string, unknown>, finishReason: string | null = null): SseEvent {
  return {
    data: {
      id: 'chatcmpl-wire',
      object: 'chat.completion.chunk',
      created: 1,
      model: 'wire-model',
      choices: [{ index: 0, delta, finish_reason: finishReason }],
    },
  };
}

/** A chat stream: the given deltas, then a finish chunk, a usage chunk and [DONE]. */
export function chatStream(deltas: Record<string, unknown>[], finishReason = 'stop'): WireStep {
  return {
    sse: [
      ...deltas.map((delta) => chatChunk(delta)),
      chatChunk({}, finishReason),
      {
        data: {
          id: 'chatcmpl-wire',
          object: 'chat.completion.chunk',
          created: 1,
          model: 'wire-model',
          choices: [],
          usage: { prompt_tokens: 7, completion_tokens: 3, total_tokens: 10 },
        },
      },
      { data: '[DONE]' },
    ],
  };
}

/** A Responses API stream: each event is sent with its `type` as the SSE event name, as OpenAI does. */
export function responsesStream(events: Record<string, unknown>[]): WireStep {
  return {
    sse: events.map((data, sequence) => ({ event: String(data.type), data: { ...data, sequence_number: sequence } })),
  };
}
