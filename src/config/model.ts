/** The model settings in force: `agents.defaults`, overlaid by the selected `modelPresets.<name>` if any. */
import { UserError } from '../util/errors.js';
import type { Config } from './schema.js';

export interface ModelSettings {
  model: string;
  provider: string;
  maxTokens: number;
  contextWindowTokens: number;
  temperature: number;
  reasoningEffort: string | null;
  /** Preset name, when one is in use. */
  preset?: string;
  /** Set when nanobot chose the model because none was configured (providers/default-model.ts): one line why. */
  autoChosen?: string;
}

export function effectiveModel(config: Config, presetName = config.agents.defaults.modelPreset): ModelSettings {
  const d = config.agents.defaults;
  const base: ModelSettings = {
    model: d.model,
    provider: d.provider,
    maxTokens: d.maxTokens,
    contextWindowTokens: d.contextWindowTokens,
    temperature: d.temperature,
    reasoningEffort: d.reasoningEffort,
  };
  if (!presetName || presetName === 'default') return base;
  const preset = config.modelPresets[presetName];
  if (!preset) {
    const known = Object.keys(config.modelPresets);
    throw new UserError(
      `Model preset "${presetName}" is not defined.`,
      known.length
        ? `Use one of: ${known.join(', ')} (modelPresets in the config).`
        : `Add it under "modelPresets" in the config, or clear agents.defaults.modelPreset.`,
    );
  }
  return {
    model: preset.model,
    provider: preset.provider,
    maxTokens: preset.maxTokens ?? base.maxTokens,
    contextWindowTokens: preset.contextWindowTokens ?? base.contextWindowTokens,
    temperature: preset.temperature ?? base.temperature,
    reasoningEffort: preset.reasoningEffort ?? base.reasoningEffort,
    preset: presetName,
  };
}
