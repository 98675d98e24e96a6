import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Consolidator, type ConsolidatorOptions } from '../../src/memory/consolidator.js';
import { HistoryStore } from '../../src/memory/history.js';
import { readArchivedSummary } from '../../src/memory/prompts.js';
import { TokenCounter } from '../../src/memory/tokens.js';
import type { LLMProvider } from '../../src/providers/types.js';
import { JsonlSessionStore } from '../../src/session/jsonl-store.js';
import { newSession, type Session } from '../../src/session/types.js';
import { eventually } from '../helpers/eventually.js';
import { FakeProvider } from '../helpers/fake-provider.js';
import { GatedProvider, sessionWithTurns, tick, turn } from './session-fixtures.js';

/** Deterministic sizes: the cheap estimate only, so every turn costs exactly the same. */
const cheapTokens = () => new TokenCounter({ preciseAbove: Number.POSITIVE_INFINITY });
const TURN_TOKENS = cheapTokens().cheapMessages(turn(0));

async function setup(provider: LLMProvider, overrides: Partial<ConsolidatorOptions> = {}) {
  const dir = await mkdtemp(join(tmpdir(), 'nb-consolidate-'));
  const history = new HistoryStore(dir);
  const sessions = new JsonlSessionStore(join(dir, 'sessions'));
  const consolidator = new Consolidator({
    provider,
    model: 'm',
    history,
    contextWindowTokens: 10_000,
    maxTokens: 1_000,
    tokens: cheapTokens(),
    persist: (session) => sessions.save(session),
    ...overrides,
  });
  return { consolidator, history, sessions };
}

const summaries = (n: number) => Array.from({ length: n }, (_, i) => ({ content: `[durable] summary ${i + 1}` }));

