import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { AgentRunner, type RunnerEvent } from '../../src/agent/runner.js';
import { ToolRegistry } from '../../src/tools/registry.js';
import { defineTool, ok } from '../../src/tools/types.js';
import { call, FakeProvider, type Scripted } from '../helpers/fake-provider.js';

function setup(script: Scripted[], maxIterations = 10) {
  const executed: string[] = [];
  const tools = new ToolRegistry();
  tools.register(
    defineTool({
      name: 'echo',
      description: 'Echo text back',
      parameters: z.object({ text: z.string() }),
      execute: async ({ text }) => {
        executed.push(text);
        return ok(`echo: ${text}`);
      },
    }),
  );
  const provider = new FakeProvider(script);
  const runner = new AgentRunner({ provider, model: 'm', maxTokens: 100, tools, maxIterations });
  return { runner, provider, executed, tools };
}

const user = [
  { role: 'system' as const, content: 'sys' },
  { role: 'user' as const, content: 'hi' },
];

describe('AgentRunner', () => {
  it('returns the model text when no tools are called', async () => {
    const { runner } = setup([{ content: 'Hello there' }]);
    const result = await runner.run(user);
    expect(result.content).toBe('Hello there');
    expect(result.stopReason).toBe('completed');
    expect(result.messages).toEqual([{ role: 'assistant', content: 'Hello there' }]);
  });

  it('runs tool calls and sends the results back to the model', async () => {
    const { runner, provider, executed } = setup([{ toolCalls: [call('echo', { text: 'x' })] }, { content: 'done' }]);
    const events: RunnerEvent[] = [];
    const result = await runner.run(user, { onEvent: (e) => events.push(e) });
    expect(executed).toEqual(['x']);
    expect(result.content).toBe('done');
    const second = provider.requests[1]?.messages ?? [];
    expect(second.at(-1)).toMatchObject({ role: 'tool', content: 'echo: x', name: 'echo' });
    expect(second.at(-2)?.tool_calls?.[0]?.function.name).toBe('echo');
    expect(events.map((e) => e.type)).toContain('tool-end');
  });

  it('runs concurrency-safe tools in parallel and keeps results in call order', async () => {
    const tools = new ToolRegistry();
    let started = 0;
    let release: () => void = () => {};
    const bothStarted = new Promise<void>((r) => {
      release = r;
    });
    tools.register(
      defineTool({
        name: 'probe',
        description: 'waits for its sibling',
        parameters: z.object({ id: z.string() }),
        concurrencySafe: true,
        execute: async ({ id }) => {
          started += 1;
          if (started === 2) release();
          // Each waits for the other to start: run one at a time, the first would wait for ever (the test times out).
          await bothStarted;
          return ok(`${id}:parallel`);
        },
      }),
    );
    const provider = new FakeProvider([
      { toolCalls: [call('probe', { id: 'a' }), call('probe', { id: 'b' })] },
      { content: 'ok' },
    ]);
    const runner = new AgentRunner({ provider, model: 'm', maxTokens: 100, tools, maxIterations: 5 });
    const result = await runner.run(user);
    expect(result.messages.filter((m) => m.role === 'tool').map((m) => m.content)).toEqual([
      'a:parallel',
      'b:parallel',
    ]);
  });

  it('retries an empty response, then asks for a final answer with tools disabled', async () => {
    const { runner, provider } = setup([
      { content: '' },
      { content: '  ' },
      { content: '' },
      { content: 'Final words' },
    ]);
    const result = await runner.run(user);
    expect(result.content).toBe('Final words');
    expect(provider.requests).toHaveLength(4);
    expect(provider.requests[3]?.toolChoice).toBe('none');
    expect(provider.requests.slice(0, 3).every((r) => r.toolChoice === 'auto')).toBe(true);
  });

  it('continues a reply cut off by the output limit and joins the pieces', async () => {
    const { runner, provider } = setup([
      { content: 'The first half, ', finishReason: 'length' },
      { content: 'and the second half.' },
    ]);
    const result = await runner.run(user);
    expect(result.content).toBe('The first half, and the second half.');
    expect(provider.requests[1]?.messages.at(-1)?.role).toBe('user');
    expect(String(provider.requests[1]?.messages.at(-1)?.content)).toMatch(/cut off/);
  });

  it('drops malformed tool calls instead of sending them back', async () => {
    const bad = { ...call('echo', '{"text": '), id: 'bad1' };
    const nameless = { ...call('', {}), id: 'bad2' };
    const { runner, provider, executed } = setup([
      { toolCalls: [bad, nameless, call('echo', { text: 'good' })] },
      { content: 'ok' },
    ]);
    await runner.run(user);
    expect(executed).toEqual(['good']);
    const sent = provider.requests[1]?.messages ?? [];
    const ids = sent.flatMap((m) => m.tool_calls?.map((c) => c.id) ?? []);
    expect(ids).not.toContain('bad1');
    expect(ids).not.toContain('bad2');
  });

  it('answers an unknown tool with a did-you-mean error the model can read', async () => {
    const { runner, provider } = setup([{ toolCalls: [call('ecko', { text: 'x' })] }, { content: 'ok' }]);
    await runner.run(user);
    const toolMsg = provider.requests[1]?.messages.at(-1);
    expect(toolMsg?.role).toBe('tool');
    expect(String(toolMsg?.content)).toMatch(/not found/);
    expect(String(toolMsg?.content)).toMatch(/echo/);
  });

  it('names each schema problem when arguments are invalid', async () => {
    const { runner, provider, executed } = setup([{ toolCalls: [call('echo', { txt: 1 })] }, { content: 'ok' }]);
    await runner.run(user);
    expect(executed).toEqual([]);
    const text = String(provider.requests[1]?.messages.at(-1)?.content);
    expect(text).toMatch(/Invalid parameters for tool 'echo'/);
    expect(text).toMatch(/text/);
  });

  it('tells the model to change approach when the same call repeats three times', async () => {
    const same = () => ({ toolCalls: [call('echo', { text: 'again' })] });
    const { runner, provider, executed } = setup([same(), same(), same(), { content: 'stopped' }]);
    const result = await runner.run(user);
    expect(executed).toEqual(['again', 'again']);
    expect(String(provider.requests[3]?.messages.at(-1)?.content)).toMatch(/3 times in a row/);
    expect(result.content).toBe('stopped');
  });

  it('runs identical calls made in one response (only repeats across responses are refused)', async () => {
    const same = () => call('echo', { text: 'x' });
    const { runner, executed } = setup([{ toolCalls: [same(), same(), same()] }, { content: 'done' }]);
    await runner.run(user);
    expect(executed).toEqual(['x', 'x', 'x']);
  });

  it('reports a provider failure during the final tools-disabled request instead of hiding it', async () => {
    const loop = (i: number) => ({ toolCalls: [call('echo', { text: `step ${i}` })] });
    const { runner } = setup(
      [loop(1), { finishReason: 'error', error: { kind: 'quota', message: 'out of credit', retryable: false } }],
      1,
    );
    const result = await runner.run(user);
    expect(result.stopReason).toBe('error');
    expect(result.error?.kind).toBe('quota');
    expect(result.messages.some((m) => m.role === 'assistant' && !m.tool_calls)).toBe(false);
  });

  it('does not store whitespace-only text next to tool calls', async () => {
    const { runner } = setup([{ content: '\n\n', toolCalls: [call('echo', { text: 'a' })] }, { content: 'ok' }]);
    const result = await runner.run(user);
    expect(result.messages[0]).toMatchObject({ role: 'assistant', content: null });
  });

  it('gives a tools-disabled final answer when the iteration budget runs out', async () => {
    const loop = (i: number) => ({ toolCalls: [call('echo', { text: `step ${i}` })] });
    const { runner, provider } = setup([loop(1), loop(2), loop(3), { content: 'Summary of progress' }], 3);
    const result = await runner.run(user);
    expect(result.stopReason).toBe('max_iterations');
    expect(result.content).toBe('Summary of progress');
    expect(provider.requests.at(-1)?.toolChoice).toBe('none');
  });

  it('falls back to a fixed message when the final answer is empty too', async () => {
    const loop = (i: number) => ({ toolCalls: [call('echo', { text: `step ${i}` })] });
    const { runner } = setup([loop(1), loop(2), { content: '' }], 2);
    const result = await runner.run(user);
    expect(result.content).toMatch(/maximum number of tool call iterations \(2\)/);
  });

  it('returns provider failures as data with the typed error', async () => {
    const { runner } = setup([
      { finishReason: 'error', error: { kind: 'auth', message: 'invalid x-api-key', status: 401, retryable: false } },
    ]);
    const result = await runner.run(user);
    expect(result.stopReason).toBe('error');
    expect(result.error?.kind).toBe('auth');
  });

  it('sends the model a repaired copy of a damaged history without touching the stored one', async () => {
    const { runner, provider } = setup([{ content: 'fine' }]);
    const dangling = call('echo', { text: 'lost' });
    const history = [
      { role: 'system' as const, content: 'sys' },
      { role: 'user' as const, content: 'earlier' },
      { role: 'assistant' as const, content: null, tool_calls: [dangling] },
      { role: 'tool' as const, tool_call_id: 'orphan', name: 'echo', content: 'stray' },
      { role: 'user' as const, content: 'now' },
    ];
    const before = JSON.stringify(history);
    await runner.run(history);
    expect(JSON.stringify(history)).toBe(before);
    const sent = provider.requests[0]?.messages ?? [];
    expect(sent.find((m) => m.tool_call_id === 'orphan')).toBeUndefined();
    expect(sent.find((m) => m.tool_call_id === dangling.id)?.content).toMatch(/missing|interrupted/);
  });

  it('reports a tool round as it goes: the call first, then each result once it and the earlier ones finished', async () => {
    const { runner } = setup([
      { toolCalls: [call('echo', { text: 'a' }), call('echo', { text: 'b' })] },
      { content: 'done' },
    ]);
    const reports: string[][] = [];
    const result = await runner.run(user, {
      onProgress: async (messages) => void reports.push(messages.map((m) => m.role)),
    });
    expect(reports).toEqual([['assistant'], ['tool'], ['tool']]);
    expect(result.messages.map((m) => m.role)).toEqual(['assistant', 'tool', 'tool', 'assistant']);
  });

  it('reports each message of a big round once, in call order, however the parallel calls finish', async () => {
    const tools = new ToolRegistry();
    const gates = new Map<string, () => void>();
    tools.register(
      defineTool({
        name: 'probe',
        description: 'finishes when released',
        parameters: z.object({ id: z.string() }),
        concurrencySafe: true,
        execute: ({ id }) => new Promise((resolve) => gates.set(id, () => resolve(ok(id)))),
      }),
    );
    const ids = Array.from({ length: 50 }, (_, i) => `p${i}`);
    const provider = new FakeProvider([{ toolCalls: ids.map((id) => call('probe', { id })) }, { content: 'ok' }]);
    const runner = new AgentRunner({ provider, model: 'm', maxTokens: 100, tools, maxIterations: 5 });
    const reported: string[] = [];
    const run = runner.run(user, {
      onProgress: async (messages) => {
        for (const m of messages) if (m.role === 'tool') reported.push(String(m.content));
      },
    });
    await eventually(() => gates.size === ids.length);
    // Release in reverse: nothing can be reported before p0 finishes, then everything goes in call order.
    for (const id of [...ids].reverse()) gates.get(id)?.();
    const result = await run;
    expect(reported).toEqual(ids);
    expect(result.messages.filter((m) => m.role === 'tool').map((m) => m.content)).toEqual(ids);
  });

  it('runs at most maxCallsPerResponse calls of one response; the rest get an error result the model reads', async () => {
    const { tools, executed } = setup([]);
    const texts = Array.from({ length: 7 }, (_, i) => `t${i}`);
    const provider = new FakeProvider([{ toolCalls: texts.map((text) => call('echo', { text })) }, { content: 'ok' }]);
    const runner = new AgentRunner({
      provider,
      model: 'm',
      maxTokens: 100,
      tools,
      maxIterations: 5,
      maxCallsPerResponse: 3,
    });
    const result = await runner.run(user);
    expect(executed).toEqual(['t0', 't1', 't2']);
    const sent = provider.requests[1]?.messages ?? [];
    const results = sent.filter((m) => m.role === 'tool');
    expect(results).toHaveLength(7);
    expect(results.slice(0, 3).map((m) => m.content)).toEqual(['echo: t0', 'echo: t1', 'echo: t2']);
    for (const m of results.slice(3)) {
      expect(m.content).toBe(
        'Not run: at most 3 tool calls per response (tools.maxCallsPerResponse); call the rest in the next step.',
      );
    }
    expect(result.content).toBe('ok');
  });

  it('caps a response at 100 calls by default', async () => {
    const { runner, executed } = setup([
      { toolCalls: Array.from({ length: 130 }, (_, i) => call('echo', { text: `${i}` })) },
      { content: 'ok' },
    ]);
    const result = await runner.run(user);
    expect(executed).toHaveLength(100);
    const capped = result.messages.filter((m) => m.role === 'tool' && String(m.content).startsWith('Not run'));
    expect(capped).toHaveLength(30);
  });
});

async function eventually(condition: () => boolean, tries = 1000): Promise<void> {
  for (let i = 0; i < tries && !condition(); i++) await new Promise((r) => setImmediate(r));
  if (!condition()) throw new Error('condition not met');
}
