import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { builtinCommands } from '../../src/agent/commands/builtin.js';
import { CommandRouter, editDistance, parseCommand } from '../../src/agent/commands/router.js';
import type { ModelCatalog } from '../../src/agent/commands/types.js';
import { ContextBuilder } from '../../src/agent/context.js';
import { AgentLoop, type AgentLoopDeps } from '../../src/agent/loop.js';
import { AgentRunner } from '../../src/agent/runner.js';
import type { ModelSettings } from '../../src/config/model.js';
import { JsonlSessionStore } from '../../src/session/jsonl-store.js';
import { ToolRegistry } from '../../src/tools/registry.js';
import { defineTool, ok } from '../../src/tools/types.js';
import { call, FakeProvider, type Scripted } from '../helpers/fake-provider.js';

const settings = (model: string, preset?: string): ModelSettings => ({
  model,
  provider: 'fake',
  maxTokens: 100,
  contextWindowTokens: 10_000,
  temperature: 0.1,
  reasoningEffort: null,
  ...(preset ? { preset } : {}),
});
const catalog: ModelCatalog = { default: settings('m'), presets: { fast: settings('fast-model', 'fast') } };

/** A loop whose `fast` preset runs the same fake provider with another model name, and a gate for a slow tool. */
async function setup(script: Scripted[], extra: Partial<AgentLoopDeps> = {}) {
  const dir = await mkdtemp(join(tmpdir(), 'nb-commands-'));
  const sessions = new JsonlSessionStore(join(dir, 'sessions'));
  const provider = new FakeProvider(script);
  let release: () => void = () => {};
  const gate = new Promise<void>((resolve) => {
    release = resolve;
  });
  let inTool: () => void = () => {};
  const reachedTool = new Promise<void>((resolve) => {
    inTool = resolve;
  });
  const tools = new ToolRegistry();
  tools.register(
    defineTool({
      name: 'slow',
      description: 'waits for the test',
      parameters: z.object({}),
      execute: async () => {
        inTool();
        await gate;
        return ok('slow done');
      },
    }),
  );
  const runnerOf = (model: string) => new AgentRunner({ provider, model, maxTokens: 100, tools, maxIterations: 5 });
  const runnerFor = vi.fn((preset: string) => {
    if (preset !== 'fast') throw new Error(`no preset ${preset}`);
    return runnerOf('fast-model');
  });
  const loop = new AgentLoop({
    sessions,
    context: new ContextBuilder({ workspace: dir }),
    runner: runnerOf('m'),
    runnerFor,
    models: () => catalog,
    ...extra,
  });
  return { loop, sessions, provider, release, reachedTool, runnerFor };
}

const input = (content: string, chatId = 'direct') => ({ channel: 'cli', chatId, content });

describe('CommandRouter', () => {
  const router = new CommandRouter();
  for (const command of builtinCommands(router)) router.register(command);

  it('normalises case and @botname, and splits the arguments', () => {
    expect(parseCommand('  /History@my_bot   5 ')).toEqual({ name: '/history', args: '5' });
    expect(router.match('/STOP@nanobot')).toMatchObject({ kind: 'command', name: '/stop', args: '' });
  });

  it('does not take paths or ordinary text for commands', () => {
    expect(router.match('/etc/hosts what is this')).toBeUndefined();
    expect(router.match('/usr/bin/env x')).toBeUndefined();
    expect(router.match('hello /stop')).toBeUndefined();
    expect(router.match('//stop')).toBeUndefined();
  });

  it('suggests the closest command for a typo, or lists them all', () => {
    expect(router.match('/stpo')).toMatchObject({
      kind: 'unknown',
      reply: 'Unknown command /stpo. Did you mean /stop?',
    });
    const far = router.match('/frobnicate');
    expect(far?.kind === 'unknown' && far.reply).toMatch(/^Unknown command \/frobnicate\. Available: \/new, \/stop/);
    expect(editDistance('/stpo', '/stop')).toBe(1);
    expect(editDistance('/modle', '/model')).toBe(1);
  });

  it('knows which commands skip the queue', () => {
    expect(router.isImmediate(router.match('/status'))).toBe(true);
    expect(router.isImmediate(router.match('/restart'))).toBe(true);
    expect(router.isImmediate(router.match('/nope'))).toBe(true);
    expect(router.isImmediate(router.match('/new'))).toBe(false);
    expect(router.isImmediate(router.match('/history 3'))).toBe(false);
    expect(router.isImmediate(undefined)).toBe(false);
  });
});

