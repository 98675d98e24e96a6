import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ContextBuilder } from '../../src/agent/context.js';
import { AgentLoop } from '../../src/agent/loop.js';
import { AgentRunner } from '../../src/agent/runner.js';
import { JsonlSessionStore } from '../../src/session/jsonl-store.js';
import { ToolRegistry } from '../../src/tools/registry.js';
import { defineTool, ok } from '../../src/tools/types.js';
import { call, FakeProvider, type Scripted } from '../helpers/fake-provider.js';

async function setup(script: Scripted[], extraTools: Parameters<ToolRegistry['register']>[0][] = []) {
  const dir = await mkdtemp(join(tmpdir(), 'nb-loop-'));
  const sessions = new JsonlSessionStore(join(dir, 'sessions'));
  const provider = new FakeProvider(script);
  const tools = new ToolRegistry();
  tools.register(
    defineTool({
      name: 'echo',
      description: 'Echo',
      parameters: z.object({ text: z.string() }),
      execute: async ({ text }) => ok(text),
    }),
  );
  for (const tool of extraTools) tools.register(tool);
  const runner = new AgentRunner({ provider, model: 'm', maxTokens: 100, tools, maxIterations: 5 });
  const context = new ContextBuilder({ workspace: dir });
  const loop = new AgentLoop({ sessions, context, runner });
  return { loop, sessions, provider, dir };
}

const input = (content: string) => ({ channel: 'cli', chatId: 'direct', content });

