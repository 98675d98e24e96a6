import { readFileSync, writeFileSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { effectiveModel } from '../../src/config/model.js';
import { ensureConfigFile, syncWorkspaceTemplates } from '../../src/config/onboard.js';
import { configJsonSchema } from '../../src/config/schema.js';
import { adapterOptions } from '../../src/providers/chain.js';
import { UserError } from '../../src/util/errors.js';

async function withConfig(content: unknown, env: NodeJS.ProcessEnv = {}) {
  const home = await mkdtemp(join(tmpdir(), 'nb-cfg-'));
  const configPath = join(home, '.nanobot', 'config.json');
  await ensureConfigFile(configPath);
  writeFileSync(configPath, typeof content === 'string' ? content : JSON.stringify(content));
  return { home, configPath, load: () => loadConfig({ configPath, home, env }) };
}

describe('config loading', () => {
  it('fills nanobot’s defaults', async () => {
    const { load, home } = await withConfig({});
    const { config, workspace, dataDir } = await load();
    expect(config.agents.defaults).toMatchObject({
      model: 'anthropic/claude-opus-4-5',
      provider: 'auto',
      maxTokens: 8192,
      contextWindowTokens: 200000,
      maxToolIterations: 200,
      maxToolResultChars: 16000,
    });
    expect(config.gateway.port).toBe(18790);
    expect(config.api).toMatchObject({ host: '127.0.0.1', port: 8900 });
    expect(config.tools.restrictToWorkspace).toBe(true);
    expect(workspace).toBe(join(home, '.nanobot', 'workspace'));
    expect(dataDir).toBe(join(home, '.nanobot'));
  });

  it('accepts snake_case keys but keeps provider names as written', async () => {
    const { load } = await withConfig({
      agents: { defaults: { max_tokens: 1234, context_window_tokens: 5000 } },
      providers: { lm_studio: { api_base: 'http://localhost:1234/v1', extra_headers: { 'X-Some_Header': 'v' } } },
    });
    const { config } = await load();
    expect(config.agents.defaults.maxTokens).toBe(1234);
    expect(config.providers.lm_studio?.apiBase).toBe('http://localhost:1234/v1');
    expect(config.providers.lm_studio?.extraHeaders).toEqual({ 'X-Some_Header': 'v' });
  });

  it('interpolates ${VAR} and names the key when a variable is missing', async () => {
    const ok = await withConfig({ providers: { openai: { apiKey: '${MY_KEY}' } } }, { MY_KEY: 'sk-123' });
    expect((await ok.load()).config.providers.openai?.apiKey).toBe('sk-123');
    const missing = await withConfig({ providers: { openai: { apiKey: '${NOPE_KEY}' } } });
    await expect(missing.load()).rejects.toThrow(
      /providers\.openai\.apiKey: environment variable \$\{NOPE_KEY\} is not set/,
    );
  });

  it('applies NANOBOT_A__B overrides over the file', async () => {
    const { load } = await withConfig(
      { gateway: { port: 1 } },
      {
        NANOBOT_GATEWAY__PORT: '4242',
        NANOBOT_AGENTS__DEFAULTS__MAX_TOKENS: '777',
        NANOBOT_PROVIDERS__LM_STUDIO__API_BASE: 'http://127.0.0.1:9/v1',
      },
    );
    const { config } = await load();
    expect(config.gateway.port).toBe(4242);
    expect(config.agents.defaults.maxTokens).toBe(777);
    expect(config.providers.lm_studio?.apiBase).toBe('http://127.0.0.1:9/v1');
  });

  it('keeps an all-digit env value as text where the schema wants a string', async () => {
    const { load } = await withConfig({}, { NANOBOT_PROVIDERS__DEEPSEEK__API_KEY: '12345678901234' });
    expect((await load()).config.providers.deepseek?.apiKey).toBe('12345678901234');
  });

  it('merges an env override into the file’s provider block however its name is spelled', async () => {
    const { load } = await withConfig(
      { providers: { lmStudio: { apiBase: 'http://127.0.0.1:1234/v1' } } },
      { NANOBOT_PROVIDERS__LM_STUDIO__API_KEY: 'k' },
    );
    const { config } = await load();
    expect(Object.keys(config.providers)).toEqual(['lmStudio']);
    expect(config.providers.lmStudio).toMatchObject({ apiBase: 'http://127.0.0.1:1234/v1', apiKey: 'k' });
  });

  it('reads NANOBOT_LLM_TIMEOUT_S and NANOBOT_MAX_CONCURRENT_REQUESTS', async () => {
    const { load } = await withConfig({}, { NANOBOT_LLM_TIMEOUT_S: '42', NANOBOT_MAX_CONCURRENT_REQUESTS: 'x' });
    expect((await load()).runtime).toEqual({
      llmTimeoutMs: 42_000,
      streamIdleTimeoutMs: 90_000,
      maxConcurrentRequests: 3,
    });
  });

  it('reads NANOBOT_STREAM_IDLE_TIMEOUT_S (upstream’s name, 90 s by default) and hands it to the adapters', async () => {
    const { load } = await withConfig({}, { NANOBOT_STREAM_IDLE_TIMEOUT_S: '2.5' });
    const loaded = await load();
    expect(loaded.runtime.streamIdleTimeoutMs).toBe(2_500);
    expect(adapterOptions(loaded, {}).streamIdleTimeoutMs).toBe(2_500);
    for (const bad of ['0', '-3', 'soon']) {
      const { load: again } = await withConfig({}, { NANOBOT_STREAM_IDLE_TIMEOUT_S: bad });
      expect((await again()).runtime.streamIdleTimeoutMs).toBe(90_000);
    }
  });

  it('has agents.defaults.turnTimeoutS (3600 s, 0 = no limit) in the schema, settable from the file and the env', async () => {
    expect((await (await withConfig({})).load()).config.agents.defaults.turnTimeoutS).toBe(3600);
    const fromFile = await withConfig({ agents: { defaults: { turn_timeout_s: 0 } } });
    expect((await fromFile.load()).config.agents.defaults.turnTimeoutS).toBe(0);
    const fromEnv = await withConfig({}, { NANOBOT_AGENTS__DEFAULTS__TURN_TIMEOUT_S: '90' });
    expect((await fromEnv.load()).config.agents.defaults.turnTimeoutS).toBe(90);
    const bad = await withConfig({ agents: { defaults: { turnTimeoutS: -1 } } });
    expect(String(await bad.load().catch((e: unknown) => e))).toMatch(/agents\.defaults\.turnTimeoutS/);
    const schema = JSON.stringify(configJsonSchema());
    expect(schema).toContain('"turnTimeoutS"');
  });

  it('names the path and the problem for a wrong type', async () => {
    const { load } = await withConfig({ agents: { defaults: { maxTokens: 'lots' } } });
    const err = await load().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UserError);
    expect((err as Error).message).toMatch(/agents\.defaults\.maxTokens: expected a number, got string "lots"/);
  });

  it('explains invalid JSON without a stack trace', async () => {
    const { load } = await withConfig('{ "agents": { }, }');
    await expect(load()).rejects.toThrow(/is not valid JSON/);
  });

  it('applies a model preset over the defaults', async () => {
    const { load } = await withConfig({
      agents: { defaults: { modelPreset: 'fast' } },
      modelPresets: { fast: { model: 'gpt-5-mini', provider: 'openai', maxTokens: 1000 } },
    });
    const model = effectiveModel((await load()).config);
    expect(model).toMatchObject({ model: 'gpt-5-mini', provider: 'openai', maxTokens: 1000, preset: 'fast' });
  });
});

