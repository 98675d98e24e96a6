import { afterEach, describe, expect, it } from 'vitest';
import { buildMessagesBody } from '../../src/providers/anthropic-request.js';
import type { ProviderSettings } from '../../src/providers/index.js';
import { createOpenAICompatProvider } from '../../src/providers/openai-compat.js';
import { buildChatBody } from '../../src/providers/openai-request.js';
import type { ChatMessage, ChatRequest } from '../../src/providers/types.js';
import { type FakeLLM, startFakeLLM } from '../helpers/fake-llm.js';
import { collect, resolvedProvider } from './collect.js';

let fake: FakeLLM | undefined;
afterEach(async () => {
  await fake?.close();
  fake = undefined;
});

const resolved = (provider: string, model: string, settings: ProviderSettings = {}) =>
  resolvedProvider(provider, model, { apiKey: 'k', apiBase: 'http://127.0.0.1:9/v1', ...settings });

const user = (content: string): ChatMessage => ({ role: 'user', content });
const call = { id: 'call_1', type: 'function' as const, function: { name: 'exec', arguments: '{"command":"ls"}' } };
const history: ChatMessage[] = [
  user('list files'),
  { role: 'assistant', content: null, tool_calls: [call] },
  { role: 'tool', tool_call_id: 'call_1', content: 'a.md' },
];
const chat = (model: string, effort?: string, extra: Partial<ChatRequest> = {}): ChatRequest => ({
  model,
  messages: [user('hi')],
  maxTokens: 1000,
  temperature: 0.5,
  ...(effort ? { reasoningEffort: effort } : {}),
  ...extra,
});

/** The reasoning-related fields of the chat body a provider would receive. */
function reasoningFields(provider: string, model: string, effort?: string, settings: ProviderSettings = {}) {
  const body = buildChatBody(resolved(provider, model, settings), chat(model, effort));
  const keys = ['reasoning_effort', 'reasoning', 'thinking', 'enable_thinking', 'reasoning_split', 'temperature'];
  return Object.fromEntries(keys.filter((key) => key in body).map((key) => [key, body[key]]));
}

describe('reasoningEffort, per provider (nanobot mapping)', () => {
  it('switches thinking on and off in each vendor’s own terms', () => {
    expect(reasoningFields('deepseek', 'deepseek-chat', 'high')).toEqual({
      reasoning_effort: 'high',
      thinking: { type: 'enabled' },
    });
    expect(reasoningFields('deepseek', 'deepseek-chat', 'none')).toEqual({
      thinking: { type: 'disabled' },
      temperature: 0.5,
    });
    expect(reasoningFields('deepseek', 'deepseek-chat')).toEqual({ temperature: 0.5 });
    expect(reasoningFields('dashscope', 'qwen3.6-plus', 'minimal')).toEqual({
      reasoning_effort: 'minimum',
      enable_thinking: false,
    });
    expect(reasoningFields('minimax', 'MiniMax-M2', 'medium')).toEqual({
      reasoning_effort: 'medium',
      reasoning_split: true,
    });
    expect(reasoningFields('volcengine', 'doubao-seed-1.6', 'low')).toEqual({
      reasoning_effort: 'low',
      thinking: { type: 'enabled' },
    });
  });

  it('knows the models that carry their own switch, wherever they are served', () => {
    // Kimi: the thinking switch replaces reasoning_effort; its temperature is fixed server-side.
    expect(reasoningFields('moonshot', 'kimi-k2.6', 'high')).toEqual({ thinking: { type: 'enabled' } });
    // Always-thinking Kimi models are never told to stop.
    expect(reasoningFields('moonshot', 'kimi-k2.7-code', 'none')).toEqual({});
    expect(reasoningFields('moonshot', 'kimi-k3', 'low')).toEqual({ reasoning_effort: 'max' });
    expect(reasoningFields('openrouter', 'moonshotai/kimi-k2.6', 'high')).toEqual({
      reasoning: { effort: 'high' },
      thinking: { type: 'enabled' },
    });
  });

  it('speaks OpenAI’s and Mistral’s vocabularies, and never sends "none"', () => {
    const gpt5 = buildChatBody(resolved('openai', 'gpt-5'), chat('gpt-5', 'minimal'));
    expect(gpt5).toMatchObject({ reasoning_effort: 'minimal', max_completion_tokens: 1000 });
    expect(gpt5).not.toHaveProperty('temperature');
    expect(reasoningFields('openai', 'gpt-4.1', 'none')).toEqual({ temperature: 0.5 });
    expect(reasoningFields('mistral', 'mistral-medium-latest', 'low')).toEqual({ temperature: 0.5 });
    expect(reasoningFields('mistral', 'mistral-medium-latest', 'medium')).toEqual({ reasoning_effort: 'high' });
    expect(reasoningFields('mistral', 'magistral-medium-latest', 'high')).toEqual({});
  });

  it('lets a custom endpoint declare its thinking style, and extraBody merge into it', () => {
    expect(reasoningFields('my_gateway', 'in-house-model', 'none', { thinkingStyle: 'thinking_type' })).toEqual({
      thinking: { type: 'disabled' },
      temperature: 0.5,
    });
    const body = buildChatBody(
      resolved('deepseek', 'deepseek-chat', { extraBody: { thinking: { budget_tokens: 2048 }, top_k: 20 } }),
      chat('deepseek-chat', 'high'),
    );
    expect(body).toMatchObject({ thinking: { type: 'enabled', budget_tokens: 2048 }, top_k: 20 });
  });
});