describe('AgentLoop', () => {
  it('saves the user message before the model is called', async () => {
    let seenOnDisk = '';
    const { loop, sessions } = await setup([
      () => {
        seenOnDisk = readFileSync(sessions.pathFor('cli:direct'), 'utf8');
        return { content: 'hi back' };
      },
    ]);
    await loop.processMessage(input('remember this question'));
    expect(seenOnDisk).toContain('remember this question');
    expect(seenOnDisk).toContain('"pending_user_turn":true');
  });

  it('stores the whole turn and replays it on the next turn', async () => {
    const { loop, sessions, provider } = await setup([
      { toolCalls: [call('echo', { text: 'ping' })] },
      { content: 'first answer' },
      { content: 'second answer' },
    ]);
    const first = await loop.processMessage(input('first question'));
    expect(first.content).toBe('first answer');
    const session = await sessions.load('cli:direct');
    expect(session.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
    expect(session.metadata.pending_user_turn).toBeUndefined();
    expect(session.messages.every((m) => typeof m.timestamp === 'string')).toBe(true);

    await loop.processMessage(input('second question'));
    const sent = provider.requests[2]?.messages ?? [];
    expect(sent.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'tool', 'assistant', 'user']);
    expect(sent.some((m) => 'timestamp' in m)).toBe(false);
  });

  it('keeps the system prompt byte-identical across turns and puts the time in the user message', async () => {
    const { loop, provider } = await setup([{ content: 'a' }, { content: 'b' }]);
    await loop.processMessage(input('one'));
    await loop.processMessage(input('two'));
    const [a, b] = provider.requests;
    expect(a?.messages[0]).toEqual(b?.messages[0]);
    expect(String(b?.messages.at(-1)?.content)).toMatch(
      /^two\n\n\[Runtime Context - metadata only, not instructions\]\nCurrent time: .+\nChannel: cli\nChat ID: direct\n\[\/Runtime Context\]$/,
    );
  });

  it('closes a turn interrupted by a crash before taking new input', async () => {
    const { loop, sessions, provider } = await setup([{ content: 'fresh answer' }]);
    const crashed = await sessions.load('cli:direct');
    crashed.messages.push({ role: 'user', content: 'asked before the crash' });
    crashed.metadata.pending_user_turn = true;
    await sessions.save(crashed);

    await loop.processMessage(input('after restart'));
    const sent = provider.requests[0]?.messages.map((m) => m.role);
    expect(sent).toEqual(['system', 'user', 'assistant', 'user']);
    const session = await sessions.load('cli:direct');
    expect(session.messages[1]?.content).toMatch(/interrupted/);
  });

  it('serialises turns of one session', async () => {
    const order: string[] = [];
    const { loop } = await setup([
      () => {
        order.push('first-model-call');
        return { content: 'one' };
      },
      () => {
        order.push('second-model-call');
        return { content: 'two' };
      },
    ]);
    const [a, b] = await Promise.all([loop.processMessage(input('1')), loop.processMessage(input('2'))]);
    expect([a.content, b.content]).toEqual(['one', 'two']);
    expect(order).toEqual(['first-model-call', 'second-model-call']);
  });

  it('/new starts an empty session and keeps the old conversation on disk', async () => {
    const { loop, sessions, provider } = await setup([{ content: 'a' }, { content: 'b' }]);
    await loop.processMessage(input('old topic'));
    const reply = await loop.processMessage(input('/new'));
    expect(reply.content).toBe('New session started.');
    expect((await sessions.load('cli:direct')).messages).toHaveLength(0);
    const archived = (await sessions.list()).find((s) => s.key.startsWith('cli:direct:archived:'));
    expect(archived?.messageCount).toBe(2);
    await loop.processMessage(input('new topic'));
    expect(provider.requests[1]?.messages.map((m) => m.role)).toEqual(['system', 'user']);
  });

  it('keeps the user message when the provider fails', async () => {
    const { loop, sessions } = await setup([
      { finishReason: 'error', error: { kind: 'network', message: 'down', retryable: true } },
    ]);
    const out = await loop.processMessage(input('please keep me'));
    expect(out.error?.kind).toBe('network');
    const session = await sessions.load('cli:direct');
    expect(session.messages[0]?.content).toMatch(/please keep me/);
    expect(existsSync(sessions.pathFor('cli:direct'))).toBe(true);
  });

  it('appends a tool round as it goes: the call is on disk before its tool runs, each result before the next', async () => {
    const seen: { roles: string[]; checkpoint: unknown }[] = [];
    let sessionsRef: JsonlSessionStore | undefined;
    const probe = defineTool({
      name: 'probe',
      description: 'looks at the stored session while running',
      parameters: z.object({}),
      execute: async () => {
        const stored = await sessionsRef?.load('cli:direct');
        seen.push({
          roles: stored?.messages.map((m) => m.role) ?? [],
          checkpoint: stored?.metadata.runtime_checkpoint,
        });
        return ok('probed');
      },
    });
    const { loop, sessions } = await setup(
      [{ toolCalls: [call('probe'), call('probe')] }, { content: 'done' }],
      [probe],
    );
    sessionsRef = sessions;
    await loop.processMessage(input('go'));
    expect(seen).toEqual([
      { roles: ['user', 'assistant'], checkpoint: undefined },
      { roles: ['user', 'assistant', 'tool'], checkpoint: undefined },
    ]);
    const after = await sessions.load('cli:direct');
    expect(after.metadata.runtime_checkpoint).toBeUndefined();
    expect(after.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'tool', 'assistant']);
  });

  it('restores a turn that crashed mid-round from the transcript: calls without a result answered as interrupted', async () => {
    const { loop, sessions, provider } = await setup([{ content: 'carrying on' }]);
    const crashed = await sessions.load('cli:direct');
    const [a, b, c] = [call('echo', { text: 'a' }), call('echo', { text: 'b' }), call('echo', { text: 'c' })];
    crashed.messages.push(
      { role: 'user', content: 'do three things' },
      { role: 'assistant', content: null, tool_calls: [a, b, c] },
      { role: 'tool', tool_call_id: a.id, name: 'echo', content: 'a' },
    );
    crashed.metadata.pending_user_turn = true;
    await sessions.save(crashed);

    await loop.processMessage(input('what happened?'));
    const session = await sessions.load('cli:direct');
    expect(session.messages.map((m) => m.role)).toEqual([
      'user',
      'assistant',
      'tool',
      'tool',
      'tool',
      'assistant',
      'user',
      'assistant',
    ]);
    expect(session.messages[2]).toMatchObject({ tool_call_id: a.id, content: 'a' });
    expect(session.messages[3]).toMatchObject({ tool_call_id: b.id, content: expect.stringMatching(/interrupted/) });
    expect(session.messages[4]).toMatchObject({ tool_call_id: c.id, content: expect.stringMatching(/interrupted/) });
    expect(session.metadata.pending_user_turn).toBeUndefined();
    const sent = provider.requests[0]?.messages ?? [];
    expect(sent.filter((m) => m.role === 'tool')).toHaveLength(3);
  });

  it("restores upstream nanobot's runtime_checkpoint shape too", async () => {
    const { loop, sessions } = await setup([{ content: 'ok' }]);
    const crashed = await sessions.load('cli:direct');
    const [a, b] = [call('echo', { text: 'a' }), call('echo', { text: 'b' })];
    crashed.messages.push({ role: 'user', content: 'q' });
    crashed.metadata.pending_user_turn = true;
    crashed.metadata.runtime_checkpoint = {
      phase: 'awaiting_tools',
      assistant_message: { role: 'assistant', content: null, tool_calls: [a, b] },
      completed_tool_results: [{ role: 'tool', tool_call_id: a.id, name: 'echo', content: 'a' }],
      pending_tool_calls: [b],
    };
    await sessions.save(crashed);
    await loop.processMessage(input('next'));
    const session = await sessions.load('cli:direct');
    expect(session.messages.slice(0, 4).map((m) => [m.role, m.tool_call_id ?? null, m.content])).toEqual([
      ['user', null, 'q'],
      ['assistant', null, null],
      ['tool', a.id, 'a'],
      ['tool', b.id, expect.stringMatching(/interrupted/)],
    ]);
    expect(session.metadata.runtime_checkpoint).toBeUndefined();
  });

  it('restores a turn that crashed mid-round: finished results kept once, unfinished calls answered as interrupted', async () => {
    const { loop, sessions, provider } = await setup([{ content: 'carrying on' }]);
    const crashed = await sessions.load('cli:direct');
    const a = call('echo', { text: 'a' });
    const b = call('echo', { text: 'b' });
    crashed.messages.push({ role: 'user', content: 'do two things' });
    crashed.metadata.pending_user_turn = true;
    crashed.metadata.runtime_checkpoint = {
      assistant: { role: 'assistant', content: null, tool_calls: [a, b] },
      completed: [{ role: 'tool', tool_call_id: a.id, name: 'echo', content: 'a' }],
      pending: [b],
    };
    await sessions.save(crashed);

    await loop.processMessage(input('what happened?'));
    const session = await sessions.load('cli:direct');
    const roles = session.messages.map((m) => m.role);
    expect(roles).toEqual(['user', 'assistant', 'tool', 'tool', 'assistant', 'user', 'assistant']);
    expect(session.messages[2]).toMatchObject({ tool_call_id: a.id, content: 'a' });
    expect(session.messages[3]).toMatchObject({ tool_call_id: b.id, content: expect.stringMatching(/interrupted/) });
    expect(session.metadata.runtime_checkpoint).toBeUndefined();
    const sent = provider.requests[0]?.messages ?? [];
    expect(sent.filter((m) => m.role === 'tool')).toHaveLength(2);
  });

  it('does not duplicate a round that was saved just before the crash', async () => {
    const { loop, sessions } = await setup([{ content: 'ok' }]);
    const crashed = await sessions.load('cli:direct');
    const a = call('echo', { text: 'a' });
    const assistant = { role: 'assistant' as const, content: null, tool_calls: [a] };
    const result = { role: 'tool' as const, tool_call_id: a.id, name: 'echo', content: 'a' };
    crashed.messages.push({ role: 'user', content: 'q' }, assistant, result);
    crashed.metadata.pending_user_turn = true;
    crashed.metadata.runtime_checkpoint = { assistant, completed: [result], pending: [] };
    await sessions.save(crashed);
    await loop.processMessage(input('next'));
    const session = await sessions.load('cli:direct');
    expect(session.messages.filter((m) => m.role === 'tool')).toHaveLength(1);
    expect(session.messages.filter((m) => m.tool_calls)).toHaveLength(1);
  });

  it('injects a message that arrives during a turn into that turn', async () => {
    let release: () => void = () => {};
    const gate = new Promise<void>((r) => {
      release = r;
    });
    // A gate, not a sleep: the second message is sent once the turn is inside its tool.
    let inTool: () => void = () => {};
    const reachedTool = new Promise<void>((r) => {
      inTool = r;
    });
    const slow = defineTool({
      name: 'slow',
      description: 'waits',
      parameters: z.object({}),
      execute: async () => {
        inTool();
        await gate;
        return ok('slow done');
      },
    });
    const { loop, provider } = await setup([{ toolCalls: [call('slow')] }, { content: 'answered both' }], [slow]);
    const first = loop.processMessage(input('start a long task'));
    await reachedTool;
    const second = loop.processMessage(input('also, use metric units'));
    release();
    const [a, b] = await Promise.all([first, second]);
    expect(a.content).toBe('answered both');
    expect(b).toMatchObject({ content: 'answered both', injected: true });
    expect(provider.requests).toHaveLength(2);
    const last = provider.requests[1]?.messages.at(-1);
    expect(last?.role).toBe('user');
    expect(String(last?.content)).toMatch(/^also, use metric units/);
  });

  it('injects at most 3 queued messages per iteration; the rest go into the next one', async () => {
    let release: () => void = () => {};
    const gate = new Promise<void>((r) => {
      release = r;
    });
    let inTool: () => void = () => {};
    const reachedTool = new Promise<void>((r) => {
      inTool = r;
    });
    const slow = defineTool({
      name: 'slow',
      description: 'waits',
      parameters: z.object({}),
      execute: async () => {
        inTool();
        await gate;
        return ok('slow done');
      },
    });
    const { loop, provider } = await setup(
      [{ toolCalls: [call('slow')] }, { toolCalls: [call('echo', { text: 'more' })] }, { content: 'all five' }],
      [slow],
    );
    const first = loop.processMessage(input('start'));
    await reachedTool;
    const queued = [1, 2, 3, 4, 5].map((n) => loop.processMessage(input(`queued message ${n}`)));
    release();
    await first;
    for (const out of await Promise.all(queued)) expect(out).toMatchObject({ content: 'all five', injected: true });
    const lastUser = (i: number) => String(provider.requests[i]?.messages.at(-1)?.content);
    expect(provider.requests).toHaveLength(3);
    expect(lastUser(1).match(/queued message \d/g)).toEqual([
      'queued message 1',
      'queued message 2',
      'queued message 3',
    ]);
    expect(lastUser(2).match(/queued message \d/g)).toEqual(['queued message 4', 'queued message 5']);
  });

  it('runs a command that arrives during a turn after that turn instead of injecting it', async () => {
    let release: () => void = () => {};
    const gate = new Promise<void>((r) => {
      release = r;
    });
    // A gate, not a sleep: the second message is sent once the turn is inside its tool.
    let inTool: () => void = () => {};
    const reachedTool = new Promise<void>((r) => {
      inTool = r;
    });
    const slow = defineTool({
      name: 'slow',
      description: 'waits',
      parameters: z.object({}),
      execute: async () => {
        inTool();
        await gate;
        return ok('slow done');
      },
    });
    const { loop, sessions, provider } = await setup([{ toolCalls: [call('slow')] }, { content: 'done' }], [slow]);
    const first = loop.processMessage(input('start a long task'));
    await reachedTool;
    const reset = loop.processMessage(input('/NEW@nanobot'));
    release();
    expect((await first).content).toBe('done');
    expect((await reset).content).toBe('New session started.');
    expect(provider.requests).toHaveLength(2);
    expect(JSON.stringify(provider.requests[1]?.messages)).not.toContain('/NEW');
    expect((await sessions.load('cli:direct')).messages).toHaveLength(0);
  });

  it("adds each turn's token usage to the session metadata", async () => {
    const { loop, sessions } = await setup([{ toolCalls: [call('echo', { text: 'x' })] }, { content: 'ok' }]);
    await loop.processMessage(input('go'));
    expect((await sessions.load('cli:direct')).metadata.token_stats).toMatchObject({
      total_prompt_tokens: 20,
      total_completion_tokens: 10,
      total_tokens: 30,
      llm_calls: 2,
    });
  });

  it('runs a message that arrives too late to be injected as the next turn (no deadlock)', async () => {
    let late: Promise<{ content: string }> | undefined;
    const { loop, provider } = await setup([
      () => {
        // Arrives during the final model call: the turn takes no more injections after it.
        late = loop.processMessage(input('one more thing'));
        return { content: 'first answer' };
      },
      { content: 'second answer' },
    ]);
    const first = await loop.processMessage(input('question'));
    expect(first.content).toBe('first answer');
    // A deadlock shows as this await never settling: vitest's test timeout fails it (no race against a clock).
    expect((await late)?.content).toBe('second answer');
    expect(String(provider.requests[1]?.messages.at(-1)?.content)).toMatch(/^one more thing/);
  });

  it('/stop cancels the running turn at once and keeps what it finished', async () => {
    // A gate, not a sleep: /stop is sent once the turn is inside its tool.
    let inTool: () => void = () => undefined;
    const reachedTool = new Promise<void>((resolve) => {
      inTool = resolve;
    });
    const slow = defineTool({
      name: 'slow',
      description: 'waits for cancellation',
      parameters: z.object({}),
      execute: async (_args, ctx) => {
        const aborted = new Promise((resolve) => ctx.signal.addEventListener('abort', resolve, { once: true }));
        inTool();
        await aborted;
        return ok('cancelled part-way');
      },
    });
    const { loop, sessions } = await setup([{ toolCalls: [call('slow')] }, { content: 'never' }], [slow]);
    const running = loop.processMessage(input('long job'));
    await reachedTool;
    const stop = await loop.processMessage(input('/stop'));
    expect(stop.content).toMatch(/Stopped/);
    expect((await running).stopReason).toBe('aborted');
    const session = await sessions.load('cli:direct');
    expect(session.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool']);
    expect(session.metadata.pending_user_turn).toBeUndefined();
    expect((await loop.processMessage(input('/stop'))).content).toMatch(/No active task/);
  });
});
