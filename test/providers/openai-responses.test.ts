import { afterEach, describe, expect, it } from 'vitest';
import type { ResolvedProvider } from '../../src/providers/index.js';
import { createOpenAICompatProvider } from '../../src/providers/openai-compat.js';
import { buildResponsesBody } from '../../src/providers/openai-responses.js';
import type { ChatMessage, ChatRequest, ToolDefinition } from '../../src/providers/types.js';
import { chatStream, type FakeWire, responsesStream, startFakeWire } from '../helpers/fake-wire.js';
import { collect, recordingSleep, resolvedProvider, textOf } from './collect.js';

let wire: FakeWire | undefined;
afterEach(async () => {
  await wire?.close();
  wire = undefined;
});

const resolved = resolvedProvider;

const request = (messages: ChatMessage[], extra: Partial<ChatRequest> = {}): ChatRequest => ({
  model: 'gpt-5.1',
  messages,
  maxTokens: 512,
  temperature: 0.2,
  ...extra,
});
const weatherTool: ToolDefinition = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'Weather for a city',
    parameters: { type: 'object', properties: { city: { type: 'string' } } },
  },
};

/** The events OpenAI streams for: a reasoning summary, a sentence, one function call, then completion. */
const toolTurn = responsesStream([
  { type: 'response.created', response: { id: 'resp_1', status: 'in_progress', output: [] } },
  { type: 'response.output_item.added', output_index: 0, item: { type: 'reasoning', id: 'rs_1', summary: [] } },
  { type: 'response.reasoning_summary_text.delta', item_id: 'rs_1', summary_index: 0, delta: 'The user wants ' },
  { type: 'response.reasoning_summary_text.delta', item_id: 'rs_1', summary_index: 0, delta: 'the weather.' },
  { type: 'response.reasoning_summary_text.delta', item_id: 'rs_1', summary_index: 1, delta: 'Call the tool.' },
  { type: 'response.output_item.done', output_index: 0, item: { type: 'reasoning', id: 'rs_1', summary: [] } },
  { type: 'response.output_item.added', output_index: 1, item: { type: 'message', id: 'msg_1', role: 'assistant' } },
  { type: 'response.output_text.delta', item_id: 'msg_1', output_index: 1, content_index: 0, delta: 'Let me ' },
  { type: 'response.output_text.delta', item_id: 'msg_1', output_index: 1, content_index: 0, delta: 'check.' },
  {
    type: 'response.output_item.added',
    output_index: 2,
    item: { type: 'function_call', id: 'fc_1', call_id: 'call_w1', name: 'get_weather', arguments: '' },
  },
  { type: 'response.function_call_arguments.delta', item_id: 'fc_1', output_index: 2, delta: '{"city":' },
  { type: 'response.function_call_arguments.delta', item_id: 'fc_1', output_index: 2, delta: '"Oslo"}' },
  { type: 'response.function_call_arguments.done', item_id: 'fc_1', output_index: 2, arguments: '{"city":"Oslo"}' },
  {
    type: 'response.output_item.done',
    output_index: 2,
    item: { type: 'function_call', id: 'fc_1', call_id: 'call_w1', name: 'get_weather', arguments: '{"city":"Oslo"}' },
  },
  {
    type: 'response.completed',
    response: {
      id: 'resp_1',
      status: 'completed',
      output: [],
      usage: {
        input_tokens: 120,
        output_tokens: 40,
        total_tokens: 160,
        input_tokens_details: { cached_tokens: 100 },
        output_tokens_details: { reasoning_tokens: 25 },
      },
    },
  },
]);

const textTurn = (text: string, status = 'completed', extra: Record<string, unknown> = {}) =>
  responsesStream([
    { type: 'response.output_text.delta', item_id: 'msg_2', output_index: 0, content_index: 0, delta: text },
    {
      type: `response.${status}`,
      response: { status, output: [], usage: { input_tokens: 5, output_tokens: 2 }, ...extra },
    },
  ]);

