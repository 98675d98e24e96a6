import { afterEach, describe, expect, it } from 'vitest';
import { createOpenAICompatProvider } from '../../src/providers/openai-compat.js';
import type { ChatMessage, ChatRequest, StreamEvent, ToolDefinition } from '../../src/providers/types.js';
import { chatStream, type FakeWire, startFakeWire, type WireStep } from '../helpers/fake-wire.js';
import { collect, resolvedProvider, textOf } from './collect.js';

let wire: FakeWire | undefined;
afterEach(async () => {
  await wire?.close();
  wire = undefined;
});

const resolved = resolvedProvider;

async function setup(steps: WireStep[], provider = 'ollama', model = 'qwen3:8b') {
  wire = await startFakeWire(steps);
  return createOpenAICompatProvider(resolved(provider, model, { apiKey: 'k', apiBase: `${wire.url}/v1` }), {
    sleep: async () => {},
  });
}

const ask = (model = 'qwen3:8b', messages: ChatMessage[] = [{ role: 'user', content: 'hi' }]): ChatRequest => ({
  model,
  messages,
  maxTokens: 200,
  tools: [tool('read_file'), tool('exec')],
});
function tool(name: string): ToolDefinition {
  return { type: 'function', function: { name, description: name, parameters: { type: 'object', properties: {} } } };
}
const reasoningOf = (events: StreamEvent[]) => events.map((e) => (e.type === 'reasoning-delta' ? e.text : '')).join('');
const starts = (events: StreamEvent[]) => events.filter((e) => e.type === 'tool-call-start');

describe('reasoning in every form, kept apart from the answer', () => {
  it('moves <think> content to reasoning even when the tags are split across chunks', async () => {
    const provider = await setup([
      chatStream([
        { content: '<thi' },
        { content: 'nk>The user says hi' },
        { content: '.</th' },
        { content: 'ink>\n\nHel' },
        { content: 'lo!' },
      ]),
    ]);
    const { events, response } = await collect(provider, ask());
    expect(textOf(events)).toBe('Hello!');
    expect(reasoningOf(events)).toBe('The user says hi.');
    expect(response).toMatchObject({ content: 'Hello!', reasoningContent: 'The user says hi.', finishReason: 'stop' });
  });

  it('reads `reasoning` (vLLM, Ollama, OpenRouter) as well as `reasoning_content`', async () => {
    const provider = await setup([
      chatStream([{ reasoning: 'Short ' }, { reasoning: 'thought.' }, { content: 'Answer.' }]),
      chatStream([{ reasoning_content: 'Other field.' }, { content: 'Two.' }]),
    ]);
    const first = await collect(provider, ask());
    expect(first.response).toMatchObject({ content: 'Answer.', reasoningContent: 'Short thought.' });
    const second = await collect(provider, ask());
    expect(second.response).toMatchObject({ content: 'Two.', reasoningContent: 'Other field.' });
  });

  it("reads MiniMax's `reasoning_details` and gives MiniMax its thinking back inline next turn", async () => {
    const provider = await setup(
      [
        chatStream([{ reasoning_details: [{ type: 'reasoning.text', text: 'Plan the call.' }] }, { content: 'Ok.' }]),
        chatStream([{ content: 'Done.' }]),
      ],
      'minimax',
      'MiniMax-M2',
    );
    const first = await collect(provider, ask('MiniMax-M2'));
    expect(first.response).toMatchObject({ content: 'Ok.', reasoningContent: 'Plan the call.' });
    const history: ChatMessage[] = [
      { role: 'user', content: 'go' },
      { role: 'assistant', content: 'Ok.', reasoning_content: 'Plan the call.' },
      { role: 'user', content: 'again' },
    ];
    await collect(provider, ask('MiniMax-M2', history));
    const sent = wire?.requests[1]?.body.messages as Record<string, unknown>[];
    expect(sent[1]?.content).toBe('<think>\nPlan the call.\n</think>\n\nOk.');
  });

  it('splits a reply whose chat template opened the think block itself', async () => {
    const provider = await setup([chatStream([{ content: 'Plan: greet.\n</think>\n\nHi there.' }])]);
    const { response } = await collect(provider, ask());
    expect(response).toMatchObject({ content: 'Hi there.', reasoningContent: 'Plan: greet.' });
  });

  it("takes StepFun's answer from the reasoning field when content is empty", async () => {
    const provider = await setup([chatStream([{ reasoning: 'The capital is Paris.' }])], 'stepfun', 'step-3');
    const { response } = await collect(provider, ask('step-3'));
    expect(response.content).toBe('The capital is Paris.');
    expect(response.reasoningContent).toBeUndefined();
  });

  it("lifts Mistral's thinking content parts into reasoning", async () => {
    const provider = await setup(
      [
        chatStream([
          { content: [{ type: 'thinking', thinking: [{ type: 'text', text: 'Consider.' }] }] },
          { content: [{ type: 'text', text: 'Result.' }] },
        ]),
      ],
      'mistral',
      'magistral-medium-latest',
    );
    const { response } = await collect(provider, ask('magistral-medium-latest'));
    expect(response).toMatchObject({ content: 'Result.', reasoningContent: 'Consider.' });
  });
});

