import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { agentShutdown, createAgent } from '../../src/app/agent.js';
import { runnerFactory } from '../../src/app/agent-runners.js';
import { baseTools, networkPolicy } from '../../src/app/agent-tools.js';
import { MessageBus } from '../../src/bus/message-bus.js';
import { type LoadedConfig, loadConfig } from '../../src/config/load.js';
import { effectiveModel } from '../../src/config/model.js';
import type { LLMProvider } from '../../src/providers/types.js';
import { UserError } from '../../src/util/errors.js';

const homes: string[] = [];
afterEach(async () => {
  await Promise.all(homes.splice(0).map((home) => rm(home, { recursive: true, force: true })));
});

async function loadedWith(
  tools: Record<string, unknown>,
  defaults: Record<string, unknown> = {},
): Promise<LoadedConfig> {
  const home = await mkdtemp(join(tmpdir(), 'nb-agent-parts-'));
  homes.push(home);
  const workspace = join(home, '.nanobot', 'workspace');
  await mkdir(workspace, { recursive: true });
  const configPath = join(home, '.nanobot', 'config.json');
  await writeFile(
    configPath,
    JSON.stringify({
      agents: { defaults: { workspace, provider: 'custom', model: 'test-model', ...defaults } },
      providers: { custom: { apiKey: 'test-key', apiBase: 'http://127.0.0.1:9/v1' } },
      tools,
    }),
  );
  return loadConfig({ configPath, home, env: {} });
}

const names = (built: { tools: { names(): string[] } }) => built.tools.names();

describe('baseTools', () => {
  it('registers web_search and web_fetch only when tools.web.enable, and always message', async () => {
    const off = baseTools(await loadedWith({ web: { enable: false } }), {}, new MessageBus());
    expect(names(off)).not.toContain('web_search');
    expect(names(off)).not.toContain('web_fetch');
    expect(names(off)).toContain('message');
    const on = baseTools(await loadedWith({ web: { enable: true } }), {}, new MessageBus());
    expect(names(on)).toEqual(expect.arrayContaining(['web_search', 'web_fetch', 'message']));
  });

  it('masks tool results against configured secrets and secret-named environment variables', async () => {
    const base = baseTools(
      await loadedWith({ web: { enable: false } }),
      { OPENROUTER_API_KEY: 'sk-or-env-secret-123' },
      new MessageBus(),
    );
    expect(base.secrets()).toContain('test-key');
    expect(base.secrets()).toContain('sk-or-env-secret-123');
  });

  it('a malformed ssrfWhitelist entry is a UserError saying how to write one', () => {
    expect(() => networkPolicy(['not an address'])).toThrow(UserError);
  });
});

describe('runnerFactory', () => {
  it('builds runners with the given tools (default: the agent registry) and the configured limits', async () => {
    const loaded = await loadedWith({ web: { enable: false }, maxCallsPerResponse: 7 }, { maxToolIterations: 5 });
    const base = baseTools(loaded, {}, new MessageBus());
    const make = runnerFactory(loaded, base.tools);
    const provider = {} as LLMProvider;
    const spec = (runner: unknown) => (runner as { spec: Record<string, unknown> }).spec;
    const model = effectiveModel(loaded.config);
    const runner = spec(make(model, provider));
    expect(runner).toMatchObject({ model: 'test-model', tools: base.tools, maxIterations: 5, maxCallsPerResponse: 7 });
    expect(runner.turnTimeoutMs).toBe(loaded.config.agents.defaults.turnTimeoutS * 1000);
    const other = baseTools(loaded, {}, new MessageBus()).tools;
    expect(spec(make({ ...model, model: 'm2' }, provider, other))).toMatchObject({ model: 'm2', tools: other });
  });
});

describe('agentShutdown', () => {
  it('stops subagents first, then exec sessions and MCP together, then kills stray shells', async () => {
    const order: string[] = [];
    let releaseSubagents!: () => void;
    const subagentsDone = new Promise<void>((resolve) => (releaseSubagents = resolve));
    const shutdown = agentShutdown(
      {
        shutdown: async () => {
          order.push('subagents');
          await subagentsDone;
          order.push('subagents done');
        },
      },
      { shutdown: async () => void order.push('exec') },
      { close: async () => void order.push('mcp') },
      () => order.push('shells'),
    );
    const done = shutdown();
    await Promise.resolve();
    expect(order).toEqual(['subagents']);
    releaseSubagents();
    await done;
    expect(order).toEqual(['subagents', 'subagents done', 'exec', 'mcp', 'shells']);
  });

  it('works without MCP servers', async () => {
    const order: string[] = [];
    await agentShutdown(
      { shutdown: async () => void order.push('subagents') },
      { shutdown: async () => void order.push('exec') },
      undefined,
      () => order.push('shells'),
    )();
    expect(order).toEqual(['subagents', 'exec', 'shells']);
  });
});

describe('createAgent registry', () => {
  it('the base tools plus search_history, cron, the goal tools and spawn', async () => {
    const loaded = await loadedWith({ web: { enable: false } });
    const agent = await createAgent(loaded, { env: {} });
    try {
      const base = names(baseTools(loaded, {}, new MessageBus()));
      const extra = names(agent).filter((name) => !base.includes(name));
      expect(names(agent)).toEqual(expect.arrayContaining(base));
      expect(extra.sort()).toEqual(['create_goal', 'cron', 'search_history', 'spawn', 'update_goal']);
    } finally {
      await agent.shutdown();
    }
  });
});
