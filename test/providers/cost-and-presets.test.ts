/**
 * Usage and cost per session in /status, the provider chain built from the config (fallbacks, prices), and a cron
 * job's own model preset.
 */
import fs from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path, { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { tokenStats } from '../../src/agent/commands/token-stats.js';
import { ContextBuilder } from '../../src/agent/context.js';
import { AgentLoop } from '../../src/agent/loop.js';
import { AgentRunner } from '../../src/agent/runner.js';
import { runCron } from '../../src/cli/commands/cron.js';
import { loadConfig } from '../../src/config/load.js';
import { effectiveModel } from '../../src/config/model.js';
import { type CronJob, jobModelPreset } from '../../src/cron/types.js';
import type { GatewayContext } from '../../src/gateway/lifecycle.js';
import { cronRunner } from '../../src/gateway/services.js';
import { buildProvider } from '../../src/providers/chain.js';
import { costOf, findPrice, withCost } from '../../src/providers/cost.js';
import { JsonlSessionStore } from '../../src/session/jsonl-store.js';
import { createCronTool } from '../../src/tools/cron.js';
import { ToolRegistry } from '../../src/tools/registry.js';
import { makeHarness } from '../cron/helpers.js';
import { startFakeLLM } from '../helpers/fake-llm.js';
import { FakeProvider } from '../helpers/fake-provider.js';
import { makeContext, textOf } from '../tools/helpers.js';

const PRICE = { input: 3, output: 15, cached: 0.3 };

describe('prices', () => {
  it('finds a price by the configured name, without the provider prefix, or by the last segment', () => {
    const prices = { 'anthropic/claude-sonnet-4': PRICE, 'llama-3.3-70b': { input: 1, output: 1 } };
    expect(findPrice(prices, 'anthropic/claude-sonnet-4')).toBe(PRICE);
    expect(findPrice(prices, 'openrouter/meta-llama/llama-3.3-70b')).toEqual({ input: 1, output: 1 });
    expect(findPrice(prices, 'gpt-5')).toBeUndefined();
  });

  it('prices cached prompt tokens at their own rate', () => {
    expect(costOf({ promptTokens: 1000, completionTokens: 100, cachedTokens: 800 }, PRICE)).toBeCloseTo(0.00234, 8);
  });
});

describe('/status: tokens, cache hits and cost of the session', () => {
  it('adds every turn: cached and reasoning tokens, the hit rate and the cost', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'nb-cost-'));
    const sessions = new JsonlSessionStore(join(dir, 'sessions'));
    const fake = new FakeProvider([
      { content: 'one', usage: { promptTokens: 1000, completionTokens: 200, reasoningTokens: 50 } },
      { content: 'two', usage: { promptTokens: 1000, completionTokens: 100, cachedTokens: 800 } },
    ]);
    const provider = withCost(fake, PRICE);
    const runner = new AgentRunner({
      provider,
      model: 'm',
      maxTokens: 100,
      tools: new ToolRegistry(),
      maxIterations: 3,
    });
    const loop = new AgentLoop({ sessions, context: new ContextBuilder({ workspace: dir }), runner });
    const input = (content: string) => ({ channel: 'cli', chatId: 'direct', content });
    await loop.processMessage(input('first'));
    await loop.processMessage(input('second'));

    const status = (await loop.processMessage(input('/status'))).content;
    expect(status).toContain(
      'Tokens this session: 2,300 (prompt 2,000, completion 300 incl. 50 reasoning) in 2 LLM calls',
    );
    expect(status).toContain('Prompt cache: 40% hit (800 of 2,000 prompt tokens)');
    expect(status).toContain('Cost this session: $0.0083');
    const stats = tokenStats(await sessions.load('cli:direct'));
    expect(stats.total_cost_usd).toBeCloseTo(0.00834, 8);
    expect(stats.total_reasoning_tokens).toBe(50);
  });
});

describe('the provider chain from the config', () => {
  it('fails over to a fallback preset on a 429 and prices the answer with the model that gave it', async () => {
    const primary = await startFakeLLM([{ status: 429, errorBody: { error: { message: 'Rate limit reached' } } }]);
    const backup = await startFakeLLM([
      { text: 'from backup', usage: { promptTokens: 1_000_000, completionTokens: 0 } },
    ]);
    try {
      const home = await mkdtemp(join(tmpdir(), 'nb-chain-'));
      const configPath = join(home, 'config.json');
      fs.writeFileSync(
        configPath,
        JSON.stringify({
          agents: {
            defaults: {
              provider: 'main',
              model: 'big-model',
              fallbackModels: ['backup'],
              modelPrices: { 'big-model': { input: 100, output: 100 }, 'small-model': { input: 2, output: 8 } },
            },
          },
          modelPresets: { backup: { model: 'small-model', provider: 'spare' } },
          providers: { main: { apiBase: `${primary.url}/v1` }, spare: { apiBase: `${backup.url}/v1` } },
        }),
      );
      const loaded = await loadConfig({ configPath, env: { HOME: home } });
      const provider = buildProvider(
        loaded,
        effectiveModel(loaded.config),
        { HOME: home },
        { adapter: { retryDelaysMs: [] } },
      );
      const response = await provider
        .stream({ model: 'big-model', messages: [{ role: 'user', content: 'hi' }], maxTokens: 10 })
        .result();
      expect(response.content).toBe('from backup');
      expect(response.usage?.costUsd).toBe(2);
      expect(backup.requests[0]?.body.model).toBe('small-model');
    } finally {
      await primary.close();
      await backup.close();
    }
  });
});

