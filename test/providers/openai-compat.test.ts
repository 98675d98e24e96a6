import { afterEach, describe, expect, it } from 'vitest';
import { createOpenAICompatProvider } from '../../src/providers/openai-compat.js';
import type { ChatMessage, ChatRequest, ToolDefinition } from '../../src/providers/types.js';
import { gate } from '../helpers/eventually.js';
import { type FakeLLM, startFakeLLM } from '../helpers/fake-llm.js';
import { collect, recordingSleep, resolvedProvider, textOf } from './collect.js';

let fake: FakeLLM | undefined;
afterEach(async () => {
  await fake?.close();
  fake = undefined;
});

const resolved = resolvedProvider;

async function setup(script: Parameters<typeof startFakeLLM>[0], provider = 'custom', model = 'test-model') {
  fake = await startFakeLLM(script);
  const timer = recordingSleep();
  const target = resolved(provider, model, { apiKey: 'sk-test', apiBase: `${fake.url}/v1` });
  return { fake, waits: timer.waits, provider: createOpenAICompatProvider(target, { sleep: timer.sleep }) };
}

const user = (content: string): ChatMessage => ({ role: 'user', content });
const request = (messages: ChatMessage[], extra: Partial<ChatRequest> = {}): ChatRequest => ({
  model: 'test-model',
  messages,
  maxTokens: 256,
  temperature: 0.1,
  ...extra,
});
const weatherTool: ToolDefinition = {
  type: 'function',
  function: { name: 'get_weather', description: 'Weather', parameters: { type: 'object', properties: {} } },
};

describe('OpenAI-compatible adapter', () => {
  it('streams text as it arrives and reports usage with cached tokens', async () => {
    const { provider } = await setup([{ text: 'Hello there, nice to meet you.', usage: { cachedTokens: 4 } }]);
    const { events, response } = await collect(provider, request([user('hi')]));
    expect(events.filter((e) => e.type === 'text-delta').length).toBeGreaterThan(1);
    expect(textOf(events)).toBe('Hello there, nice to meet you.');
    expect(response).toMatchObject({ content: 'Hello there, nice to meet you.', finishReason: 'stop', toolCalls: [] });
    expect(response.usage).toEqual({ promptTokens: 10, completionTokens: 5, cachedTokens: 4 });
  });

  it('reassembles streamed tool calls and announces each as it starts', async () => {
    const { provider, fake } = await setup([
      {
        text: 'Checking.',
        toolCalls: [
          { name: 'get_weather', arguments: { city: 'Paris', days: 3 }, id: 'call_a' },
          { name: 'get_weather', arguments: { city: 'Oslo' }, id: 'call_b' },
        ],
      },
    ]);
    const { events, response } = await collect(provider, request([user('weather?')], { tools: [weatherTool] }));
    expect(events.filter((e) => e.type === 'tool-call-start')).toEqual([
      { type: 'tool-call-start', id: 'call_a', name: 'get_weather' },
      { type: 'tool-call-start', id: 'call_b', name: 'get_weather' },
    ]);
    expect(response.finishReason).toBe('tool_calls');
    expect(response.toolCalls.map((c) => [c.id, JSON.parse(c.function.arguments)])).toEqual([
      ['call_a', { city: 'Paris', days: 3 }],
      ['call_b', { city: 'Oslo' }],
    ]);
    expect(fake.requests[0]?.body).toMatchObject({ tools: [weatherTool], tool_choice: 'auto', stream: true });
  });

  it('streams reasoning_content and replays it (without session-only fields) on the next turn', async () => {
    const { provider, fake } = await setup([{ reasoning: 'Let me think about it.', text: '42' }]);
    const history: ChatMessage[] = [
      user('first'),
      {
        role: 'assistant',
        content: 'earlier answer',
        reasoning_content: 'earlier thoughts',
        thinking_blocks: [{ type: 'thinking', thinking: 'x', signature: 'sig' }],
        timestamp: '2026-01-01T00:00:00Z',
      },
      { ...user('second'), timestamp: '2026-01-01T00:00:01Z' },
    ];
    const { events, response } = await collect(provider, request(history));
    expect(
      events
        .filter((e) => e.type === 'reasoning-delta')
        .map((e) => (e as { text: string }).text)
        .join(''),
    ).toBe('Let me think about it.');
    expect(response).toMatchObject({ content: '42', reasoningContent: 'Let me think about it.' });
    const sent = fake.requests[0]?.body.messages as Record<string, unknown>[];
    expect(sent[1]).toEqual({ role: 'assistant', content: 'earlier answer', reasoning_content: 'earlier thoughts' });
    expect(sent[2]).toEqual({ role: 'user', content: 'second' });
  });

  it('sends the configured extra headers, query and body, and the key as a bearer token', async () => {
    fake = await startFakeLLM([{ text: 'ok' }]);
    const target = resolved('custom', 'm', {
      apiKey: 'sk-secret',
      apiBase: `${fake.url}/v1`,
      extraHeaders: { 'X-Tenant': 'acme' },
      extraQuery: { 'api-version': '7' },
      extraBody: { top_k: 20 },
    });
    await collect(createOpenAICompatProvider(target), request([user('hi')]));
    const sent = fake.requests[0];
    expect(sent?.headers['x-tenant']).toBe('acme');
    expect(sent?.headers.authorization).toBe('Bearer sk-secret');
    expect(sent?.query).toEqual({ 'api-version': '7' });
    expect(sent?.body).toMatchObject({ top_k: 20, max_tokens: 256, stream_options: { include_usage: true } });
  });

  it('uses max_completion_tokens and drops temperature for OpenAI reasoning models', async () => {
    fake = await startFakeLLM([{ text: 'ok' }]);
    const target = resolved('openai', 'o3-mini', { apiKey: 'k', apiBase: `${fake.url}/v1` });
    await collect(createOpenAICompatProvider(target), request([user('hi')], { model: 'openai/o3-mini' }));
    const body = fake.requests[0]?.body;
    expect(body).toMatchObject({ model: 'o3-mini', max_completion_tokens: 256 });
    expect(body).not.toHaveProperty('max_tokens');
    expect(body).not.toHaveProperty('temperature');
  });

  it('adds cache breakpoints for Claude behind OpenRouter', async () => {
    fake = await startFakeLLM([{ text: 'ok' }]);
    const target = resolved('openrouter', 'anthropic/claude-sonnet-4-5', { apiKey: 'k', apiBase: `${fake.url}/v1` });
    const messages: ChatMessage[] = [
      { role: 'system', content: 'You are nanobot.' },
      user('one'),
      { role: 'assistant', content: 'two' },
      user('three'),
    ];
    await collect(
      createOpenAICompatProvider(target),
      request(messages, { model: 'anthropic/claude-sonnet-4-5', tools: [weatherTool] }),
    );
    const body = fake.requests[0]?.body as { messages: Record<string, unknown>[]; tools: Record<string, unknown>[] };
    const ephemeral = { type: 'ephemeral' };
    expect(body.messages[0]?.content).toEqual([{ type: 'text', text: 'You are nanobot.', cache_control: ephemeral }]);
    expect(body.messages[2]?.content).toEqual([{ type: 'text', text: 'two', cache_control: ephemeral }]);
    expect(body.messages[3]?.content).toBe('three');
    expect(body.tools.at(-1)?.cache_control).toEqual(ephemeral);
  });
});

