import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { goalCommand, parseGoalArgs } from '../../src/agent/commands/goal.js';
import { ContextBuilder } from '../../src/agent/context.js';
import { type GoalState, Goals, readGoal } from '../../src/agent/goals.js';
import { AgentLoop } from '../../src/agent/loop.js';
import { AgentRunner } from '../../src/agent/runner.js';
import type { ChatRequest } from '../../src/providers/types.js';
import { JsonlSessionStore } from '../../src/session/jsonl-store.js';
import { createGoalTools } from '../../src/tools/goal.js';
import { ToolRegistry } from '../../src/tools/registry.js';
import { defineTool, ok } from '../../src/tools/types.js';
import { call, FakeProvider, type Scripted } from '../helpers/fake-provider.js';

const KEY = 'cli:direct';
const input = (content: string) => ({ channel: 'cli', chatId: 'direct', content });

/** A tool that blocks until released (or aborted), to hold a goal round open. */
function gate() {
  let release!: () => void;
  let started!: () => void;
  const running = new Promise<void>((resolve) => {
    started = resolve;
  });
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  const tool = defineTool({
    name: 'slow_step',
    description: 'Does a slow step',
    parameters: z.object({}),
    async execute(_args, ctx) {
      started();
      await Promise.race([released, new Promise((resolve) => ctx.signal.addEventListener('abort', resolve))]);
      return ok('step done');
    },
  });
  return { tool, running, release };
}

async function setup(script: Scripted[], options: { maxRounds?: number; maxTokens?: number; dir?: string } = {}) {
  const dir = options.dir ?? (await mkdtemp(join(tmpdir(), 'nb-goals-')));
  const sessions = new JsonlSessionStore(join(dir, 'sessions'));
  const provider = new FakeProvider(script);
  const goals = new Goals({
    sessions,
    limits: () => ({ maxRounds: options.maxRounds ?? 5, maxTokens: options.maxTokens ?? 1_000_000 }),
  });
  const tools = new ToolRegistry();
  for (const tool of createGoalTools(goals)) tools.register(tool);
  const slow = gate();
  tools.register(slow.tool);
  const runner = new AgentRunner({ provider, model: 'm', maxTokens: 100, tools, maxIterations: 5 });
  const loop = new AgentLoop({
    sessions,
    context: new ContextBuilder({ workspace: dir }),
    runner,
    goals,
    work: [goals],
    sessionCommands: [goalCommand(goals)],
  });
  const goal = async (): Promise<GoalState | undefined> => readGoal((await sessions.load(KEY)).metadata);
  return { dir, loop, provider, sessions, goal, slow };
}

const lastUserText = (request: ChatRequest | undefined) => String(request?.messages.at(-1)?.content ?? '');