describe('onboard', () => {
  it('adds missing keys to an existing config and keeps every existing value', async () => {
    const home = await mkdtemp(join(tmpdir(), 'nb-onb-'));
    const path = join(home, 'config.json');
    writeFileSync(
      path,
      JSON.stringify({
        agents: { defaults: { model: 'my/model', max_tokens: 99 } },
        providers: { x: { apiKey: '${K}' } },
        custom: 1,
      }),
    );
    const result = await ensureConfigFile(path);
    expect(result.updated).toBe(true);
    const written = JSON.parse(readFileSync(path, 'utf8'));
    expect(written.agents.defaults.model).toBe('my/model');
    expect(written.agents.defaults.maxTokens).toBe(99);
    expect(written.agents.defaults.max_tokens).toBeUndefined();
    expect(written.agents.defaults.contextWindowTokens).toBe(200000);
    expect(written.providers.x.apiKey).toBe('${K}');
    expect(written.custom).toBe(1);
    expect((await ensureConfigFile(path)).updated).toBe(false);
  });

  it('creates only the workspace files that are missing', async () => {
    const ws = await mkdtemp(join(tmpdir(), 'nb-ws-'));
    writeFileSync(join(ws, 'SOUL.md'), 'my own soul');
    const created = await syncWorkspaceTemplates(ws);
    expect(created).toEqual(
      expect.arrayContaining([
        'AGENTS.md',
        'USER.md',
        'HEARTBEAT.md',
        join('memory', 'MEMORY.md'),
        join('memory', 'history.jsonl'),
      ]),
    );
    expect(created).not.toContain('SOUL.md');
    expect(readFileSync(join(ws, 'SOUL.md'), 'utf8')).toBe('my own soul');
    expect(readFileSync(join(ws, 'memory', 'history.jsonl'), 'utf8')).toBe('');
    expect(await syncWorkspaceTemplates(ws)).toEqual([]);
  });

  it('reads tools.maxCallsPerResponse from the file (either spelling) or the environment, default 100', async () => {
    expect((await (await withConfig({})).load()).config.tools.maxCallsPerResponse).toBe(100);
    const camel = await withConfig({ tools: { maxCallsPerResponse: 7 } });
    expect((await camel.load()).config.tools.maxCallsPerResponse).toBe(7);
    const snake = await withConfig({ tools: { max_calls_per_response: 8 } });
    expect((await snake.load()).config.tools.maxCallsPerResponse).toBe(8);
    const env = await withConfig({}, { NANOBOT_TOOLS__MAX_CALLS_PER_RESPONSE: '9' });
    expect((await env.load()).config.tools.maxCallsPerResponse).toBe(9);
    await expect((await withConfig({ tools: { maxCallsPerResponse: 0 } })).load()).rejects.toThrow(
      /tools\.maxCallsPerResponse/,
    );
    const schema = configJsonSchema() as { properties: { tools: { properties: Record<string, unknown> } } };
    expect(schema.properties.tools.properties.maxCallsPerResponse).toMatchObject({ type: 'integer', default: 100 });
  });

  it('emits a JSON Schema describing the config', () => {
    const schema = configJsonSchema() as { properties: Record<string, { properties?: Record<string, unknown> }> };
    expect(Object.keys(schema.properties)).toEqual(
      expect.arrayContaining(['agents', 'providers', 'channels', 'tools', 'gateway', 'api', 'modelPresets']),
    );
  });
});
