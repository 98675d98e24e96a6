/** A provider's context-overflow error: the loop archives older history and retries the turn once. */
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ContextBuilder } from '../../src/agent/context.js';
import { AgentLoop } from '../../src/agent/loop.js';
import { AgentRunner } from '../../src/agent/runner.js';
import { Consolidator } from '../../src/memory/consolidator.js';
import { HistoryStore } from '../../src/memory/history.js';
import type { ChatRequest, LLMResponse } from '../../src/providers/types.js';
import { JsonlSessionStore } from '../../src/session/jsonl-store.js';
import { newSession } from '../../src/session/types.js';
import { ToolRegistry } from '../../src/tools/registry.js';
import { FakeProvider } from '../helpers/fake-provider.js';

const overflow: Partial<LLMResponse> = {
  finishReason: 'error',
  error: { kind: 'context_overflow', message: 'maximum context length is 8192 tokens', retryable: false },
};

async function setup(script: ((r: ChatRequest) => Partial<LLMResponse>)[], turns: number) {
  const workspace = await mkdtemp(join(tmpdir(), 'nb-overflow-'));
  const sessions = new JsonlSessionStore(`${workspace}-sessions`);
  const session = newSession('cli:direct');
  for (let i = 0; i < turns; i++) {
    session.messages.push({ role: 'user', content: `question ${i}` }, { role: 'assistant', content: `answer ${i}` });
  }
  await sessions.save(session);
  const provider = new FakeProvider(script);
  const history = new HistoryStore(workspace);
  const runner = new AgentRunner({
    provider,
    model: 'm',
    maxTokens: 1000,
    tools: new ToolRegistry(),
    maxIterations: 3,
  });
  const consolidator = new Consolidator({
    provider,
    model: 'm',
    history,
    contextWindowTokens: 200_000,
    maxTokens: 1000,
    persist: (s) => sessions.save(s),
  });
  const loop = new AgentLoop({ sessions, context: new ContextBuilder({ workspace, history }), runner, consolidator });
  return { loop, provider, sessions, history };
}

const isSummary = (r: ChatRequest) => !r.messages.some((m) => String(m.content).includes('[Runtime Context - '));

describe('context overflow reported by the provider', () => {
  it('archives the older half of the history and answers on the retry', async () => {
    const { loop, provider, sessions, history } = await setup(
      Array.from({ length: 6 }, (_, i) => (request: ChatRequest) => {
        if (isSummary(request)) return { content: 'The user asked numbered questions.' };
        return i === 0 ? overflow : { content: 'Answer after compaction.' };
      }),
      10,
    );
    const output = await loop.processMessage({ channel: 'cli', chatId: 'direct', content: 'And now?' });
    expect(output.content).toBe('Answer after compaction.');
    expect(output.error).toBeUndefined();

    const turns = provider.requests.filter((r) => !isSummary(r));
    expect(turns).toHaveLength(2);
    const users = (r: ChatRequest) => r.messages.filter((m) => m.role === 'user').length;
    expect(users(turns[1]!)).toBeLessThan(users(turns[0]!));
    expect(JSON.stringify(turns[1]?.messages.at(-1))).toContain('And now?');

    const session = await sessions.load('cli:direct');
    expect(session.lastConsolidated).toBeGreaterThan(0);
    expect(session.messages).toHaveLength(22); // nothing deleted: 20 old + the question + the answer
    expect(history.readAll().length).toBeGreaterThan(0);
  });

  it('gives up after one retry, and when there is no older history to archive', async () => {
    const twice = await setup(
      Array.from(
        { length: 6 },
        () => (request: ChatRequest) => (isSummary(request) ? { content: 'Summary.' } : overflow),
      ),
      6,
    );
    const output = await twice.loop.processMessage({ channel: 'cli', chatId: 'direct', content: 'Still too big?' });
    expect(output.error?.kind).toBe('context_overflow');
    expect(twice.provider.requests.filter((r) => !isSummary(r))).toHaveLength(2);

    const fresh = await setup([() => overflow], 0);
    const alone = await fresh.loop.processMessage({ channel: 'cli', chatId: 'direct', content: 'Huge message' });
    expect(alone.error?.kind).toBe('context_overflow');
    expect(fresh.provider.requests).toHaveLength(1);
  });
});
