import { afterEach, describe, expect, it, vi } from 'vitest';
import { createAnthropicProvider } from '../../src/providers/anthropic.js';
import { isResolveError, type ProviderSettings, resolveProvider } from '../../src/providers/index.js';
import type { ChatMessage, ChatRequest, ToolDefinition } from '../../src/providers/types.js';
import { type FakeLLM, type FakeScriptStep, startFakeLLM } from '../helpers/fake-llm.js';
import { collect, recordingSleep, textOf } from './collect.js';

let fake: FakeLLM | undefined;
afterEach(async () => {
  await fake?.close();
  fake = undefined;
});

const MODEL = 'anthropic/claude-sonnet-4-5';

async function setup(script: FakeScriptStep[], settings: Partial<ProviderSettings> = {}) {
  fake = await startFakeLLM(script);
  const result = resolveProvider({
    model: MODEL,
    provider: 'auto',
    providers: { anthropic: { apiKey: 'sk-ant-test', apiBase: fake.url, ...settings } },
    env: {},
  });
  if (isResolveError(result)) throw new Error(result.error);
  const timer = recordingSleep();
  return { fake, waits: timer.waits, provider: createAnthropicProvider(result, { sleep: timer.sleep }) };
}

const request = (messages: ChatMessage[], extra: Partial<ChatRequest> = {}): ChatRequest => ({
  model: MODEL,
  messages,
  maxTokens: 8192,
  temperature: 0.1,
  ...extra,
});
const tool = (name: string): ToolDefinition => ({
  type: 'function',
  function: {
    name,
    description: `${name} tool`,
    parameters: { type: 'object', properties: { path: { type: 'string' } } },
  },
});
const PIXEL = 'iVBORw0KGgo=';
type Sent = { system: Record<string, unknown>[]; messages: { role: string; content: Record<string, unknown>[] }[] };