describe('OpenAI Responses API (apiType: "responses")', () => {
  it('streams reasoning summaries, text and a function call, and reports usage', async () => {
    wire = await startFakeWire([toolTurn]);
    const target = resolved('openai', 'gpt-5.1', { apiKey: 'sk-r', apiBase: `${wire.url}/v1`, apiType: 'responses' });
    const { events, response } = await collect(
      createOpenAICompatProvider(target),
      request([{ role: 'user', content: 'Weather in Oslo?' }], { tools: [weatherTool], reasoningEffort: 'low' }),
    );
    expect(wire.requests[0]?.path).toBe('/v1/responses');
    expect(textOf(events)).toBe('Let me check.');
    expect(events.filter((e) => e.type === 'tool-call-start')).toEqual([
      { type: 'tool-call-start', id: 'call_w1', name: 'get_weather' },
    ]);
    expect(response).toMatchObject({
      content: 'Let me check.',
      reasoningContent: 'The user wants the weather.\n\nCall the tool.',
      finishReason: 'tool_calls',
      toolCalls: [{ id: 'call_w1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } }],
      usage: { promptTokens: 120, completionTokens: 40, cachedTokens: 100, reasoningTokens: 25 },
    });
  });

  it('sends the conversation as instructions plus input items, statelessly', async () => {
    wire = await startFakeWire([textTurn('Sunny.')]);
    const target = resolved('openai', 'gpt-5.1', {
      apiKey: 'sk-r',
      apiBase: `${wire.url}/v1`,
      apiType: 'responses',
      extraBody: { tools: [{ type: 'web_search' }], reasoning: { summary: 'auto' } },
    });
    const history: ChatMessage[] = [
      { role: 'system', content: 'You are nanobot.' },
      { role: 'user', content: 'Weather in Oslo?', timestamp: '2026-01-01T00:00:00Z' },
      {
        role: 'assistant',
        content: 'Let me check.',
        reasoning_content: 'thinking',
        tool_calls: [
          { id: 'call_w1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'call_w1', name: 'get_weather', content: 'sunny, 21 °C' },
    ];
    const { response } = await collect(
      createOpenAICompatProvider(target),
      request(history, { tools: [weatherTool], reasoningEffort: 'high' }),
    );
    expect(response).toMatchObject({ content: 'Sunny.', finishReason: 'stop' });
    const body = wire.requests[0]?.body;
    expect(body).toEqual({
      model: 'gpt-5.1',
      instructions: 'You are nanobot.',
      input: [
        { role: 'user', content: [{ type: 'input_text', text: 'Weather in Oslo?' }] },
        { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Let me check.' }] },
        { type: 'function_call', call_id: 'call_w1', name: 'get_weather', arguments: '{"city":"Oslo"}' },
        { type: 'function_call_output', call_id: 'call_w1', output: 'sunny, 21 °C' },
      ],
      max_output_tokens: 512,
      store: false,
      stream: true,
      // A reasoning effort rules out temperature; extraBody's summary merges into the effort.
      reasoning: { effort: 'high', summary: 'auto' },
      // Hosted tools from extraBody are added to ours.
      tools: [
        {
          type: 'function',
          name: 'get_weather',
          description: 'Weather for a city',
          parameters: { type: 'object', properties: { city: { type: 'string' } } },
        },
        { type: 'web_search' },
      ],
      tool_choice: 'auto',
    });
  });

  it('maps an incomplete response to "length" and a refusal to "content_filter"', async () => {
    wire = await startFakeWire([
      textTurn('Half', 'incomplete', { incomplete_details: { reason: 'max_output_tokens' } }),
      responsesStream([
        { type: 'response.refusal.delta', item_id: 'msg_3', output_index: 0, content_index: 0, delta: "I can't help." },
        { type: 'response.completed', response: { status: 'completed', output: [] } },
      ]),
    ]);
    const provider = createOpenAICompatProvider(
      resolved('openai', 'gpt-5.1', { apiKey: 'k', apiBase: `${wire.url}/v1`, apiType: 'responses' }),
    );
    const cut = await collect(provider, request([{ role: 'user', content: 'long essay' }]));
    expect(cut.response).toMatchObject({ content: 'Half', finishReason: 'length' });
    const refusal = await collect(provider, request([{ role: 'user', content: 'bad idea' }]));
    expect(refusal.response).toMatchObject({ content: "I can't help.", finishReason: 'content_filter' });
  });

  it('retries a failed response that says it was rate limited, and reports a cut-off stream', async () => {
    wire = await startFakeWire([
      responsesStream([
        {
          type: 'response.failed',
          response: { status: 'failed', error: { code: 'rate_limit_exceeded', message: 'Slow down' } },
        },
      ]),
      textTurn('Recovered.'),
      responsesStream([
        { type: 'response.output_text.delta', item_id: 'm', output_index: 0, content_index: 0, delta: 'The ans' },
      ]),
    ]);
    const timer = recordingSleep();
    const provider = createOpenAICompatProvider(
      resolved('openai', 'gpt-5.1', { apiKey: 'k', apiBase: `${wire.url}/v1`, apiType: 'responses' }),
      { sleep: timer.sleep },
    );
    const first = await collect(provider, request([{ role: 'user', content: 'hi' }]));
    expect(first.events[0]).toMatchObject({ type: 'retry-wait', error: { kind: 'rate_limit' } });
    expect(first.response).toMatchObject({ content: 'Recovered.', finishReason: 'stop' });
    const cut = await collect(provider, request([{ role: 'user', content: 'again' }]));
    expect(cut.response).toMatchObject({ finishReason: 'error', content: 'The ans', error: { kind: 'network' } });
  });
});

describe('OpenAI Responses API: when it is used', () => {
  /** Sends what the SDK addresses to api.openai.com to the loopback fake instead. */
  const toFake =
    (target: FakeWire): typeof fetch =>
    (input, init) =>
      globalThis.fetch(
        String(input instanceof Request ? input.url : input).replace('https://api.openai.com', target.url),
        init,
      );

  it('on "auto", uses Responses for OpenAI reasoning models and falls back to chat completions where it is missing', async () => {
    wire = await startFakeWire([
      {
        status: 404,
        json: { error: { message: 'Unknown request URL: POST /v1/responses', type: 'invalid_request_error' } },
      },
      chatStream([{ content: 'From chat completions.' }]),
      chatStream([{ content: 'Plain model.' }]),
    ]);
    const target = resolved('openai', 'gpt-5.1', { apiKey: 'k' });
    const provider = createOpenAICompatProvider(target, { fetch: toFake(wire), sleep: async () => {} });
    const reasoning = await collect(provider, request([{ role: 'user', content: 'hi' }], { model: 'gpt-5.1' }));
    expect(reasoning.response).toMatchObject({ content: 'From chat completions.', finishReason: 'stop' });
    expect(reasoning.events.some((e) => e.type === 'retry-wait')).toBe(false);
    const plain = await collect(provider, request([{ role: 'user', content: 'hi' }], { model: 'gpt-4.1' }));
    expect(plain.response.content).toBe('Plain model.');
    expect(wire.requests.map((r) => r.path)).toEqual(['/v1/responses', '/v1/chat/completions', '/v1/chat/completions']);
  });

  it('never uses Responses with apiType "chat_completions", nor for other providers on "auto"', async () => {
    wire = await startFakeWire([chatStream([{ content: 'a' }]), chatStream([{ content: 'b' }])]);
    const openai = resolved('openai', 'gpt-5.1', { apiKey: 'k', apiType: 'chat_completions' });
    await collect(
      createOpenAICompatProvider(openai, { fetch: toFake(wire) }),
      request([{ role: 'user', content: 'hi' }]),
    );
    const gateway = resolved('openrouter', 'openai/gpt-5.1', { apiKey: 'k', apiBase: `${wire.url}/v1` });
    await collect(
      createOpenAICompatProvider(gateway),
      request([{ role: 'user', content: 'hi' }], { model: 'openai/gpt-5.1', reasoningEffort: 'high' }),
    );
    expect(wire.requests.map((r) => r.path)).toEqual(['/v1/chat/completions', '/v1/chat/completions']);
  });

  it('shapes the body for the ChatGPT Codex backend: no token cap or temperature, summaries on', () => {
    const codex: ResolvedProvider = {
      ...resolved('openai', 'gpt-5.1', { apiKey: 'k' }),
      name: 'openai_codex',
      spec: { ...resolved('openai', 'gpt-5.1', { apiKey: 'k' }).spec, name: 'openai_codex' },
    };
    const body = buildResponsesBody(codex, request([{ role: 'user', content: 'hi' }], { reasoningEffort: 'medium' }));
    expect(body).toMatchObject({
      instructions: '',
      store: false,
      stream: true,
      parallel_tool_calls: true,
      tool_choice: 'auto',
      reasoning: { effort: 'medium', summary: 'auto' },
    });
    expect(body.prompt_cache_key).toMatch(/^[0-9a-f]{32}$/);
    expect(body).not.toHaveProperty('max_output_tokens');
    expect(body).not.toHaveProperty('temperature');
  });
});
