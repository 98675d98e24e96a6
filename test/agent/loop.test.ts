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

async function setup(script: Scripted[]) {
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
      /^two\n\n\[Runtime Context\]\nCurrent time: .+\nChannel: cli\nChat ID: direct$/,
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
});