describe('tool calls from local servers and quirky vendors', () => {
  it('accepts arguments sent as an object, and calls without index or id (Ollama)', async () => {
    const provider = await setup([
      chatStream(
        [
          {
            tool_calls: [
              { function: { name: 'read_file', arguments: { path: 'a.md' } } },
              { function: { name: 'exec', arguments: { command: 'ls' } } },
            ],
          },
        ],
        'tool_calls',
      ),
    ]);
    const { events, response } = await collect(provider, ask());
    expect(response.toolCalls.map((c) => [c.function.name, JSON.parse(c.function.arguments)])).toEqual([
      ['read_file', { path: 'a.md' }],
      ['exec', { command: 'ls' }],
    ]);
    const ids = response.toolCalls.map((c) => c.id);
    expect(new Set(ids).size).toBe(2);
    expect(ids.every((id) => /^call_[0-9a-f]{24}$/.test(id))).toBe(true);
    expect(starts(events).map((e) => (e as { id: string }).id)).toEqual(ids);
  });

  it('gives parallel calls that share one id (GLM) distinct ids, announced as such', async () => {
    const provider = await setup(
      [
        chatStream([
          { tool_calls: [{ index: 0, id: 'call_same', function: { name: 'read_file', arguments: '{"path":"a"}' } }] },
          { tool_calls: [{ index: 1, id: 'call_same', function: { name: 'read_file', arguments: '{"path":"b"}' } }] },
        ]),
      ],
      'zhipu',
      'glm-4.6',
    );
    const { events, response } = await collect(provider, ask('glm-4.6'));
    const ids = response.toolCalls.map((c) => c.id);
    expect(ids[0]).toBe('call_same');
    expect(ids[1]).not.toBe('call_same');
    expect(starts(events).map((e) => (e as { id: string }).id)).toEqual(ids);
    expect(response.finishReason).toBe('tool_calls');
    // Z.AI streams tool arguments only when asked to.
    expect(wire?.requests[0]?.body.tool_stream).toBe(true);
  });

  it('turns a tool call printed as <tool_call> text into a real call, keeping it out of the answer', async () => {
    const provider = await setup([
      chatStream([
        { content: 'Let me check.<tool_' },
        { content: 'call>{"name": "exec", "arguments": {"command": "date"}}</tool_call>' },
      ]),
    ]);
    const { events, response } = await collect(provider, ask());
    expect(textOf(events)).toBe('Let me check.');
    expect(response.content).toBe('Let me check.');
    expect(response.finishReason).toBe('tool_calls');
    expect(response.toolCalls).toMatchObject([{ function: { name: 'exec', arguments: '{"command":"date"}' } }]);
    expect(starts(events)).toHaveLength(1);
  });
});

describe('Gemini thought signatures', () => {
  const signature = { google: { thought_signature: 'c2lnbmF0dXJlLWZyb20tZ2VtaW5p' } };

  it('keeps the signature of a tool call and sends it back with the call next time', async () => {
    const provider = await setup(
      [
        chatStream([
          {
            tool_calls: [
              {
                index: 0,
                id: 'function-call-1',
                type: 'function',
                function: { name: 'read_file', arguments: '{"path":"a.md"}' },
                extra_content: signature,
              },
            ],
          },
        ]),
        chatStream([{ content: 'It is about cats.' }]),
      ],
      'gemini',
      'gemini-3-pro-preview',
    );
    const first = await collect(provider, ask('gemini-3-pro-preview'));
    expect(first.response.toolCalls).toEqual([
      {
        id: 'function-call-1',
        type: 'function',
        function: { name: 'read_file', arguments: '{"path":"a.md"}' },
        extra_content: signature,
      },
    ]);
    const history: ChatMessage[] = [
      { role: 'user', content: 'What is a.md about?' },
      { role: 'assistant', content: null, tool_calls: first.response.toolCalls },
      { role: 'tool', tool_call_id: 'function-call-1', name: 'read_file', content: 'cats' },
    ];
    await collect(provider, ask('gemini-3-pro-preview', history));
    const sent = wire?.requests[1]?.body.messages as Record<string, unknown>[];
    expect(sent[1]).toEqual({
      role: 'assistant',
      content: null,
      tool_calls: [
        {
          id: 'function-call-1',
          type: 'function',
          function: { name: 'read_file', arguments: '{"path":"a.md"}' },
          extra_content: signature,
        },
      ],
    });
  });

  it("signs the current turn's calls that another model made with Google's documented stand-in", async () => {
    const provider = await setup([chatStream([{ content: 'ok' }])], 'gemini', 'gemini-3-pro-preview');
    const call = (id: string) => ({ id, type: 'function' as const, function: { name: 'exec', arguments: '{}' } });
    const history: ChatMessage[] = [
      { role: 'user', content: 'earlier' },
      { role: 'assistant', content: null, tool_calls: [call('old')] },
      { role: 'tool', tool_call_id: 'old', content: 'x' },
      { role: 'user', content: 'now' },
      { role: 'assistant', content: null, tool_calls: [call('a'), call('b')] },
      { role: 'tool', tool_call_id: 'a', content: 'y' },
      { role: 'tool', tool_call_id: 'b', content: 'z' },
    ];
    await collect(provider, ask('gemini-3-pro-preview', history));
    const sent = wire?.requests[0]?.body.messages as { tool_calls?: Record<string, unknown>[] }[];
    expect(sent[1]?.tool_calls?.[0]).not.toHaveProperty('extra_content');
    expect(sent[4]?.tool_calls?.[0]?.extra_content).toEqual({
      google: { thought_signature: 'skip_thought_signature_validator' },
    });
    expect(sent[4]?.tool_calls?.[1]).not.toHaveProperty('extra_content');
  });
});
