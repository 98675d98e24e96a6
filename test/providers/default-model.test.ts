/**
 * With no model configured (the config default `onboard` writes), the provider whose key is present is used, in a
 * fixed order; a model the user chose is never replaced; no key at all names every variable looked for.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { buildProvider, modelInForce, resolveModel } from '../../src/providers/chain.js';
import { KEY_DEFAULTS } from '../../src/providers/default-model.js';
import { isResolveError } from '../../src/providers/resolve.js';

type Env = Record<string, string>;

async function loaded(config: object = {}) {
  const home = mkdtempSync(join(tmpdir(), 'nb-default-model-'));
  const configPath = join(home, 'config.json');
  writeFileSync(configPath, JSON.stringify(config));
  return loadConfig({ configPath, env: { HOME: home } });
}

/** What `onboard` writes: the schema's defaults, spelled out. */
const ONBOARD_WRITTEN = { agents: { defaults: { model: 'anthropic/claude-opus-4-5', provider: 'auto' } } };

describe('the model nobody chose', () => {
  const single: [Env, string, string][] = [
    [{ OPENAI_API_KEY: 'sk-o' }, 'openai/gpt-5', 'openai'],
    [{ GEMINI_API_KEY: 'g' }, 'gemini/gemini-2.5-pro', 'gemini'],
    [{ GOOGLE_API_KEY: 'g' }, 'gemini/gemini-2.5-pro', 'gemini'],
    [{ DEEPSEEK_API_KEY: 'd' }, 'deepseek/deepseek-chat', 'deepseek'],
    [{ GROQ_API_KEY: 'q' }, 'groq/llama-3.3-70b-versatile', 'groq'],
    [{ MISTRAL_API_KEY: 'm' }, 'mistral/mistral-large-latest', 'mistral'],
  ];
  for (const config of [{}, ONBOARD_WRITTEN]) {
    for (const [env, model, provider] of single) {
      it(`${Object.keys(env)[0]} alone → ${model} (${Object.keys(config).length ? 'onboard-written' : 'empty'} config)`, async () => {
        const l = await loaded(config);
        const chosen = modelInForce(l, env);
        expect(chosen.model).toBe(model);
        expect(chosen.autoChosen).toContain(model);
        expect(chosen.autoChosen).toContain(`$${Object.keys(env)[0]}`);
        const resolved = resolveModel(l, chosen, env);
        expect(isResolveError(resolved) ? resolved.error : resolved.name).toBe(provider);
        // The provider chain builds for it: `agent -m` would not stop at "No API key for provider anthropic".
        expect(() => buildProvider(l, chosen, env)).not.toThrow();
      });
    }
  }

  it('several keys: the documented order decides', async () => {
    const l = await loaded();
    const all: Env = { MISTRAL_API_KEY: 'm', GROQ_API_KEY: 'q', DEEPSEEK_API_KEY: 'd', GEMINI_API_KEY: 'g' };
    expect(modelInForce(l, all).model).toBe('gemini/gemini-2.5-pro');
    expect(modelInForce(l, { ...all, OPENAI_API_KEY: 'o' }).model).toBe('openai/gpt-5');
    expect(KEY_DEFAULTS.map((d) => d.provider)).toEqual(['openai', 'gemini', 'deepseek', 'groq', 'mistral']);
  });

  it('an Anthropic key, or a gateway key, keeps the default model as it is', async () => {
    const l = await loaded();
    for (const env of [
      { ANTHROPIC_API_KEY: 'a', OPENAI_API_KEY: 'o' },
      { OPENROUTER_API_KEY: 'r', OPENAI_API_KEY: 'o' },
    ]) {
      const chosen = modelInForce(l, env);
      expect(chosen.model).toBe('anthropic/claude-opus-4-5');
      expect(chosen.autoChosen).toBeUndefined();
    }
  });

  it('a key in the config counts like one in the environment', async () => {
    const l = await loaded({ providers: { deepseek: { apiKey: 'sk-d' } } });
    const chosen = modelInForce(l, {});
    expect(chosen.model).toBe('deepseek/deepseek-chat');
    expect(chosen.autoChosen).toContain('providers.deepseek.apiKey');
    // The default 200k window would overrun DeepSeek's 128k: the pick brings its own unless the user set one.
    expect(chosen.contextWindowTokens).toBe(128_000);
    const own = await loaded({
      agents: { defaults: { contextWindowTokens: 64_000 } },
      providers: { deepseek: { apiKey: 'x' } },
    });
    expect(modelInForce(own, {}).contextWindowTokens).toBe(64_000);
  });

  it('a model, provider or preset the user chose is never replaced', async () => {
    const env = { OPENAI_API_KEY: 'o' };
    const chosenByUser = [
      { agents: { defaults: { model: 'claude-sonnet-4-5' } } },
      { agents: { defaults: { model: 'anthropic/claude-opus-4-5', provider: 'anthropic' } } },
      { agents: { defaults: { modelPreset: 'fast' } }, modelPresets: { fast: { model: 'anthropic/claude-opus-4-5' } } },
    ];
    for (const config of chosenByUser) {
      const l = await loaded(config);
      const chosen = modelInForce(l, env);
      expect(chosen.model).toMatch(/claude/);
      expect(chosen.autoChosen).toBeUndefined();
      const resolved = resolveModel(l, chosen, env);
      // Resolved by the usual rules (or their own error): never the "no key at all" one.
      if (isResolveError(resolved)) expect(resolved.error).not.toMatch(/No API key found/);
    }
  });

  it('no key at all: the error lists every variable looked for and `nanobot onboard`', async () => {
    for (const env of [{}, { OPENAI_API_KEY: '  ' }]) {
      const l = await loaded(ONBOARD_WRITTEN);
      const chosen = modelInForce(l, env);
      const resolved = resolveModel(l, chosen, env);
      if (!isResolveError(resolved)) throw new Error('resolved without a key');
      for (const name of [
        'ANTHROPIC_API_KEY',
        'OPENROUTER_API_KEY',
        'OPENAI_API_KEY',
        'GEMINI_API_KEY',
        'GROQ_API_KEY',
      ])
        expect(resolved.error).toContain(name);
      expect(resolved.hint).toContain('nanobot onboard');
      expect(() => buildProvider(l, chosen, env)).toThrow(/No API key found/);
    }
  });

  it('a key of a provider outside the order still gets the "no key" error naming how to use it', async () => {
    const l = await loaded();
    const resolved = resolveModel(l, modelInForce(l, { MOONSHOT_API_KEY: 'k' }), { MOONSHOT_API_KEY: 'k' });
    expect(isResolveError(resolved) && resolved.hint).toContain('agents.defaults.model');
  });
});
