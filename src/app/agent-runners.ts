/** The agent's runners: one per model, built from the config's limits; `/model <preset>` runners built on first use. */
import { type ModelCatalog, memoizeByPreset } from '../agent/commands/index.js';
import { AgentRunner } from '../agent/runner.js';
import type { LoadedConfig } from '../config/load.js';
import { effectiveModel, type ModelSettings } from '../config/model.js';
import { buildProvider, type ProviderChainOptions } from '../providers/chain.js';
import type { LLMProvider } from '../providers/types.js';
import type { ToolRegistry } from '../tools/registry.js';

export type MakeRunner = (model: ModelSettings, provider: LLMProvider, toolbox?: ToolRegistry) => AgentRunner;

/** A runner for a model and provider, with the tools given (default: the agent's) and the configured limits. */
export function runnerFactory(loaded: LoadedConfig, tools: ToolRegistry): MakeRunner {
  const { config } = loaded;
  return (m, runnerProvider, toolbox = tools) =>
    new AgentRunner({
      provider: runnerProvider,
      model: m.model,
      maxTokens: m.maxTokens,
      temperature: m.temperature,
      reasoningEffort: m.reasoningEffort,
      tools: toolbox,
      maxIterations: config.agents.defaults.maxToolIterations,
      contextWindowTokens: m.contextWindowTokens,
      maxToolResultChars: config.agents.defaults.maxToolResultChars,
      maxCallsPerResponse: config.tools.maxCallsPerResponse,
      turnTimeoutMs: config.agents.defaults.turnTimeoutS * 1000,
    });
}

/** Each preset's runner (with its own provider chain sharing the agent's breakers), built once on first use. */
export function presetRunners(
  loaded: LoadedConfig,
  makeRunner: MakeRunner,
  env: NodeJS.ProcessEnv,
  chain: ProviderChainOptions,
): (preset: string) => AgentRunner {
  return memoizeByPreset((preset) => {
    const m = effectiveModel(loaded.config, preset);
    return makeRunner(m, buildProvider(loaded, m, env, chain));
  });
}

/** The default model and every preset's effective settings (for /model). */
export function modelCatalog(loaded: LoadedConfig, model: ModelSettings): () => ModelCatalog {
  const { config } = loaded;
  return () => ({
    default: model,
    presets: Object.fromEntries(Object.keys(config.modelPresets).map((name) => [name, effectiveModel(config, name)])),
  });
}
