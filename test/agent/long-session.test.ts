/**
 * A whole turn on a 5,000-message session: the loop consolidates before the request (it would overflow the
 * window), the request then fits, and the oldest content is still findable with search_history.
 */
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ContextBuilder } from '../../src/agent/context.js';
import { AgentLoop } from '../../src/agent/loop.js';
import { AgentRunner } from '../../src/agent/runner.js';
import { Consolidator } from '../../src/memory/consolidator.js';
import { HistoryStore } from '../../src/memory/history.js';
import { estimateTextTokens } from '../../src/memory/tokens.js';
import { JsonlSessionStore } from '../../src/session/jsonl-store.js';
import { newSession, type Session } from '../../src/session/types.js';
import { ToolRegistry } from '../../src/tools/registry.js';
import { createSearchHistoryTool } from '../../src/tools/search-history.js';
import { FakeProvider } from '../helpers/fake-provider.js';

const WINDOW = 60_000;
const MAX_TOKENS = 4_000;

describe('a long session', () => {
  it('consolidates a 5,000-message session so the next request fits, and keeps the oldest text findable', async () => {
    const workspace = await mkdtemp(join(tmpdir(), 'nb-long-'));
    const sessions = new JsonlSessionStore(join(workspace, '..', `${workspace.split('/').pop()}-sessions`));
    await sessions.save(proseSession(1250)); // 5,000 messages of tool-using turns

    const summaryCalls: number[] = [];
    const provider = new FakeProvider(
      Array.from({ length: 12 }, () => (request) => {
        const isSummary = !request.tools?.length;
        if (isSummary) {
          summaryCalls.push(request.messages.length);
          return { content: '[durable] The user asked numbered questions and got numbered answers.' };
        }
        return { content: 'Here is the answer.' };
      }),
    );
    const history = new HistoryStore(workspace);
    const tools = new ToolRegistry();
    tools.register(createSearchHistoryTool({ history, sessions }));
    const runner = new AgentRunner({
      provider,
      model: 'm',
      maxTokens: MAX_TOKENS,
      tools,
      maxIterations: 3,
      contextWindowTokens: WINDOW,
    });
    const consolidator = new Consolidator({
      provider,
      model: 'm',
      history,
      contextWindowTokens: WINDOW,
      maxTokens: MAX_TOKENS,
      persist: (s) => sessions.save(s),
    });
    const context = new ContextBuilder({ workspace, history });
    const loop = new AgentLoop({ sessions, context, runner, consolidator, toolDefinitions: () => tools.definitions() });

    const output = await loop.processMessage({ channel: 'cli', chatId: 'direct', content: 'What now?' });
    expect(output.content).toBe('Here is the answer.');

    // Consolidation ran before the turn's request, with the rounds it needed.
    expect(summaryCalls.length).toBeGreaterThan(0);
    expect(summaryCalls.length).toBeLessThanOrEqual(6);
    const turnRequest = provider.requests.find((r) => r.tools?.length);
    const requestTokens =
      estimateTextTokens(JSON.stringify(turnRequest?.messages)) +
      estimateTextTokens(JSON.stringify(turnRequest?.tools));
    expect(requestTokens).toBeLessThanOrEqual(WINDOW - MAX_TOKENS);
    expect(history.readAll().length).toBeGreaterThan(0);

    // Nothing was deleted: all 5,000 messages are still in the session, and the very first is searchable.
    await consolidator.settled('cli:direct');
    const session = await sessions.load('cli:direct');
    expect(session.messages.length).toBeGreaterThanOrEqual(5_002);
    expect(session.lastConsolidated).toBeGreaterThan(0);
    const found = await tools.execute(
      { id: 's', type: 'function', function: { name: 'search_history', arguments: '{"query":"question 0 "}' } },
      { signal: new AbortController().signal, sessionKey: 'cli:direct' },
    );
    expect(String(found.content)).toContain('question 0 ');
  });
});

/** Text that tokenises like real prose (repeated characters would compress to almost nothing). */
function prose(seed: number, words: number): string {
  const vocabulary = [
    'river',
    'compile',
    'garden',
    'seventy',
    'orbit',
    'lantern',
    'quartz',
    'mellow',
    'harbor',
    'vector',
  ];
  let state = seed * 7919 + 1;
  const out: string[] = [];
  for (let i = 0; i < words; i++) {
    state = (state * 1103515245 + 12345) % 2147483648;
    out.push(`${vocabulary[state % vocabulary.length]}${state % 97}`);
  }
  return out.join(' ');
}

function proseSession(turns: number): Session {
  const session = newSession('cli:direct');
  for (let n = 0; n < turns; n++) {
    const id = `call_${n}`;
    session.messages.push(
      { role: 'user', content: `question ${n} ${prose(n, 30)}` },
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id, type: 'function', function: { name: 'read_file', arguments: '{"path":"a"}' } }],
      },
      { role: 'tool', tool_call_id: id, name: 'read_file', content: prose(n + 1, 60) },
      { role: 'assistant', content: `answer ${n} ${prose(n + 2, 30)}` },
    );
  }
  return session;
}
