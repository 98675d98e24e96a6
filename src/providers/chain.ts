/**
 * The provider an agent runner talks to, built from the config: the model's provider (resolve.ts), priced from
 * `agents.defaults.modelPrices`, followed by `agents.defaults.fallbackModels` behind a circuit breaker
 * (fallback.ts). Shared by the agent wiring, `nanobot status` and `nanobot doctor`, so all three agree.
 */
import { join } from 'node:path';
import type { LoadedConfig } from '../config/load.js';
import { effectiveModel, type ModelSettings } from '../config/model.js';
import { UserError } from '../util/errors.js';
import { type Logger, silentLogger } from '../util/log.js';
import { findPrice, withCost } from './cost.js';
import { chooseModel, isUnchosenDefault, keyVariables, noKeyError } from './default-model.js';
import { CircuitBreakers, createFailoverProvider, type FailoverCandidate } from './fallback.js';
import { createProvider } from './index.js';
import type { ProviderOptions } from './options.js';
import {
  isResolveError,
  type ProviderSettings,
  type ResolvedProvider,
  type ResolveError,
  resolveProvider,
} from './resolve.js';
import type { LLMProvider } from './types.js';

type Env = Record<string, string | undefined>;

/** `providers.<name>` blocks as resolution needs them: every key the user set, without nulls. */
export function providerSettings(loaded: LoadedConfig): Record<string, ProviderSettings> {
  return Object.fromEntries(
    Object.entries(loaded.config.providers).map(([name, block]) => [
      name,
      Object.fromEntries(Object.entries(block).filter(([, value]) => value !== null && value !== undefined)),
    ]),
  );
}

export function resolveModel(
  loaded: LoadedConfig,
  model: Pick<ModelSettings, 'model' | 'provider' | 'preset'>,
  env: Env,
): ResolvedProvider | ResolveError {
  const resolved = resolveProvider({
    model: model.model,
    provider: model.provider,
    providers: providerSettings(loaded),
    env,
    configPath: loaded.configPath,
  });
  // Nothing configured and no key anywhere: name every variable looked for, not just Anthropic's.
  if (isResolveError(resolved) && isUnchosenDefault(model) && !anyKey(loaded, env))
    return noKeyError(loaded.configPath);
  return resolved;
}

/** Is any API key set at all, in the config or in one of the variables the default model looks for? */
function anyKey(loaded: LoadedConfig, env: Env): boolean {
  const inConfig = Object.values(providerSettings(loaded)).some((p) => typeof p.apiKey === 'string' && p.apiKey.trim());
  return inConfig || keyVariables().some((name) => env[name]?.trim());
}

/** `agents.defaults` (or its preset); with no model configured, the one of the provider that has a key. */
export function modelInForce(loaded: LoadedConfig, env: Env): ModelSettings {
  return chooseModel(loaded, (model) => resolveModel(loaded, model, env));
}

/** One entry of `agents.defaults.fallbackModels`, read. */
export interface FallbackModel {
  model: string;
  provider: string;
  maxTokens?: number;
  temperature?: number;
  reasoningEffort?: string | null;
  /** How the config named it: `preset "fast"`, or `fallbackModels[2]`. */
  source: string;
}

/** A string names a preset when one has that name, else it is a model name (routed with provider "auto"). */
export function fallbackModels(loaded: LoadedConfig): FallbackModel[] {
  const { config } = loaded;
  return config.agents.defaults.fallbackModels.map((entry, index) => {
    if (typeof entry === 'string') {
      if (config.modelPresets[entry]) {
        const preset = effectiveModel(config, entry);
        return {
          model: preset.model,
          provider: preset.provider,
          maxTokens: preset.maxTokens,
          temperature: preset.temperature,
          reasoningEffort: preset.reasoningEffort,
          source: `preset "${entry}"`,
        };
      }
      return { model: entry, provider: 'auto', source: `fallbackModels[${index}]` };
    }
    return {
      model: entry.model,
      provider: entry.provider,
      ...(entry.maxTokens !== undefined ? { maxTokens: entry.maxTokens } : {}),
      ...(entry.temperature !== undefined ? { temperature: entry.temperature } : {}),
      ...(entry.reasoningEffort !== undefined ? { reasoningEffort: entry.reasoningEffort } : {}),
      source: `fallbackModels[${index}]`,
    };
  });
}

/** What the adapters need from the config: timeouts, retry mode, where OAuth tokens live. */
export function adapterOptions(loaded: LoadedConfig, env: Env, extra: ProviderOptions = {}): ProviderOptions {
  return {
    timeoutMs: loaded.runtime.llmTimeoutMs,
    streamIdleTimeoutMs: loaded.runtime.streamIdleTimeoutMs,
    retryMode: loaded.config.agents.defaults.providerRetryMode,
    oauth: { authDir: join(loaded.dataDir, 'auth'), env },
    ...extra,
  };
}

export interface ProviderChainOptions {
  /** Shared by every runner of one agent, so a model that keeps failing is skipped by all of them. */
  breakers?: CircuitBreakers;
  log?: Logger;
  /** Test seams for the adapters (fetch, sleep, retry delays). */
  adapter?: ProviderOptions;
}

/**
 * The provider for `model`: throws a UserError naming the missing key when the model itself cannot be resolved.
 * A fallback that cannot be resolved is left out with a warning (`nanobot doctor` lists why).
 */
export function buildProvider(
  loaded: LoadedConfig,
  model: ModelSettings,
  env: Env,
  options: ProviderChainOptions = {},
): LLMProvider {
  const log = options.log ?? silentLogger;
  const adapter = adapterOptions(loaded, env, options.adapter);
  const prices = loaded.config.agents.defaults.modelPrices;
  const make = (resolved: ResolvedProvider) =>
    withCost(createProvider(resolved, adapter), findPrice(prices, resolved.model, resolved.upstreamModel));

  const primary = resolveModel(loaded, model, env);
  if (isResolveError(primary)) throw new UserError(primary.error, primary.hint);
  const candidates: FailoverCandidate[] = [{ label: labelOf(model), provider: make(primary), model: model.model }];
  for (const fallback of fallbackModels(loaded)) {
    const label = labelOf(fallback);
    if (candidates.some((c) => c.label === label)) continue;
    const resolved = resolveModel(loaded, fallback, env);
    if (isResolveError(resolved)) {
      log.warn(`fallback ${fallback.source} (${fallback.model}) is not usable: ${resolved.error} ${resolved.hint}`);
      continue;
    }
    candidates.push({
      label,
      provider: make(resolved),
      model: fallback.model,
      ...(fallback.maxTokens !== undefined ? { maxTokens: fallback.maxTokens } : {}),
      ...(fallback.temperature !== undefined ? { temperature: fallback.temperature } : {}),
      ...(fallback.reasoningEffort !== undefined ? { reasoningEffort: fallback.reasoningEffort } : {}),
    });
  }
  const only = candidates[0];
  if (candidates.length === 1 && only) return only.provider;
  return createFailoverProvider({ candidates, breakers: options.breakers ?? new CircuitBreakers(), log });
}

/** "anthropic/claude-opus-4-5", or "openrouter:anthropic/claude-opus-4-5" when a provider is named explicitly. */
function labelOf(model: { model: string; provider: string }): string {
  return model.provider === 'auto' ? model.model : `${model.provider}:${model.model}`;
}