describe('reasoning sent back, or not', () => {
  it('replays reasoning_content to DeepSeek, as "" where a thinking turn has none', () => {
    const messages = (model: string, effort?: string) =>
      buildChatBody(resolved('deepseek', model), { ...chat(model, effort), messages: history }).messages as Record<
        string,
        unknown
      >[];
    expect(messages('deepseek-chat', 'high')[1]).toMatchObject({ role: 'assistant', reasoning_content: '' });
    expect(messages('deepseek-v4-pro')[1]).toMatchObject({ reasoning_content: '' });
    expect(messages('deepseek-chat')[1]).not.toHaveProperty('reasoning_content');
  });

  it('sends a thinking tool turn’s reasoning back to DeepSeek, and strips it for Groq and Mistral', async () => {
    fake = await startFakeLLM([
      {
        reasoning: 'I should list the files.',
        toolCalls: [{ name: 'exec', arguments: { command: 'ls' }, id: 'call_1' }],
      },
      { text: 'There is a.md.' },
      { text: 'groq' },
      { text: 'mistral' },
    ]);
    const base = { apiKey: 'k', apiBase: `${fake.url}/v1` };
    const deepseek = createOpenAICompatProvider(resolved('deepseek', 'deepseek-chat', base));
    const first = await collect(deepseek, chat('deepseek-chat', 'high', { messages: [user('list files')] }));
    const replay: ChatMessage[] = [
      user('list files'),
      {
        role: 'assistant',
        content: null,
        tool_calls: first.response.toolCalls,
        reasoning_content: first.response.reasoningContent,
      },
      { role: 'tool', tool_call_id: 'call_1', content: 'a.md' },
    ];
    await collect(deepseek, chat('deepseek-chat', 'high', { messages: replay }));
    const sentBack = (n: number) => (fake?.requests[n]?.body.messages as Record<string, unknown>[] | undefined)?.[1];
    expect(sentBack(1)).toMatchObject({ reasoning_content: 'I should list the files.' });

    for (const provider of ['groq', 'mistral']) {
      const target = createOpenAICompatProvider(resolved(provider, 'some-model', base));
      await collect(target, chat('some-model', undefined, { messages: replay }));
    }
    expect(sentBack(2)).not.toHaveProperty('reasoning_content');
    expect(sentBack(3)).not.toHaveProperty('reasoning_content');
  });

  it('replays signed Anthropic thinking blocks and leaves unsigned ones out', () => {
    const body = buildMessagesBody(resolved('anthropic', 'claude-sonnet-4-5'), {
      ...chat('claude-sonnet-4-5'),
      messages: [
        user('q'),
        {
          role: 'assistant',
          content: 'a',
          thinking_blocks: [
            { type: 'thinking', thinking: 'signed', signature: 'sig' },
            { type: 'thinking', thinking: 'unsigned', signature: '' },
            { type: 'redacted_thinking', data: 'opaque' },
          ],
        },
        user('q2'),
      ],
    });
    const assistant = (body.messages as { content: Record<string, unknown>[] }[])[1];
    expect(assistant?.content.map((b) => b.type)).toEqual(['thinking', 'redacted_thinking', 'text']);
  });
});