describe('OpenAI-compatible adapter: failures', () => {
  it('retries a 429 after the server-requested wait, announcing it first', async () => {
    const { provider, fake, waits } = await setup([
      { status: 429, headers: { 'retry-after': '0' } },
      { text: 'second time lucky' },
    ]);
    const { events, response } = await collect(provider, request([user('hi')]));
    expect(response).toMatchObject({ content: 'second time lucky', finishReason: 'stop' });
    const retry = events.find((e) => e.type === 'retry-wait');
    expect(retry).toMatchObject({ attempt: 1, delayMs: 0, error: { kind: 'rate_limit', status: 429 } });
    expect(waits).toEqual([0]);
    expect(fake.requests).toHaveLength(2);
  });

  it('backs off 1 s, 2 s, 4 s and then reports the server error', async () => {
    const { provider, fake, waits } = await setup(Array.from({ length: 5 }, () => ({ status: 503 })));
    const { events, response } = await collect(provider, request([user('hi')]));
    expect(waits).toEqual([1000, 2000, 4000]);
    expect(events.filter((e) => e.type === 'retry-wait')).toHaveLength(3);
    expect(fake.requests).toHaveLength(4);
    expect(response).toMatchObject({ finishReason: 'error', error: { kind: 'server', status: 503, retryable: true } });
  });

  it('does not retry a bad key', async () => {
    const { provider, fake } = await setup([{ status: 401 }, { text: 'never' }]);
    const { events, response } = await collect(provider, request([user('hi')]));
    expect(response).toMatchObject({ finishReason: 'error', error: { kind: 'auth', status: 401, retryable: false } });
    expect(events).toEqual([]);
    expect(fake.requests).toHaveLength(1);
  });

  it('reports an over-long prompt as context_overflow', async () => {
    const errorBody = { error: { message: "This model's maximum context length is 8192 tokens", type: 'invalid' } };
    const { provider } = await setup([{ status: 400, errorBody }]);
    const { response } = await collect(provider, request([user('a very long prompt')]));
    expect(response.error).toMatchObject({ kind: 'context_overflow', retryable: false });
  });

  it('keeps partial output and does not retry once text has streamed', async () => {
    let calls = 0;
    const brokenStream: typeof fetch = async () => {
      calls++;
      // One chunk of text, then the connection drops.
      const chunk = { id: 'x', object: 'chat.completion.chunk', created: 1, model: 'm' };
      const delta = { ...chunk, choices: [{ index: 0, delta: { content: 'Half an ans' }, finish_reason: null }] };
      let pulls = 0;
      const body = new ReadableStream<Uint8Array>({
        pull(controller) {
          if (pulls++ === 0) controller.enqueue(new TextEncoder().encode(`data: ${JSON.stringify(delta)}\n\n`));
          else controller.error(new TypeError('terminated'));
        },
      });
      return new Response(body, { headers: { 'content-type': 'text/event-stream' } });
    };
    const target = resolved('custom', 'm', { apiKey: 'k', apiBase: 'http://127.0.0.1:9/v1' });
    const provider = createOpenAICompatProvider(target, { fetch: brokenStream, sleep: async () => {} });
    const { events, response } = await collect(provider, request([user('hi')]));
    expect(textOf(events)).toBe('Half an ans');
    expect(response).toMatchObject({ finishReason: 'error', content: 'Half an ans', error: { kind: 'network' } });
    expect(calls).toBe(1);
  });

  it('treats an abort in the middle of the stream as aborted, not as a finished answer', async () => {
    const controller = new AbortController();
    const chunk = { id: 'x', object: 'chat.completion.chunk', created: 1, model: 'm' };
    const delta = { ...chunk, choices: [{ index: 0, delta: { content: 'line 1\n' }, finish_reason: null }] };
    // Once the request's signal aborts, the body just ends: the SDK then stops iterating without an error.
    const slowStream: typeof fetch = async (_url, init) => {
      let pulls = 0;
      const body = new ReadableStream<Uint8Array>({
        pull(stream) {
          if (init?.signal?.aborted) return stream.close();
          if (pulls++ > 0) controller.abort();
          stream.enqueue(new TextEncoder().encode(`data: ${JSON.stringify(delta)}\n\n`));
        },
      });
      return new Response(body, { headers: { 'content-type': 'text/event-stream' } });
    };
    const target = resolved('custom', 'm', { apiKey: 'k', apiBase: 'http://127.0.0.1:9/v1' });
    const provider = createOpenAICompatProvider(target, { fetch: slowStream, sleep: async () => {} });
    const { response } = await collect(provider, request([user('hi')], { signal: controller.signal }));
    expect(response).toMatchObject({ finishReason: 'error', error: { kind: 'aborted' } });
  });

  it('does not pass a stream that ended without a finish reason as complete', async () => {
    const chunk = { id: 'x', object: 'chat.completion.chunk', created: 1, model: 'm' };
    const delta = { ...chunk, choices: [{ index: 0, delta: { content: 'The answer is' }, finish_reason: null }] };
    const cutStream: typeof fetch = async () =>
      new Response(`data: ${JSON.stringify(delta)}\n\n`, { headers: { 'content-type': 'text/event-stream' } });
    const target = resolved('custom', 'm', { apiKey: 'k', apiBase: 'http://127.0.0.1:9/v1' });
    const provider = createOpenAICompatProvider(target, { fetch: cutStream, sleep: async () => {} });
    const { response } = await collect(provider, request([user('hi')]));
    expect(response).toMatchObject({ finishReason: 'error', content: 'The answer is', error: { kind: 'network' } });
  });

  it('ends with an aborted error when the caller aborts, without retrying', async () => {
    // Aborted once the request reached the fake (a gate), which would otherwise answer after 30 s.
    const reached = gate();
    const slow = async () => {
      reached.open();
      await new Promise((resolve) => setTimeout(resolve, 30_000).unref());
      return { text: 'too late' };
    };
    const { provider, fake } = await setup([slow, { text: 'never' }]);
    const controller = new AbortController();
    const pending = collect(provider, request([user('hi')], { signal: controller.signal }));
    await reached.promise;
    controller.abort();
    const { response } = await pending;
    expect(response).toMatchObject({ finishReason: 'error', error: { kind: 'aborted', retryable: false } });
    expect(fake.requests).toHaveLength(1);
  });

  it('an unreachable server is a network error after the retries', async () => {
    const target = resolved('custom', 'm', { apiKey: 'k', apiBase: 'http://127.0.0.1:9/v1' });
    const timer = recordingSleep();
    const { response } = await collect(
      createOpenAICompatProvider(target, { sleep: timer.sleep }),
      request([user('hi')]),
    );
    expect(response.error).toMatchObject({ kind: 'network', retryable: true });
    expect(timer.waits).toEqual([1000, 2000, 4000]);
  });
});
