/**
 * The model when the user has not chosen one. The config's default (`anthropic/claude-opus-4-5`) is written into
 * config.json by `onboard` (ours and nanobot's alike), so seeing it there does not mean the user picked Anthropic:
 * when that model has no key but another provider does, the model of the first provider with a key in
 * KEY_DEFAULTS' order is used instead, and one line says so. Every other model setting is the user's and is
 * never second-guessed.
 */
import type { LoadedConfig } from '../config/load.js';
import { effectiveModel, type ModelSettings } from '../config/model.js';
import { AgentDefaultsSchema } from '../config/schema.js';
import { findSpec } from './registry.js';
import { isResolveError, type ResolvedProvider, type ResolveError } from './resolve.js';

/** A provider's model for newcomers, and the context window to assume when the config keeps the default one. */
export interface KeyDefault {
  provider: string;
  model: string;
  contextWindowTokens?: number;
}

/**
 * The preference order when several keys are present (README "Providers"). Anthropic comes first through the
 * config default itself, then any gateway with a key (OpenRouter, …: they serve that default model as it is).
 */
export const KEY_DEFAULTS: readonly KeyDefault[] = [
  { provider: 'openai', model: 'openai/gpt-5' },
  { provider: 'gemini', model: 'gemini/gemini-2.5-pro' },
  { provider: 'deepseek', model: 'deepseek/deepseek-chat', contextWindowTokens: 128_000 },
  { provider: 'groq', model: 'groq/llama-3.3-70b-versatile', contextWindowTokens: 128_000 },
  { provider: 'mistral', model: 'mistral/mistral-large-latest', contextWindowTokens: 128_000 },
];

const schemaDefaults = AgentDefaultsSchema.parse({});

/** `agents.defaults` as the schema fills it in: the model nobody chose. */
export function isUnchosenDefault(model: Pick<ModelSettings, 'model' | 'provider' | 'preset'>): boolean {
  return (
    model.preset === undefined &&
    model.model === schemaDefaults.model &&
    model.provider.trim().toLowerCase() === schemaDefaults.provider
  );
}

export type Resolve = (model: Pick<ModelSettings, 'model' | 'provider'>) => ResolvedProvider | ResolveError;

/**
 * The model in force: `agents.defaults` (or its preset), except that the unchosen default falls over to the first
 * provider in KEY_DEFAULTS' order that has a key, with `autoChosen` saying so.
 */
export function chooseModel(loaded: LoadedConfig, resolve: Resolve): ModelSettings {
  const configured = effectiveModel(loaded.config);
  if (!isUnchosenDefault(configured) || !isResolveError(resolve(configured))) return configured;
  for (const entry of KEY_DEFAULTS) {
    const candidate: ModelSettings = {
      ...configured,
      model: entry.model,
      ...(entry.contextWindowTokens !== undefined &&
      configured.contextWindowTokens === schemaDefaults.contextWindowTokens
        ? { contextWindowTokens: entry.contextWindowTokens }
        : {}),
    };
    const resolved = resolve(candidate);
    if (isResolveError(resolved) || resolved.name !== entry.provider) continue;
    const source = resolved.keySource === 'config' ? `providers.${entry.provider}.apiKey` : resolved.keySource;
    return {
      ...candidate,
      autoChosen: `No model configured and no Anthropic key: using ${entry.model} (key from ${source}); set agents.defaults.model to choose another.`,
    };
  }
  return configured;
}

/** Every variable the unchosen default looks for, in preference order (for the "no key at all" error). */
export function keyVariables(): string[] {
  const names = ['anthropic', 'openrouter', ...KEY_DEFAULTS.map((d) => d.provider)];
  return names.flatMap((name) => {
    const spec = findSpec(name);
    return spec?.envKey ? [spec.envKey, ...(spec.envKeyAliases ?? [])] : [];
  });
}

/** The unchosen default found no key at all: name the variables looked for and the setup command. */
export function noKeyError(configPath: string): ResolveError {
  return {
    error: `No API key found: nanobot looked for ${keyVariables().join(', ')} and for providers.<name>.apiKey in ${configPath}.`,
    hint:
      'Export one of them, or set agents.defaults.model to a model of your provider (its own variable works then, ' +
      'e.g. moonshot/kimi-k2.5 with MOONSHOT_API_KEY), or run `nanobot onboard --wizard` to pick provider, key and model.',
  };
}
