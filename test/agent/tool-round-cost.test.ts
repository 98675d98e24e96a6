/**
 * Issue 16 item 5: a response with many tool calls must cost work linear in the number of calls. Counts the session
 * store's writes and the bytes they put in the session folder (an append adds its lines, an atomic rewrite the whole
 * file) — never time.
 */
import { statSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ContextBuilder } from '../../src/agent/context.js';
import { AgentLoop } from '../../src/agent/loop.js';
import { AgentRunner } from '../../src/agent/runner.js';
import { JsonlSessionStore } from '../../src/session/jsonl-store.js';
import type { Session, SessionStore, SessionSummary } from '../../src/session/types.js';
import { ToolRegistry } from '../../src/tools/registry.js';
import { defineTool, ok } from '../../src/tools/types.js';
import { call, FakeProvider } from '../helpers/fake-provider.js';

/** The JSONL store, counting what each save or rewrite wrote to its file. */
class CountingStore implements SessionStore {
  writes = 0;
  bytes = 0;
  constructor(readonly inner: JsonlSessionStore) {}
  load(key: string): Promise<Session> {
    return this.inner.load(key);
  }
  save(session: Session): Promise<void> {
    return this.counted(session, () => this.inner.save(session));
  }
  rewrite(session: Session): Promise<void> {
    return this.counted(session, () => this.inner.rewrite(session));
  }
  list(): Promise<SessionSummary[]> {
    return this.inner.list();
  }
  delete(key: string): Promise<void> {
    return this.inner.delete(key);
  }
  fileBytes(key: string): number {
    return statSync(this.inner.pathFor(key)).size;
  }
  private async counted(session: Session, write: () => Promise<void>): Promise<void> {
    const path = this.inner.pathFor(session.key);
    const before = stat(path);
    await write();
    const after = stat(path);
    if (!after || (before && after.ino === before.ino && after.size === before.size)) return;
    this.writes++;
    this.bytes += before && after.ino === before.ino ? after.size - before.size : after.size;
  }
}

function stat(path: string): { ino: number; size: number } | undefined {
  try {
    const s = statSync(path);
    return { ino: s.ino, size: s.size };
  } catch {
    return undefined;
  }
}

/** One turn whose first response makes `calls` calls of `tool` (each with its own result text), then answers. */
async function floodTurn(calls: number, concurrencySafe: boolean) {
  const dir = await mkdtemp(join(tmpdir(), 'nb-flood-'));
  const sessions = new CountingStore(new JsonlSessionStore(join(dir, 'sessions')));
  const tools = new ToolRegistry();
  tools.register(
    defineTool({
      name: 'note',
      description: 'returns a short note',
      parameters: z.object({ n: z.int() }),
      concurrencySafe,
      execute: async ({ n }) => ok(`note ${n}: ${'x'.repeat(200)}`),
    }),
  );
  const provider = new FakeProvider([
    { toolCalls: Array.from({ length: calls }, (_, n) => call('note', { n })) },
    { content: 'all noted' },
  ]);
  const runner = new AgentRunner({
    provider,
    model: 'm',
    maxTokens: 100,
    tools,
    maxIterations: 5,
    maxCallsPerResponse: calls,
  });
  const loop = new AgentLoop({ sessions, context: new ContextBuilder({ workspace: dir }), runner });
  const out = await loop.processMessage({ channel: 'cli', chatId: 'direct', content: 'note everything' });
  const stored = await sessions.load('cli:direct');
  return {
    out,
    writes: sessions.writes,
    bytes: sessions.bytes,
    fileBytes: sessions.fileBytes('cli:direct'),
    results: stored.messages.filter((m) => m.role === 'tool').length,
  };
}

describe.each([
  { how: 'one after another', concurrencySafe: false },
  { how: 'in parallel', concurrencySafe: true },
])('a response with many tool calls run $how', ({ concurrencySafe }) => {
  it('writes each result to the session folder once: writes and bytes grow linearly with the calls', async () => {
    const small = await floodTurn(100, concurrencySafe);
    const big = await floodTurn(400, concurrencySafe);
    for (const [calls, run] of [
      [100, small],
      [400, big],
    ] as const) {
      expect(run.out.content).toBe('all noted');
      expect(run.results).toBe(calls);
      // One save per result at most, plus the user message, the call and the answer.
      expect(run.writes).toBeLessThanOrEqual(calls + 5);
      // Everything in the file was written about once (quadratic checkpoints wrote the round once per result).
      expect(run.bytes).toBeLessThan(run.fileBytes * 1.5);
    }
    // 4× the calls: about 4× the bytes (a whole-round checkpoint per result would make it about 16×).
    expect(big.bytes / small.bytes).toBeLessThan(5);
  });
});