describe('Anthropic adapter: the request it sends', () => {
  it('converts system, tool calls, tool results and images to the Messages API shape', async () => {
    const { provider, fake } = await setup([{ text: 'done' }]);
    const history: ChatMessage[] = [
      { role: 'system', content: 'You are nanobot.' },
      {
        role: 'user',
        content: [
          { type: 'text', text: 'What is in this file and picture?' },
          { type: 'image_url', image_url: { url: `data:image/png;base64,${PIXEL}` } },
        ],
        timestamp: '2026-01-01T00:00:00Z',
      },
      {
        role: 'assistant',
        content: 'Reading both.',
        tool_calls: [
          { id: 'toolu_1', type: 'function', function: { name: 'read_file', arguments: '{"path":"a.txt"}' } },
          { id: 'toolu_2', type: 'function', function: { name: 'read_file', arguments: '{not json' } },
        ],
      },
      { role: 'tool', tool_call_id: 'toolu_1', name: 'read_file', content: '1| hello' },
      { role: 'tool', tool_call_id: 'toolu_2', name: 'read_file', content: 'Error: bad arguments' },
    ];
    const { response } = await collect(provider, request(history, { tools: [tool('read_file'), tool('exec')] }));
    expect(response.content).toBe('done');

    const sent = fake.requests[0];
    expect(sent?.path).toBe('/v1/messages');
    expect(sent?.headers['x-api-key']).toBe('sk-ant-test');
    expect(sent?.headers.authorization).toBeUndefined();
    const body = sent?.body as Sent & Record<string, unknown>;
    expect(body.model).toBe('claude-sonnet-4-5');
    expect(body.system).toEqual([{ type: 'text', text: 'You are nanobot.', cache_control: { type: 'ephemeral' } }]);
    expect(body.tools).toEqual([
      { name: 'read_file', description: 'read_file tool', input_schema: tool('read_file').function.parameters },
      {
        name: 'exec',
        description: 'exec tool',
        input_schema: tool('exec').function.parameters,
        cache_control: { type: 'ephemeral' },
      },
    ]);
    expect(body.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'user']);
    expect(body.messages[0]?.content).toEqual([
      { type: 'text', text: 'What is in this file and picture?' },
      { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PIXEL } },
    ]);
    expect(body.messages[1]?.content).toEqual([
      { type: 'text', text: 'Reading both.' },
      { type: 'tool_use', id: 'toolu_1', name: 'read_file', input: { path: 'a.txt' } },
      // Malformed arguments still make a valid request.
      { type: 'tool_use', id: 'toolu_2', name: 'read_file', input: {}, cache_control: { type: 'ephemeral' } },
    ]);
    // Consecutive tool results become one user message, after the tool_use turn.
    expect(body.messages[2]?.content).toEqual([
      { type: 'tool_result', tool_use_id: 'toolu_1', content: '1| hello' },
      { type: 'tool_result', tool_use_id: 'toolu_2', content: 'Error: bad arguments' },
    ]);
    expect(JSON.stringify(body)).not.toContain('timestamp');
  });

  it('merges back-to-back user messages so roles alternate', async () => {
    const { provider, fake } = await setup([{ text: 'ok' }]);
    await collect(
      provider,
      request([
        { role: 'user', content: 'one' },
        { role: 'user', content: 'two' },
      ]),
    );
    const body = fake.requests[0]?.body as Sent;
    expect(body.messages).toEqual([
      {
        role: 'user',
        content: [
          { type: 'text', text: 'one' },
          { type: 'text', text: 'two' },
        ],
      },
    ]);
  });

  it('enables extended thinking for a reasoning effort, leaving the answer room and without temperature', async () => {
    const { provider, fake } = await setup([{ text: 'ok' }]);
    await collect(provider, request([{ role: 'user', content: 'think' }], { reasoningEffort: 'high' }));
    const body = fake.requests[0]?.body ?? {};
    // nanobot's budget for "high" (8 k); max_tokens grows so the answer keeps 4 k next to it.
    expect(body.thinking).toEqual({ type: 'enabled', budget_tokens: 8192 });
    expect(body.max_tokens).toBe(12288);
    expect(body).not.toHaveProperty('temperature');
  });

  it('uses adaptive thinking and no temperature for the newer Claude families', async () => {
    const { provider, fake } = await setup([{ text: 'ok' }]);
    const messages: ChatMessage[] = [{ role: 'user', content: 'think' }];
    await collect(provider, request(messages, { model: 'claude-opus-4-7', reasoningEffort: 'high' }));
    const body = fake.requests[0]?.body ?? {};
    expect(body).toMatchObject({ thinking: { type: 'adaptive' }, output_config: { effort: 'high' } });
    expect(body).not.toHaveProperty('temperature');
  });

  it('keeps the SDK deprecation notice out of the terminal', async () => {
    const warn = vi.spyOn(console, 'warn');
    try {
      const { provider } = await setup([{ text: 'ok' }]);
      await collect(provider, request([{ role: 'user', content: 'hi' }], { model: 'claude-opus-4-5' }));
      expect(warn).not.toHaveBeenCalled();
    } finally {
      warn.mockRestore();
    }
  });

  it('accepts an apiBase that ends in /v1', async () => {
    const { provider, fake } = await setup([{ text: 'ok' }]);
    const withV1 = resolveProvider({
      model: MODEL,
      provider: 'anthropic',
      providers: { anthropic: { apiKey: 'k', apiBase: `${fake.url}/v1/` } },
      env: {},
    });
    if (isResolveError(withV1)) throw new Error(withV1.error);
    await collect(createAnthropicProvider(withV1), request([{ role: 'user', content: 'hi' }]));
    expect(fake.requests[0]?.path).toBe('/v1/messages');
    expect(provider.name).toBe('anthropic');
  });
});

describe('Anthropic-compatible vendors', () => {
  it('Kimi Coding gets its base path and the coding-agent User-Agent it requires', async () => {
    fake = await startFakeLLM([{ text: 'ok' }]);
    const resolved = resolveProvider({
      model: 'kimi-for-coding',
      provider: 'auto',
      providers: { kimiCoding: { apiKey: 'sk-kimi', apiBase: `${fake.url}/coding/v1` } },
      env: {},
    });
    if (isResolveError(resolved)) throw new Error(resolved.error);
    expect(resolved.name).toBe('kimi_coding');
    await collect(
      createAnthropicProvider(resolved),
      request([{ role: 'user', content: 'hi' }], { model: 'kimi-for-coding' }),
    );
    expect(fake.requests[0]?.path).toBe('/coding/v1/messages');
    expect(fake.requests[0]?.headers['user-agent']).toBe('claude-code/0.1.0');
    expect(fake.requests[0]?.body.model).toBe('kimi-for-coding');
  });
});