describe('sustained goals', () => {
  it('keeps the turn going round after round until update_goal complete', async () => {
    const { loop, provider, sessions, goal } = await setup([
      { toolCalls: [call('create_goal', { objective: 'Write three haiku to haiku.md', ui_summary: 'three haiku' })] },
      { content: 'Wrote the first haiku.' },
      { content: 'Wrote the second haiku.' },
      { toolCalls: [call('update_goal', { action: 'complete', recap: 'Three haiku are in haiku.md.' })] },
      { content: 'All three haiku are written.' },
      { content: 'this reply must never be requested' },
    ]);

    const output = await loop.processMessage(input('/goal write three haiku'));

    expect(output.content).toBe('Wrote the first haiku.\n\nWrote the second haiku.\n\nAll three haiku are written.');
    expect(provider.requests).toHaveLength(5);
    expect(lastUserText(provider.requests[0])).toMatch(/^\[Goal request\].*\n\nwrite three haiku\n/s);
    expect(lastUserText(provider.requests[2])).toMatch(/^\[Goal continuation — round 2 of 5\]\nObjective: Write three/);
    expect(lastUserText(provider.requests[3])).toMatch(/^\[Goal continuation — round 3 of 5\]/);
    expect(await goal()).toMatchObject({
      status: 'completed',
      objective: 'Write three haiku to haiku.md',
      recap: 'Three haiku are in haiku.md.',
      rounds: 3,
      tokens_used: 5 * 15,
    });
    const session = await sessions.load(KEY);
    expect(session.metadata.token_stats).toMatchObject({ llm_calls: 5, total_tokens: 75 });
    expect(session.metadata.pending_user_turn).toBeUndefined();
    // The nudges are in the transcript (the model saw them) but /history leaves them out.
    expect(session.messages.filter((m) => String(m.content).startsWith('[Goal continuation'))).toHaveLength(2);
    const history = (await loop.processMessage(input('/history'))).content;
    expect(history).not.toContain('Goal continuation');
    expect(history).toContain('Assistant: Wrote the second haiku.');
  });

  it('stops at the round cap with a clear message, shows it in /status and resumes with /goal resume', async () => {
    const { loop, provider, goal } = await setup(
      [
        { toolCalls: [call('create_goal', { objective: 'Tidy the notes folder' })] },
        { content: 'Sorted the first half.' },
        { content: 'Sorted some more.' },
        { content: 'Almost there.' },
        { toolCalls: [call('update_goal', { action: 'complete', recap: 'Tidy.' })] },
        { content: 'The notes folder is tidy.' },
      ],
      { maxRounds: 2 },
    );

    const paused = await loop.processMessage(input('/goal tidy my notes'));
    expect(paused.content).toBe(
      'Sorted the first half.\n\nSorted some more.\n\n' +
        'Goal paused: it reached its limit of 2 rounds. Send /goal resume to continue, or /goal stop.',
    );
    expect(provider.requests).toHaveLength(3);
    expect(await goal()).toMatchObject({ status: 'limited', rounds: 2, max_rounds: 2 });

    const status = (await loop.processMessage(input('/status'))).content;
    expect(status).toContain('Goal (limited): Tidy the notes folder');
    expect(status).toContain('Goal progress: 2 of 2 rounds, 45 of 1,000,000 tokens');
    expect((await loop.processMessage(input('/goal'))).content).toMatch(
      /^Goal \(limited\): Tidy the notes folder\n.*\nObjective: Tidy the notes folder\nContinue with \/goal resume/s,
    );

    const resumed = await loop.processMessage(input('/goal resume'));
    expect(lastUserText(provider.requests[3])).toMatch(/^\[Goal continuation — round 3 of 4\]/);
    expect(resumed.content).toBe('Almost there.\n\nThe notes folder is tidy.');
    expect(await goal()).toMatchObject({ status: 'completed', rounds: 4 });
  });

  it('stops at a token cap given with /goal --tokens', async () => {
    const { loop, provider, goal } = await setup([
      { toolCalls: [call('create_goal', { objective: 'Summarise the logs' })] },
      { content: 'Read the first log.' },
      { content: 'Read the second log.' },
      { content: 'never requested' },
    ]);
    const output = await loop.processMessage(input('/goal --tokens 40 summarise the logs'));
    expect(output.content).toMatch(/Goal paused: it used 45 tokens, over its limit of 40\./);
    expect(provider.requests).toHaveLength(3);
    expect(await goal()).toMatchObject({ status: 'limited', max_tokens: 40, tokens_used: 45 });
  });

  it('shows a running goal in /status and ends it, with the turn, on /stop', async () => {
    const { loop, provider, goal, slow } = await setup([
      { toolCalls: [call('create_goal', { objective: 'Migrate the database', ui_summary: 'db migration' })] },
      { content: 'Planned the migration.' },
      { toolCalls: [call('slow_step')] },
      { content: 'never requested' },
    ]);
    const running = loop.processMessage(input('/goal migrate the database'));
    await slow.running;

    const status = (await loop.processMessage(input('/status'))).content;
    expect(status).toContain('Goal (active): db migration');
    expect(status).toContain('Goal progress: 1 of 5 rounds');
    expect(status).toContain('Active turn: yes');
    expect((await loop.processMessage(input('/goal'))).content).toMatch(/^Goal \(active\): db migration/);

    const stop = await loop.processMessage(input('/stop'));
    expect(stop.content).toBe('Stopped. What was already done is kept. Goal cancelled.');
    const output = await running;
    expect(output.stopReason).toBe('aborted');
    expect(provider.requests).toHaveLength(3);
    expect(await goal()).toMatchObject({ status: 'cancelled', recap: 'Stopped by the user.' });
    expect((await loop.processMessage(input('/stop'))).content).toBe('No active task to stop.');
  });

  it('refuses create_goal unless the user started a goal with /goal', async () => {
    const { loop, provider, goal } = await setup([
      { toolCalls: [call('create_goal', { objective: 'Do everything forever' })] },
      { content: 'Okay.' },
      { content: 'never requested' },
    ]);
    const output = await loop.processMessage(input('please keep an eye on things'));
    expect(output.content).toBe('Okay.');
    expect(provider.requests).toHaveLength(2);
    const toolResult = provider.requests[1]?.messages.find((m) => m.role === 'tool');
    expect(String(toolResult?.content)).toMatch(/create_goal is only allowed after the user starts a goal with \/goal/);
    expect(await goal()).toBeUndefined();
  });

  it('keeps an active goal across a restart and carries on with the next message', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'nb-goals-'));
    const first = await setup(
      [
        { toolCalls: [call('create_goal', { objective: 'Translate the README' })] },
        { error: { kind: 'server', message: 'upstream down', retryable: false }, finishReason: 'error' },
      ],
      { dir },
    );
    const failed = await first.loop.processMessage(input('/goal translate the README'));
    expect(failed.stopReason).toBe('error');
    expect(await first.goal()).toMatchObject({ status: 'active', rounds: 1 });

    // A new process: same session files, fresh loop and goals.
    const second = await setup(
      [
        { toolCalls: [call('update_goal', { action: 'complete', recap: 'Translated.' })] },
        { content: 'The README is translated.' },
      ],
      { dir },
    );
    expect((await second.loop.processMessage(input('/status'))).content).toContain(
      'Goal (active): Translate the README',
    );
    const output = await second.loop.processMessage(input('how is it going?'));
    expect(output.content).toBe('The README is translated.');
    expect(await second.goal()).toMatchObject({ status: 'completed', rounds: 2 });
  });

  it('answers /goal and /goal stop without a goal, and explains bad flags', async () => {
    const { loop, provider } = await setup([]);
    expect((await loop.processMessage(input('/goal'))).content).toBe(
      'No goal in this conversation. Start one with /goal <task>.',
    );
    expect((await loop.processMessage(input('/goal stop'))).content).toBe('No active goal to stop.');
    expect((await loop.processMessage(input('/goal --rounds zero fix it'))).content).toMatch(
      /^--rounds needs a whole number above 0\.\nUsage: \/goal/,
    );
    expect(parseGoalArgs('--max-rounds=3 --tokens 9000 ship it')).toEqual({
      caps: { maxRounds: 3, maxTokens: 9000 },
      rest: 'ship it',
    });
    expect(provider.requests).toHaveLength(0);
  });
});
