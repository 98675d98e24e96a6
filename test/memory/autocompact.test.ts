import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ContextBuilder } from '../../src/agent/context.js';
import { AutoCompact, replayableTailStart } from '../../src/memory/autocompact.js';
import { Consolidator } from '../../src/memory/consolidator.js';
import { HistoryStore } from '../../src/memory/history.js';
import { JsonlSessionStore } from '../../src/session/jsonl-store.js';
import { newSession } from '../../src/session/types.js';
import { eventually } from '../helpers/eventually.js';
import { FakeProvider } from '../helpers/fake-provider.js';
import { GatedProvider, sessionWithTurns, turn } from './session-fixtures.js';

const MINUTE = 60_000;

async function setup(active: Set<string> = new Set()) {
  const dir = await mkdtemp(join(tmpdir(), 'nb-autocompact-'));
  const provider = new FakeProvider([{ content: '[durable] the user is planning a trip to Lisbon' }]);
  const history = new HistoryStore(dir);
  const sessions = new JsonlSessionStore(join(dir, 'sessions'));
  const consolidator = new Consolidator({
    provider,
    model: 'm',
    history,
    contextWindowTokens: 200_000,
    maxTokens: 8_192,
  });
  const autoCompact = new AutoCompact({
    consolidator,
    sessions,
    idleCompactAfterMinutes: 15,
    isActive: (key) => active.has(key),
  });
  return { dir, provider, history, sessions, consolidator, autoCompact };
}

describe('AutoCompact', () => {
  it('archives an idle session except a replayable tail, and the next prompt shows the summary', async () => {
    const { dir, provider, history, sessions, autoCompact } = await setup();
    await sessions.save(sessionWithTurns(5)); // 20 messages
    const later = new Date(Date.now() + 16 * MINUTE);
    const results = await autoCompact.tick(later);

    expect(results).toEqual([{ key: 'cli:direct', archivedMessages: 12, llmCalls: 1 }]);
    const session = await sessions.load('cli:direct');
    expect(session.messages).toHaveLength(20); // lossless: only the cursor moved
    expect(session.lastConsolidated).toBe(12);
    expect(session.messages[12]?.role).toBe('user');
    expect(history.readAll()[0]?.content).toContain('Lisbon');
    expect(String(provider.requests[0]?.messages[1]?.content)).toContain('question 0');

    const prompt = new ContextBuilder({ workspace: dir }).buildSystemPrompt({ session });
    expect(prompt).toContain('[Archived Context Summary]');
    expect(prompt.indexOf('[Archived Context Summary]')).toBeGreaterThan(prompt.indexOf('# Recent History'));

    // Nothing new since: the next tick neither loads an LLM nor rewrites anything.
    expect(await autoCompact.tick(new Date(later.getTime() + 30 * MINUTE))).toEqual([]);
    expect(provider.requests).toHaveLength(1);
  });

  it('skips sessions with an active turn (nanobot test 27)', async () => {
    const active = new Set(['cli:direct']);
    const { provider, sessions, autoCompact } = await setup(active);
    await sessions.save(sessionWithTurns(5));
    expect(await autoCompact.tick(new Date(Date.now() + 60 * MINUTE))).toEqual([]);
    expect(provider.requests).toHaveLength(0);
    expect((await sessions.load('cli:direct')).lastConsolidated).toBe(0);
  });

  it('skips sessions that are not idle long enough, and archived copies', async () => {
    const { provider, sessions, autoCompact } = await setup();
    await sessions.save(sessionWithTurns(5));
    await sessions.save(sessionWithTurns(5, 'cli:direct:archived:2026-01-01'));
    expect(await autoCompact.tick(new Date(Date.now() + 10 * MINUTE))).toEqual([]);
    const results = await autoCompact.tick(new Date(Date.now() + 20 * MINUTE));
    expect(results.map((r) => r.key)).toEqual(['cli:direct']);
    expect(provider.requests).toHaveLength(1);
  });

  it('a turn starting during compaction waits for it (settled)', async () => {
    const { dir, sessions } = await setup();
    const provider = new GatedProvider(() => ({ content: '[durable] gated summary' }));
    const consolidator = new Consolidator({
      provider,
      model: 'm',
      history: new HistoryStore(dir),
      contextWindowTokens: 200_000,
      maxTokens: 8_192,
    });
    const autoCompact = new AutoCompact({ consolidator, sessions, idleCompactAfterMinutes: 15, isActive: () => false });
    await sessions.save(sessionWithTurns(5));
    const ticking = autoCompact.tick(new Date(Date.now() + 20 * MINUTE));
    await eventually(() => provider.waiting > 0);
    let loaded: number | undefined;
    const turnStart = consolidator.settled('cli:direct').then(async () => {
      loaded = (await sessions.load('cli:direct')).lastConsolidated;
    });
    provider.release();
    await turnStart;
    // Read after settled(): 12 only if settled() waited for the gated consolidation (0 had it resolved early).
    expect(loaded).toBe(12);
    await ticking;
  });

  it('keeps a tail that starts at a user message and never orphans tool results', () => {
    const session = newSession('k');
    session.messages.push(...turn(0), ...turn(1), ...turn(2)); // 12 messages, users at 0, 4, 8
    expect(replayableTailStart(session, 8)).toBe(4);
    expect(replayableTailStart(session, 6)).toBe(8);
    session.messages.push(...turn(3).slice(1), ...turn(4).slice(1)); // a long run without a user message
    expect(replayableTailStart(session, 3)).toBe(8);
    session.lastConsolidated = 8;
    expect(replayableTailStart(session, 3)).toBe(8);
  });

  it('start/stop run tick on an unref timer', async () => {
    const { autoCompact } = await setup();
    autoCompact.start();
    await autoCompact.stop();
  });
});
