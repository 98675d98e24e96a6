import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Consolidator } from '../../src/memory/consolidator.js';
import { HistoryStore } from '../../src/memory/history.js';
import { TokenCounter } from '../../src/memory/tokens.js';
import { BoundedRegex } from '../../src/security/bounded-regex.js';
import { JsonlSessionStore } from '../../src/session/jsonl-store.js';
import { newSession } from '../../src/session/types.js';
import { compileQuery, createSearchHistoryTool, quoteMatch } from '../../src/tools/search-history.js';
import type { ToolContext } from '../../src/tools/types.js';
import { FakeProvider } from '../helpers/fake-provider.js';
import { sessionWithTurns } from '../memory/session-fixtures.js';

async function setup() {
  const dir = await mkdtemp(join(tmpdir(), 'nb-search-history-'));
  const history = new HistoryStore(dir);
  const sessions = new JsonlSessionStore(join(dir, 'sessions'));
  const tool = createSearchHistoryTool({ history, sessions });
  return { dir, history, sessions, tool };
}

const ctx = (sessionKey?: string): ToolContext => ({
  signal: new AbortController().signal,
  ...(sessionKey ? { sessionKey } : {}),
});

const text = (result: { content: unknown }) => String(result.content);

describe('search_history', () => {
  it('finds a message that was consolidated out of context long ago', async () => {
    const { history, sessions, tool } = await setup();
    const session = sessionWithTurns(1_250); // 5,000 messages
    const first = session.messages[0];
    if (first) first.content = 'My locker code is 4417, please remember it.\n\n[Runtime Context]\nChannel: cli';
    const consolidator = new Consolidator({
      provider: new FakeProvider(Array.from({ length: 5 }, () => ({ content: '[ephemeral] busy day' }))),
      model: 'm',
      history,
      contextWindowTokens: 200_000,
      maxTokens: 8_192,
      tokens: new TokenCounter({ preciseAbove: Number.POSITIVE_INFINITY }),
    });
    await consolidator.maybeConsolidate(session, { mode: 'blocking' });
    expect(session.lastConsolidated).toBeGreaterThan(3_000);
    await sessions.save(session);

    const result = await tool.execute({ query: 'LOCKER CODE' }, ctx('cli:direct'));
    expect(result.isError).toBeUndefined();
    expect(text(result)).toContain('1 match for');
    expect(text(result)).toContain('[session message #0 · user · 2026-01-01 00:00 · archived]');
    expect(text(result)).toContain('My locker code is 4417, please remember it.');
    expect(text(result)).not.toContain('Runtime Context');
  });

  it('searches history.jsonl with a regex, newest first, with paging', async () => {
    const { history, tool } = await setup();
    await history.append('[durable] flight to Lisbon on May 3', 'telegram:1');
    await history.append('[ephemeral] lunch');
    await history.append('[durable] hotel in LISBON booked', 'telegram:1');
    const result = await tool.execute({ query: '/lisbon|porto/', scope: 'history', limit: 1 }, ctx());
    expect(text(result)).toContain('2 matches');
    expect(text(result)).toMatch(
      /\[history cursor 3 · \d{4}-\d\d-\d\d \d\d:\d\d · session telegram:1\]\n\[durable\] hotel/,
    );
    expect(text(result)).toContain('offset=1');
    const next = await tool.execute({ query: '/lisbon|porto/', scope: 'history', limit: 1, offset: 1 }, ctx());
    expect(text(next)).toContain('flight to Lisbon');
  });

  it('scope all covers both the session and history; scope session needs a session', async () => {
    const { history, sessions, tool } = await setup();
    const session = newSession('cli:direct');
    session.messages.push({ role: 'tool', tool_call_id: 'c', name: 'exec', content: 'deploy finished: v2.3.1' });
    await sessions.save(session);
    await history.append('[durable] deployed v2.3.1 to production');
    const all = await tool.execute({ query: 'v2.3.1' }, ctx('cli:direct'));
    expect(text(all)).toContain('2 matches');
    expect(text(all)).toContain('session message #0 · tool');
    const noSession = await tool.execute({ query: 'v2.3.1', scope: 'session' }, ctx());
    expect(noSession.isError).toBe(true);
    expect(text(await tool.execute({ query: 'nowhere to be found' }, ctx('cli:direct')))).toContain('No matches');
  });

  it('reports an invalid regex and quotes long texts around the match', async () => {
    const { tool } = await setup();
    const bad = await tool.execute({ query: '/(unclosed/' }, ctx());
    expect(bad.isError).toBe(true);
    const long = `${'a'.repeat(1000)} needle ${'b'.repeat(1000)} needle`;
    const quote = quoteMatch(long, compileQuery('NEEDLE') as BoundedRegex) ?? '';
    expect(quote.startsWith('…')).toBe(true);
    expect(quote).toContain('needle');
    expect(quote).toContain('(+1 more match in this text)');
    expect(quote.length).toBeLessThan(500);
    expect(compileQuery('a.b')).toBeInstanceOf(BoundedRegex);
    expect((compileQuery('a.b') as BoundedRegex).test('axb')).toBe(false);
  });

  it('is marked safe to run in parallel', async () => {
    const { tool } = await setup();
    expect(tool.concurrencySafe).toBe(true);
  });
});