describe('Consolidator', () => {
  it('does nothing under budget', async () => {
    const provider = new FakeProvider([]);
    const { consolidator } = await setup(provider);
    const session = sessionWithTurns(3);
    const report = await consolidator.maybeConsolidate(session, { mode: 'background' });
    expect(report.skipped).toBe('under-budget');
    expect(provider.requests).toHaveLength(0);
    expect(session.lastConsolidated).toBe(0);
  });

  it('summarises the oldest turns at a user boundary until under budget × ratio, keeping every message', async () => {
    const provider = new FakeProvider(summaries(5));
    const { consolidator, history, sessions } = await setup(provider);
    const session = sessionWithTurns(40); // ~13k tokens against a 7,976 budget
    await sessions.save(session);
    const report = await consolidator.maybeConsolidate(session, { mode: 'background', systemPromptTokens: 500 });

    expect(consolidator.budget).toBe(7_976);
    expect(report.tokensBefore).toBe(40 * TURN_TOKENS + 500);
    expect(report.tokensAfter).toBeLessThanOrEqual(7_976 * 0.5);
    expect(report.rounds).toBe(report.llmCalls);
    expect(report.llmCalls).toBe(2); // the first chunk is capped at one budget
    expect(session.messages[session.lastConsolidated]?.role).toBe('user');
    expect(session.lastConsolidated % 4).toBe(0);
    expect(session.messages).toHaveLength(160);

    const entries = history.readAll();
    expect(entries.map((e) => e.content)).toEqual(['[durable] summary 1', '[durable] summary 2']);
    expect(entries.every((e) => e.session_key === 'cli:direct')).toBe(true);
    expect(readArchivedSummary(session.metadata)?.text).toBe('[durable] summary 2');

    const request = provider.requests[0];
    expect(request?.tools).toBeUndefined();
    expect(request?.messages[0]?.content).toContain('[permanent]');
    expect(String(request?.messages[1]?.content)).toContain('USER: question 0');
    expect(String(provider.requests[1]?.messages[1]?.content)).toContain('summary 1'); // previous notes given

    const stored = await sessions.load('cli:direct');
    expect(stored.messages).toHaveLength(160);
    expect(stored.lastConsolidated).toBe(session.lastConsolidated);
  });

  it('writes a [RAW] entry and still advances the cursor when the LLM fails (nanobot test 26)', async () => {
    const provider = new FakeProvider([
      { finishReason: 'error', error: { kind: 'server', message: 'boom', retryable: true } },
      { content: '' },
    ]);
    const { consolidator, history } = await setup(provider, { maxRounds: 2 });
    const session = sessionWithTurns(40);
    const report = await consolidator.maybeConsolidate(session, { mode: 'background' });
    expect(report.llmCalls).toBe(2);
    expect(report.rawArchives).toBe(2);
    expect(session.lastConsolidated).toBeGreaterThan(0);
    expect(session.messages[session.lastConsolidated]?.role).toBe('user');
    const [first] = history.readAll();
    expect(first?.content.startsWith('[RAW] ')).toBe(true);
    expect(first?.content).toContain('question 0');
    expect(first?.content.length).toBeLessThanOrEqual(16_000);
    expect(readArchivedSummary(session.metadata)).toBeUndefined();
    expect(session.messages).toHaveLength(160);
  });

  it('advances without an entry when the summariser finds nothing worth keeping', async () => {
    const provider = new FakeProvider([{ content: '(nothing)' }, { content: '<think>hmm</think>(nothing)' }]);
    const { consolidator, history } = await setup(provider);
    const session = sessionWithTurns(40);
    await consolidator.maybeConsolidate(session, { mode: 'background' });
    expect(session.lastConsolidated).toBeGreaterThan(0);
    expect(history.readAll()).toHaveLength(0);
  });

  it('never consolidates the last turn, even when it alone is over budget', async () => {
    const provider = new FakeProvider(summaries(5));
    const { consolidator } = await setup(provider);
    const session = sessionWithTurns(1, 'cli:direct', 40_000);
    const report = await consolidator.maybeConsolidate(session, { mode: 'blocking' });
    expect(report.skipped).toBe('no-boundary');
    expect(session.lastConsolidated).toBe(0);
    expect(provider.requests).toHaveLength(0);
  });

  it('stops after maxRounds LLM calls in the background; a blocking run archives the rest raw', async () => {
    const background = await setup(new FakeProvider(summaries(10)));
    const big = sessionWithTurns(200); // ~8 budgets
    const report = await background.consolidator.maybeConsolidate(big, { mode: 'background' });
    expect(report.llmCalls).toBe(5);
    expect(report.tokensAfter).toBeGreaterThan(7_976);

    const blocking = await setup(new FakeProvider(summaries(10)));
    const again = sessionWithTurns(200);
    const forced = await blocking.consolidator.maybeConsolidate(again, { mode: 'blocking' });
    expect(forced.llmCalls).toBe(5);
    expect(forced.rawArchives).toBe(1);
    expect(forced.tokensAfter).toBeLessThanOrEqual(7_976 * 0.5);
    expect(await blocking.consolidator.needsBlocking(again, 0)).toBe(false);
  });

  it('gets a 5,000-message session under budget with the expected number of LLM calls', async () => {
    const provider = new FakeProvider(summaries(10));
    const window = 200_000;
    const { consolidator, history } = await setup(provider, { contextWindowTokens: window, maxTokens: 8_192 });
    const session = sessionWithTurns(1_250);
    expect(session.messages).toHaveLength(5_000);
    const budget = consolidator.budget;
    const total = 1_250 * TURN_TOKENS;
    const turnsToDrop = Math.ceil((total - Math.floor(budget * 0.5)) / TURN_TOKENS);
    const expectedCalls = Math.ceil(turnsToDrop / Math.floor(budget / TURN_TOKENS));
    expect(expectedCalls).toBeGreaterThan(1);

    // Speed is bench/'s business; the call count below is what keeps the work linear.
    const report = await consolidator.maybeConsolidate(session, { mode: 'blocking' });
    expect(report.llmCalls).toBe(expectedCalls);
    expect(report.rawArchives).toBe(0);
    expect(report.tokensAfter).toBeLessThanOrEqual(budget * 0.5);
    expect(history.readAll()).toHaveLength(expectedCalls);
    // Each summarisation request itself fits the window.
    const counter = cheapTokens();
    for (const request of provider.requests) expect(counter.cheapMessages(request.messages)).toBeLessThan(window);
    expect(session.messages).toHaveLength(5_000);
  });

  it('never runs a background and a blocking consolidation of one session at the same time', async () => {
    const provider = new GatedProvider((n) => ({ content: `[durable] gated ${n}` }));
    const { consolidator } = await setup(provider);
    const session: Session = sessionWithTurns(40);
    const background = consolidator.maybeConsolidate(session, { mode: 'background' });
    await eventually(() => expect(provider.waiting).toBe(1));
    expect((await consolidator.maybeConsolidate(session, { mode: 'background' })).skipped).toBe('already-running');
    const blocking = consolidator.maybeConsolidate(session, { mode: 'blocking' });
    let settled = false;
    void consolidator.settled(session.key).then(() => {
      settled = true;
    });
    while ((await Promise.race([background.then(() => 'done'), tick().then(() => 'wait')])) === 'wait') {
      provider.release();
    }
    const blockingReport = await blocking;
    expect(provider.maxInFlight).toBe(1);
    expect(blockingReport.skipped).toBe('under-budget'); // the background run already did the work
    await consolidator.settled(session.key);
    expect(settled).toBe(true);
  });

  it('needsBlocking is true only when the request would overflow the whole window', async () => {
    const { consolidator } = await setup(new FakeProvider([]));
    const session = sessionWithTurns(20); // ~6.7k tokens
    expect(await consolidator.needsBlocking(session, 0)).toBe(false);
    expect(await consolidator.needsBlocking(session, 3_000)).toBe(true);
  });

  it('uses the real tokenizer only near the budget', async () => {
    const { consolidator } = await setup(new FakeProvider([]), { tokens: new TokenCounter() });
    const prose = (n: number) => `Message ${n}: the quick brown fox jumps over the lazy dog. `.repeat(20);
    const session = newSession('cli:direct');
    for (let n = 0; n < 40; n++) session.messages.push({ role: n % 2 ? 'assistant' : 'user', content: prose(n) });
    const cheap = cheapTokens().cheapMessages(session.messages);
    expect(cheap).toBeGreaterThan(consolidator.budget * 0.6);
    const precise = await consolidator.visibleTokens(session);
    expect(precise).toBeLessThan(cheap);
    expect(precise).toBeGreaterThan(cheap / 2);

    const small = newSession('small');
    small.messages.push(...session.messages.slice(0, 4));
    expect(await consolidator.visibleTokens(small)).toBe(cheapTokens().cheapMessages(small.messages));
  });
});
