/**
 * A scripted fake LLM server on 127.0.0.1 (random port) that speaks both wire APIs the providers use:
 *   POST …/chat/completions  OpenAI chat completions (SSE when `stream: true`, JSON otherwise)
 *   POST …/messages          Anthropic Messages (SSE with `event:` lines when `stream: true`, JSON otherwise)
 *   GET  …/models            a one-model list
 * Any path prefix works, so point an OpenAI-wire provider at `${fake.url}/v1` and an Anthropic one at `fake.url`.
 *
 *   const fake = await startFakeLLM([
 *     { toolCalls: [{ name: 'read_file', arguments: { path: 'a.txt' } }] },
 *     { text: 'Done.' },
 *   ]);
 *   // … run the code under test with apiBase = `${fake.url}/v1` …
 *   expect(fake.requests[1]?.body.messages).toContainEqual(expect.objectContaining({ role: 'tool' }));
 *   await fake.close();
 *
 * Each request consumes the next script step, whatever the path. A step is a reply, or a function
 * `(requestBody, request) => reply` to answer from what was sent. `status >= 400` sends an HTTP error with
 * `errorBody` (default: the wire's usual error shape) and `headers` (e.g. `{ 'retry-after': '0' }`).
 * When the script runs out, the reply is the text "(fake: script exhausted)". Every request is recorded in
 * `fake.requests`, in order, with lower-cased headers and the parsed JSON body.
 * `stallAfterEvents: n` sends the headers and the first n SSE events of a streamed reply, then holds the connection
 * open without another byte until the client goes away (or the fake closes): a stream that stalls after its headers.
 * `fake.stalls()` counts the replies that reached their stall.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface FakeToolCall {
  name: string;
  arguments: Record<string, unknown> | string;
  id?: string;
}

export interface FakeReply {
  text?: string;
  /** OpenAI wire: `reasoning_content` deltas. Anthropic wire: a thinking block (with `signature`). */
  reasoning?: string;
  /** Signature of the Anthropic thinking block; defaults to "fake-signature-<request number>". */
  signature?: string;
  toolCalls?: FakeToolCall[];
  /** Defaults to "tool_calls" when there are tool calls, else "stop". */
  finishReason?: 'stop' | 'tool_calls' | 'length';
  usage?: { promptTokens?: number; completionTokens?: number; cachedTokens?: number; cacheWriteTokens?: number };
  /** >= 400: answer with an HTTP error instead. */
  status?: number;
  errorBody?: unknown;
  headers?: Record<string, string>;
  /** Wait this long before answering (e.g. to test aborts). */
  delayMs?: number;
  /** Streamed replies only: send the headers and this many SSE events, then stall (see the file comment). */
  stallAfterEvents?: number;
}

export interface FakeRequest {
  method: string;
  /** Path without the query string, e.g. "/v1/chat/completions". */
  path: string;
  query: Record<string, string>;
  headers: Record<string, string>;
  body: Record<string, unknown>;
}

export type FakeScriptStep =
  | FakeReply
  | ((body: Record<string, unknown>, request: FakeRequest) => FakeReply | Promise<FakeReply>);

export interface FakeLLM {
  /** e.g. "http://127.0.0.1:41234" (no trailing slash, no /v1). */
  url: string;
  requests: FakeRequest[];
  /** Appends steps to the script. */
  enqueue(...steps: FakeScriptStep[]): void;
  /** Steps not consumed yet. */
  remaining(): number;
  /** Streamed replies that sent their `stallAfterEvents` events and are now holding the connection. */
  stalls(): number;
  close(): Promise<void>;
}

export const SCRIPT_EXHAUSTED_TEXT = '(fake: script exhausted)';

