/** The agent loop's saves (user message, tool-round checkpoint, final answer) append instead of rewriting. */
import { existsSync, statSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ContextBuilder } from '../../src/agent/context.js';
import { AgentLoop } from '../../src/agent/loop.js';
import { AgentRunner } from '../../src/agent/runner.js';
import { JsonlSessionStore } from '../../src/session/jsonl-store.js';
import type { Session } from '../../src/session/types.js';
import { ToolRegistry } from '../../src/tools/registry.js';
import { defineTool, ok } from '../../src/tools/types.js';
import { call, FakeProvider } from '../helpers/fake-provider.js';

/** Records, per save, whether the file was appended to (same inode) or replaced. */
class WatchedStore extends JsonlSessionStore {
  readonly writes: ('append' | 'rewrite' | 'create')[] = [];

  override async save(session: Session): Promise<void> {
    const path = this.pathFor(session.key);
    const before = existsSync(path) ? statSync(path).ino : undefined;
    await super.save(session);
    const after = statSync(path).ino;
    this.writes.push(before === undefined ? 'create' : before === after ? 'append' : 'rewrite');
  }
}

describe('AgentLoop on the appending store', () => {
  it('appends every save of a turn with a tool round', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'nb-loop-append-'));
    const sessions = new WatchedStore(join(dir, 'sessions'));
    const tools = new ToolRegistry();
    tools.register(
      defineTool({
        name: 'echo',
        description: 'Echo',
        parameters: z.object({ text: z.string() }),
        execute: async ({ text }) => ok(text),
      }),
    );
    const provider = new FakeProvider([
      { content: 'first' },
      { toolCalls: [call('echo', { text: 'a' })] },
      { toolCalls: [call('echo', { text: 'b' })] },
      { content: 'second' },
    ]);
    const runner = new AgentRunner({ provider, model: 'm', maxTokens: 100, tools, maxIterations: 5 });
    const loop = new AgentLoop({ sessions, context: new ContextBuilder({ workspace: dir }), runner });
    const input = (content: string) => ({ channel: 'cli', chatId: 'direct', content });

    await loop.processMessage(input('one'));
    expect(sessions.writes[0]).toBe('create');
    sessions.writes.length = 0;

    await loop.processMessage(input('two'));
    // At least: user message, two tool rounds, final answer (runtime checkpoints may add more).
    expect(sessions.writes.length).toBeGreaterThanOrEqual(4);
    expect(sessions.writes.every((write) => write === 'append')).toBe(true);
    const stored = await new JsonlSessionStore(sessions.dir).load('cli:direct');
    expect(stored.messages.map((m) => m.role)).toEqual([
      'user',
      'assistant',
      'user',
      'assistant',
      'tool',
      'assistant',
      'tool',
      'assistant',
    ]);
    expect(stored.metadata.pending_user_turn).toBeUndefined();
  });
});