describe('Anthropic adapter: the response it returns', () => {
  it('streams text, announces and reassembles tool_use, and maps the stop reason', async () => {
    const { provider } = await setup([
      { text: 'Let me look at that file.', toolCalls: [{ name: 'read_file', arguments: { path: 'notes.md' } }] },
    ]);
    const { events, response } = await collect(
      provider,
      request([{ role: 'user', content: 'read notes' }], { tools: [tool('read_file')] }),
    );
    expect(textOf(events)).toBe('Let me look at that file.');
    expect(events.find((e) => e.type === 'tool-call-start')).toEqual({
      type: 'tool-call-start',
      id: 'toolu_fake_1_0',
      name: 'read_file',
    });
    expect(response).toMatchObject({ content: 'Let me look at that file.', finishReason: 'tool_calls' });
    expect(response.toolCalls).toEqual([
      { id: 'toolu_fake_1_0', type: 'function', function: { name: 'read_file', arguments: '{"path":"notes.md"}' } },
    ]);
  });

  it('returns thinking blocks with their signatures and replays them unchanged next turn', async () => {
    const { provider, fake } = await setup([
      { reasoning: 'The user wants the time.', signature: 'sig-abc==', toolCalls: [{ name: 'clock', arguments: {} }] },
      { text: 'It is noon.' },
    ]);
    const first = await collect(provider, request([{ role: 'user', content: 'time?' }], { reasoningEffort: 'low' }));
    expect(first.events.some((e) => e.type === 'reasoning-delta')).toBe(true);
    expect(first.response.reasoningContent).toBe('The user wants the time.');
    expect(first.response.thinkingBlocks).toEqual([
      { type: 'thinking', thinking: 'The user wants the time.', signature: 'sig-abc==' },
    ]);

    const call = first.response.toolCalls[0];
    if (!call) throw new Error('expected a tool call');
    await collect(
      provider,
      request([
        { role: 'user', content: 'time?' },
        {
          role: 'assistant',
          content: first.response.content,
          tool_calls: first.response.toolCalls,
          thinking_blocks: first.response.thinkingBlocks,
        },
        { role: 'tool', tool_call_id: call.id, content: '12:00' },
      ]),
    );
    const replayed = (fake.requests[1]?.body as Sent | undefined)?.messages[1]?.content;
    expect(replayed?.[0]).toEqual({ type: 'thinking', thinking: 'The user wants the time.', signature: 'sig-abc==' });
    expect(replayed?.[1]).toMatchObject({ type: 'tool_use', id: call.id, name: 'clock' });
  });

  it('maps max_tokens to length and reports cache usage', async () => {
    const { provider } = await setup([
      { text: 'cut off', finishReason: 'length', usage: { promptTokens: 5, cachedTokens: 100, cacheWriteTokens: 20 } },
    ]);
    const { response } = await collect(provider, request([{ role: 'user', content: 'hi' }]));
    expect(response.finishReason).toBe('length');
    expect(response.usage).toEqual({ promptTokens: 125, completionTokens: 5, cachedTokens: 100, cacheWriteTokens: 20 });
  });

  it('retries when Anthropic is overloaded (529) and stops on a bad key', async () => {
    const overloaded = { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } };
    const { provider, fake, waits } = await setup([
      { status: 529, errorBody: overloaded },
      { text: 'back' },
      { status: 401 },
    ]);
    const ok = await collect(provider, request([{ role: 'user', content: 'hi' }]));
    expect(ok.response.content).toBe('back');
    expect(ok.events.find((e) => e.type === 'retry-wait')).toMatchObject({ error: { kind: 'server', status: 529 } });
    expect(waits).toEqual([1000]);

    const denied = await collect(provider, request([{ role: 'user', content: 'hi' }]));
    expect(denied.response).toMatchObject({ finishReason: 'error', error: { kind: 'auth', status: 401 } });
    expect(fake.requests).toHaveLength(3);
  });
});