export async function startFakeLLM(script: FakeScriptStep[] = []): Promise<FakeLLM> {
  const queue = [...script];
  const requests: FakeRequest[] = [];
  let stalls = 0;
  const server = http.createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: `fake LLM crashed: ${String(error)}`, type: 'fake_error' } }));
    });
  });

  async function handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const parts: Buffer[] = [];
    for await (const chunk of req) parts.push(Buffer.from(chunk as Uint8Array));
    const raw = Buffer.concat(parts).toString('utf8');
    let body: Record<string, unknown> = {};
    try {
      const parsed: unknown = raw ? JSON.parse(raw) : {};
      if (typeof parsed === 'object' && parsed !== null) body = parsed as Record<string, unknown>;
    } catch {
      return sendJson(res, 400, { error: { message: 'fake LLM: request body is not JSON', type: 'invalid_request' } });
    }
    const request: FakeRequest = {
      method: req.method ?? 'GET',
      path: url.pathname,
      query: Object.fromEntries(url.searchParams),
      headers: Object.fromEntries(
        Object.entries(req.headers).map(([k, v]) => [k.toLowerCase(), Array.isArray(v) ? v.join(', ') : (v ?? '')]),
      ),
      body,
    };
    requests.push(request);

    if (request.method === 'GET' && url.pathname.endsWith('/models')) {
      return sendJson(res, 200, { object: 'list', data: [{ id: 'fake-model', object: 'model', owned_by: 'fake' }] });
    }
    const wire = url.pathname.endsWith('/chat/completions')
      ? 'openai'
      : url.pathname.endsWith('/messages')
        ? 'anthropic'
        : undefined;
    if (request.method !== 'POST' || !wire) {
      return sendJson(res, 404, { error: { message: `fake LLM: no route for ${request.method} ${url.pathname}` } });
    }

    const step = queue.shift() ?? { text: SCRIPT_EXHAUSTED_TEXT };
    const reply = typeof step === 'function' ? await step(body, request) : step;
    if (reply.delayMs) await new Promise((resolve) => setTimeout(resolve, reply.delayMs).unref());
    if (res.destroyed) return;
    const n = requests.length;
    if (reply.status && reply.status >= 400) {
      return sendJson(res, reply.status, reply.errorBody ?? defaultErrorBody(wire, reply.status), reply.headers);
    }
    const model = typeof body.model === 'string' ? body.model : 'fake-model';
    const stream = body.stream === true;
    const sse = (events: SseEvent[]) => {
      if (reply.stallAfterEvents === undefined) return sendSse(res, events, reply.headers);
      sendSse(res, events.slice(0, reply.stallAfterEvents), reply.headers, false);
      stalls += 1;
    };
    if (wire === 'openai') {
      if (stream) return sse(openAIEvents(reply, model, n));
      return sendJson(res, 200, openAIMessage(reply, model, n), reply.headers);
    }
    if (stream) return sse(anthropicEvents(reply, model, n));
    return sendJson(res, 200, anthropicMessage(reply, model, n), reply.headers);
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    enqueue: (...steps) => queue.push(...steps),
    remaining: () => queue.length,
    stalls: () => stalls,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

type SseEvent = { event?: string; data: unknown };

function sendSse(res: http.ServerResponse, events: SseEvent[], headers?: Record<string, string>, end = true): void {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', ...headers });
  // Headers go out at once even when no event follows (a stall right after the headers).
  res.flushHeaders();
  for (const { event, data } of events) {
    const payload = typeof data === 'string' ? data : JSON.stringify(data);
    res.write(`${event ? `event: ${event}\n` : ''}data: ${payload}\n\n`);
  }
  if (end) res.end();
}

function sendJson(res: http.ServerResponse, status: number, body: unknown, headers?: Record<string, string>): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
}

function defaultErrorBody(wire: 'openai' | 'anthropic', status: number): unknown {
  const type = status === 429 ? 'rate_limit_error' : status === 401 ? 'authentication_error' : 'api_error';
  const message = `fake LLM error ${status}`;
  return wire === 'openai' ? { error: { message, type, code: null } } : { type: 'error', error: { type, message } };
}

/** Splits text into up to three pieces so consumers really see several deltas. */
function pieces(text: string): string[] {
  const chars = Array.from(text);
  if (chars.length < 6) return [text];
  const size = Math.ceil(chars.length / 3);
  const out: string[] = [];
  for (let i = 0; i < chars.length; i += size) out.push(chars.slice(i, i + size).join(''));
  return out;
}

function argumentsJson(call: FakeToolCall): string {
  return typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments);
}

function finishReasonOf(reply: FakeReply): 'stop' | 'tool_calls' | 'length' {
  return reply.finishReason ?? (reply.toolCalls?.length ? 'tool_calls' : 'stop');
}

function openAIUsage(reply: FakeReply) {
  const prompt = reply.usage?.promptTokens ?? 10;
  const completion = reply.usage?.completionTokens ?? 5;
  return {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: prompt + completion,
    prompt_tokens_details: { cached_tokens: reply.usage?.cachedTokens ?? 0 },
  };
}

function openAIEvents(reply: FakeReply, model: string, n: number): SseEvent[] {
  const base = { id: `chatcmpl-fake-${n}`, object: 'chat.completion.chunk', created: 1, model };
  const chunk = (delta: Record<string, unknown>, finish: string | null = null): SseEvent => ({
    data: { ...base, choices: [{ index: 0, delta, finish_reason: finish }] },
  });
  const events: SseEvent[] = [chunk({ role: 'assistant', content: '' })];
  for (const piece of reply.reasoning ? pieces(reply.reasoning) : []) events.push(chunk({ reasoning_content: piece }));
  for (const piece of reply.text ? pieces(reply.text) : []) events.push(chunk({ content: piece }));
  reply.toolCalls?.forEach((call, index) => {
    const id = call.id ?? `call_fake_${n}_${index}`;
    events.push(chunk({ tool_calls: [{ index, id, type: 'function', function: { name: call.name, arguments: '' } }] }));
    for (const piece of pieces(argumentsJson(call))) {
      events.push(chunk({ tool_calls: [{ index, function: { arguments: piece } }] }));
    }
  });
  events.push(chunk({}, finishReasonOf(reply)));
  events.push({ data: { ...base, choices: [], usage: openAIUsage(reply) } });
  events.push({ data: '[DONE]' });
  return events;
}