describe('slash commands in the loop', () => {
  it('answers a priority command while a turn runs, and makes a queued command wait for the turn', async () => {
    const { loop, release, reachedTool } = await setup([{ toolCalls: [call('slow')] }, { content: 'finished' }]);
    const order: string[] = [];
    const turn = loop.processMessage(input('long job')).then((out) => {
      order.push('turn');
      return out;
    });
    await reachedTool;
    const status = await loop.processMessage(input('/status'));
    expect(status.content).toMatch(/Active turn: yes/);

    // The turn cannot end before release(): had /help not waited for it, it would finish first.
    const help = loop.processMessage(input('/help')).then((out) => {
      order.push('help');
      return out;
    });
    release();
    expect((await turn).content).toBe('finished');
    expect((await help).content).toMatch(/^Commands:/);
    expect(order).toEqual(['turn', 'help']);
  });

  it('answers /cmd@bot like /cmd', async () => {
    const { loop, provider } = await setup([]);
    expect((await loop.processMessage(input('/Stop@nanobot_bot'))).content).toBe('No active task to stop.');
    expect(provider.requests).toHaveLength(0);
  });

  it('answers an unknown command with a suggestion and never calls the model', async () => {
    const { loop, provider, sessions } = await setup([{ content: 'should not be used' }]);
    const out = await loop.processMessage(input('/stpo'));
    expect(out).toMatchObject({ content: 'Unknown command /stpo. Did you mean /stop?', stopReason: 'command' });
    expect(provider.requests).toHaveLength(0);
    expect((await sessions.load('cli:direct')).messages).toHaveLength(0);
  });

  it('sends a message that starts with a path to the model', async () => {
    const { loop, provider } = await setup([{ content: 'that is the hosts file' }]);
    const out = await loop.processMessage(input('/etc/hosts what is this'));
    expect(out.content).toBe('that is the hosts file');
    expect(String(provider.requests[0]?.messages.at(-1)?.content)).toMatch(/^\/etc\/hosts what is this/);
  });

  it('/model switches only this session to a preset', async () => {
    const { loop, provider, sessions } = await setup([{ content: 'a' }, { content: 'b' }, { content: 'c' }]);
    const listing = await loop.processMessage(input('/model'));
    expect(listing.content).toMatch(/Model: m/);
    expect(listing.content).toMatch(/- default: m \(current\)\n- fast: fast-model/);

    expect((await loop.processMessage(input('/model turbo'))).content).toBe(
      'Unknown preset "turbo". Available: default, fast.',
    );
    expect((await loop.processMessage(input('/model fast'))).content).toMatch(/preset "fast": fast-model/);
    expect((await sessions.load('cli:direct')).metadata.model_preset).toBe('fast');

    await loop.processMessage(input('hello', 'direct'));
    await loop.processMessage(input('hello', 'other'));
    expect(provider.requests.map((r) => r.model)).toEqual(['fast-model', 'm']);

    await loop.processMessage(input('/model default'));
    await loop.processMessage(input('again'));
    expect(provider.requests.at(-1)?.model).toBe('m');
  });

  it('falls back to the default model when the session preset no longer exists', async () => {
    const { loop, provider, sessions } = await setup([{ content: 'a' }]);
    const session = await sessions.load('cli:direct');
    session.metadata.model_preset = 'removed';
    await sessions.save(session);
    await loop.processMessage(input('hi'));
    expect(provider.requests[0]?.model).toBe('m');
  });

  it('/history n shows the last n exchanges without the runtime context', async () => {
    const { loop } = await setup([{ content: 'one' }, { content: 'two' }, { content: 'three' }]);
    for (const q of ['first question', 'second question', 'third question']) await loop.processMessage(input(q));
    const out = (await loop.processMessage(input('/history 2'))).content;
    expect(out).toBe(
      'Last 2 exchanges:\n\nYou: second question\nAssistant: two\n\nYou: third question\nAssistant: three',
    );
    expect((await loop.processMessage(input('/history x'))).content).toMatch(/^Usage: \/history/);
    expect((await loop.processMessage(input('/history 999'))).content).toMatch(/^Last 3 exchanges/);
  });

  it('/history shortens long messages', async () => {
    const { loop } = await setup([{ content: 'y'.repeat(1000) }]);
    await loop.processMessage(input('x'.repeat(1000)));
    const out = (await loop.processMessage(input('/history'))).content;
    expect(out.length).toBeLessThan(800);
    expect(out).toMatch(/x…\nAssistant: y+…$/);
  });

  it('/status shows the model, context use and the tokens recorded per turn', async () => {
    const { loop, sessions } = await setup([
      { content: 'first', usage: { promptTokens: 100, completionTokens: 20, cachedTokens: 0 } },
      { content: 'second', usage: { promptTokens: 300, completionTokens: 30, cachedTokens: 200 } },
    ]);
    await loop.processMessage(input('one'));
    await loop.processMessage(input('two'));
    expect((await sessions.load('cli:direct')).metadata.token_stats).toEqual({
      total_prompt_tokens: 400,
      total_completion_tokens: 50,
      total_tokens: 450,
      llm_calls: 2,
      total_cached_tokens: 200,
    });
    const status = (await loop.processMessage(input('/status'))).content;
    expect(status).toMatch(/^Model: m \(provider fake, preset default\)/);
    expect(status).toMatch(/Context: ~[\d,]+ of 10,000 tokens \(\d+%\)/);
    expect(status).toMatch(/Tokens this session: 450 \(prompt 400, completion 50\) in 2 LLM calls/);
    expect(status).toMatch(/Prompt cache: 50% hit \(200 of 400 prompt tokens\)/);
    expect(status).toMatch(/Active turn: no/);
  });

  it('/restart calls the restart hook, or says it needs the gateway', async () => {
    const restart = vi.fn();
    const withHook = await setup([], { restart });
    expect((await withHook.loop.processMessage(input('/restart'))).content).toBe('Restarting…');
    expect(restart).toHaveBeenCalledOnce();
    const without = await setup([]);
    expect((await without.loop.processMessage(input('/restart'))).content).toMatch(/only available .* gateway/);
  });

  it('/help lists the built-ins and the extra commands, which receive their arguments', async () => {
    const run = vi.fn(async (args: string, key: string) => `dream-log ${args} for ${key}`);
    const { loop } = await setup([], { commands: { '/dream-log': { description: 'list memory changes', run } } });
    const help = (await loop.processMessage(input('/help'))).content;
    for (const name of ['/new', '/stop', '/restart', '/status', '/model [preset]', '/history [n]', '/dream-log']) {
      expect(help).toContain(name);
    }
    expect((await loop.processMessage(input('/dream-log@bot abc123'))).content).toBe('dream-log abc123 for cli:direct');
  });

  it('reports a failing command instead of failing the message', async () => {
    const { loop } = await setup([], {
      commands: { '/boom': { description: 'fails', run: async () => Promise.reject(new Error('kaput')) } },
    });
    expect((await loop.processMessage(input('/boom'))).content).toBe('/boom failed: kaput');
  });
});