describe('a cron job with its own model preset', () => {
  it('the cron tool stores a preset for an agent task, and refuses unknown presets and reminders', async () => {
    const harness = makeHarness('2026-03-27T12:00:00Z', { timezone: 'UTC' });
    const tool = createCronTool({ service: harness.service, timezone: 'UTC', presets: () => ['cheap'] });
    const ctx = makeContext({ channel: 'telegram', chatId: '42', sessionKey: 'telegram:42' });
    const added = await tool.execute(
      { action: 'add', message: 'Summarise HN', every_seconds: 3600, deliver: 'agent', model: 'cheap' },
      ctx,
    );
    expect(textOf(added)).toMatch(/^Scheduled agent task/);
    const [job] = await harness.service.list();
    // Ours, kept where nanobot's readers keep it (originMetadata), not in a payload key its action log would reject.
    expect(job && jobModelPreset(job)).toBe('cheap');
    expect(job?.payload.originMetadata).toEqual({ nanobotTs: { modelPreset: 'cheap' } });
    const unknown = await tool.execute(
      { action: 'add', message: 'x', every_seconds: 60, deliver: 'agent', model: 'nope' },
      ctx,
    );
    expect(textOf(unknown)).toBe("Error: No model preset 'nope'. Available: cheap.");
    const reminder = await tool.execute({ action: 'add', message: 'x', every_seconds: 60, model: 'cheap' }, ctx);
    expect(reminder.isError).toBe(true);
  });

  it('`nanobot cron add --agent --model` writes the preset into the job', async () => {
    const home = await mkdtemp(join(tmpdir(), 'nb-cron-model-'));
    const workspace = path.join(home, 'ws');
    const config = path.join(home, 'config.json');
    fs.writeFileSync(
      config,
      JSON.stringify({ agents: { defaults: { workspace } }, modelPresets: { cheap: { model: 'x' } } }),
    );
    const deps = { out: () => {}, env: { HOME: home } };
    const chat = { channel: 'telegram', chatId: '42' };
    await runCron(
      'add',
      [],
      { config, message: 'Check the news', every: '1h', agent: true, model: 'cheap', ...chat },
      deps,
    );
    // No gateway runs: the job waits in action.jsonl, in nanobot's snake_case dump.
    const [line] = fs
      .readFileSync(path.join(workspace, 'cron', 'action.jsonl'), 'utf8')
      .trim()
      .split('\n');
    expect(JSON.parse(line ?? '{}').params.payload.origin_metadata).toEqual({ nanobotTs: { modelPreset: 'cheap' } });
    await expect(
      runCron('add', [], { config, message: 'x', every: '1h', agent: true, model: 'gone', ...chat }, deps),
    ).rejects.toThrow("No model preset 'gone'.");
  });

  it('the job runs with its preset for that turn only; the chat keeps its own model', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'nb-cron-turn-'));
    const sessions = new JsonlSessionStore(join(dir, 'sessions'));
    const provider = new FakeProvider([{ content: 'cheap answer' }, { content: 'default answer' }]);
    const runnerOf = (model: string) =>
      new AgentRunner({ provider, model, maxTokens: 100, tools: new ToolRegistry(), maxIterations: 3 });
    const runnerFor = vi.fn((preset: string) => runnerOf(`${preset}-model`));
    const loop = new AgentLoop({
      sessions,
      context: new ContextBuilder({ workspace: dir }),
      runner: runnerOf('default'),
      runnerFor,
    });
    const publishOutbound = vi.fn();
    const context = {
      agent: () => ({ loop }),
      bus: { publishOutbound },
      channels: () => ({ telegram: { state: 'running', restarts: 0 } }),
    } as unknown as GatewayContext;
    const job = {
      id: 'job1',
      name: 'news',
      payload: {
        kind: 'agent_turn',
        message: 'Summarise',
        sessionKey: 'telegram:42',
        originChannel: 'telegram',
        originChatId: '42',
        originMetadata: { nanobotTs: { modelPreset: 'cheap' } },
      },
    } as unknown as CronJob;
    expect(await cronRunner(context)(job)).toEqual({ status: 'ok' });
    expect(publishOutbound).toHaveBeenCalledWith({ channel: 'telegram', chatId: '42', content: 'cheap answer' });
    expect(provider.requests[0]?.model).toBe('cheap-model');

    await loop.processMessage({ channel: 'telegram', chatId: '42', content: 'hello' });
    expect(provider.requests[1]?.model).toBe('default');
    expect((await sessions.load('telegram:42')).metadata.model_preset).toBeUndefined();
  });
});