function openAIMessage(reply: FakeReply, model: string, n: number): unknown {
  const toolCalls = reply.toolCalls?.map((call, index) => ({
    id: call.id ?? `call_fake_${n}_${index}`,
    type: 'function',
    function: { name: call.name, arguments: argumentsJson(call) },
  }));
  return {
    id: `chatcmpl-fake-${n}`,
    object: 'chat.completion',
    created: 1,
    model,
    choices: [
      {
        index: 0,
        finish_reason: finishReasonOf(reply),
        message: {
          role: 'assistant',
          content: reply.text ?? null,
          ...(reply.reasoning ? { reasoning_content: reply.reasoning } : {}),
          ...(toolCalls?.length ? { tool_calls: toolCalls } : {}),
        },
      },
    ],
    usage: openAIUsage(reply),
  };
}

const ANTHROPIC_STOP = { stop: 'end_turn', tool_calls: 'tool_use', length: 'max_tokens' } as const;

function anthropicUsage(reply: FakeReply) {
  return {
    input_tokens: reply.usage?.promptTokens ?? 10,
    output_tokens: reply.usage?.completionTokens ?? 5,
    cache_read_input_tokens: reply.usage?.cachedTokens ?? 0,
    cache_creation_input_tokens: reply.usage?.cacheWriteTokens ?? 0,
  };
}

/** Content blocks in wire order; a tool_use also carries its arguments as raw JSON text for streaming. */
function anthropicBlocks(reply: FakeReply, n: number): { block: Record<string, unknown>; json?: string }[] {
  const blocks: { block: Record<string, unknown>; json?: string }[] = [];
  if (reply.reasoning) {
    const signature = reply.signature ?? `fake-signature-${n}`;
    blocks.push({ block: { type: 'thinking', thinking: reply.reasoning, signature } });
  }
  if (reply.text) blocks.push({ block: { type: 'text', text: reply.text } });
  reply.toolCalls?.forEach((call, index) => {
    const json = argumentsJson(call);
    const id = call.id ?? `toolu_fake_${n}_${index}`;
    blocks.push({ block: { type: 'tool_use', id, name: call.name, input: safeParse(json) }, json });
  });
  return blocks;
}

function anthropicEvents(reply: FakeReply, model: string, n: number): SseEvent[] {
  const usage = anthropicUsage(reply);
  const events: SseEvent[] = [];
  const send = (type: string, data: Record<string, unknown>) => events.push({ event: type, data: { type, ...data } });
  send('message_start', {
    message: {
      id: `msg_fake_${n}`,
      type: 'message',
      role: 'assistant',
      model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: { ...usage, output_tokens: 1 },
    },
  });
  anthropicBlocks(reply, n).forEach(({ block, json }, index) => {
    const delta = (d: Record<string, unknown>) => send('content_block_delta', { index, delta: d });
    if (block.type === 'thinking') {
      send('content_block_start', { index, content_block: { type: 'thinking', thinking: '', signature: '' } });
      for (const piece of pieces(String(block.thinking))) delta({ type: 'thinking_delta', thinking: piece });
      delta({ type: 'signature_delta', signature: block.signature });
    } else if (block.type === 'text') {
      send('content_block_start', { index, content_block: { type: 'text', text: '' } });
      for (const piece of pieces(String(block.text))) delta({ type: 'text_delta', text: piece });
    } else {
      send('content_block_start', { index, content_block: { ...block, input: {} } });
      for (const piece of pieces(json ?? '{}')) delta({ type: 'input_json_delta', partial_json: piece });
    }
    send('content_block_stop', { index });
  });
  send('message_delta', {
    delta: { stop_reason: ANTHROPIC_STOP[finishReasonOf(reply)], stop_sequence: null },
    usage: { output_tokens: usage.output_tokens },
  });
  send('message_stop', {});
  return events;
}

function anthropicMessage(reply: FakeReply, model: string, n: number): unknown {
  return {
    id: `msg_fake_${n}`,
    type: 'message',
    role: 'assistant',
    model,
    content: anthropicBlocks(reply, n).map(({ block }) => block),
    stop_reason: ANTHROPIC_STOP[finishReasonOf(reply)],
    stop_sequence: null,
    usage: anthropicUsage(reply),
  };
}

function safeParse(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return {};
  }
}
