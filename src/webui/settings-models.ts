/**
 * Settings › Models, in nanobot's shapes: `GET /api/settings`, the model picker's catalog, and the actions that
 * change the model in use, the model presets and their call order (nanobot/webui/settings_models.py for the facts).
 * Every change goes through config.json (ConfigAccess) and is answered with the fresh SettingsPayload.
 */
import { isTimeZone } from '../config/timezone.js';
import type { ActionHandler, WebuiApiContext, WebuiApiModule } from './api.js';
import { WebuiApiError } from './api.js';
import { capabilityActions } from './settings-capabilities.js';
import {
  has,
  member,
  optionalInt,
  optionalNameList,
  optionalNumber,
  optionalText,
  requiredText,
} from './settings-input.js';
import { testModel } from './settings-model-test.js';
import { oauthActions } from './settings-oauth.js';
import { callOrderState } from './settings-payload.js';
import { providerActions } from './settings-provider-actions.js';
import { providerModels } from './settings-provider-models.js';
import { oauthStates, providerBlock, providerConfigured, settingsProvider } from './settings-providers.js';
import { agentDefaults, answer, configOf, modelPresets, type Tree, writeAndAnswer } from './settings-write.js';

type Payload = Readonly<Record<string, unknown>>;

/** The context sizes nanobot's model form offers for the default model. */
const CONTEXT_WINDOW_OPTIONS = new Set([65_536, 200_000, 262_144, 500_000, 1_048_576]);

/** A chat provider the model may name: `auto`, or one that is configured (signed in, or its key/base is set). */
export async function checkChatProvider(context: WebuiApiContext, provider: string): Promise<void> {
  if (provider === 'auto') return;
  const loaded = configOf(context).loaded();
  const found = settingsProvider(loaded.config, provider);
  if (!found) throw new WebuiApiError(400, 'unknown provider');
  const block = providerBlock(loaded.config, found.key);
  if (!providerConfigured(found.spec, block, await oauthStates(loaded))) {
    throw new WebuiApiError(400, 'provider is not configured');
  }
}

/** A preset name as the user typed it (nanobot keeps the one visible name, no slug). */
function presetName(value: string): string {
  const name = value.trim();
  if (!name) throw new WebuiApiError(400, 'configuration name is required');
  if (name.toLowerCase() === 'default') throw new WebuiApiError(400, 'configuration name is reserved');
  if (name.length > 48) throw new WebuiApiError(400, 'configuration name must be 48 characters or fewer');
  // Control characters, and names that would be read as a path or a prototype member.
  if (/[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/u.test(name) || name === '__proto__') {
    throw new WebuiApiError(400, 'configuration name contains unsupported characters');
  }
  return name;
}

/** nanobot's slug for a preset named by an old client's `label`. */
function slugName(label: string): string {
  const slug = label
    .trim()
    .toLowerCase()
    .replace(/[^a-z0-9_-]+/g, '-')
    .replace(/^[-_]+|[-_]+$/g, '')
    .slice(0, 48)
    .replace(/[-_]+$/, '');
  if (!slug) throw new WebuiApiError(400, 'configuration name is required');
  if (slug === 'default') throw new WebuiApiError(400, 'configuration name is reserved');
  return slug;
}

const nameTaken = (presets: Record<string, unknown>, name: string, except?: string) =>
  Object.keys(presets).some((existing) => existing !== except && existing.toLowerCase() === name.toLowerCase());

function uniqueName(presets: Record<string, unknown>, label: string): string {
  let base: string;
  try {
    base = slugName(label);
  } catch {
    base = 'model';
  }
  let candidate = base;
  for (let suffix = 2; nameTaken(presets, candidate); suffix++) candidate = `${base}-${suffix}`;
  return candidate;
}

/** `reasoning_effort`: "" clears it (the provider's default). */
function reasoningEffort(payload: Payload): string | null | undefined {
  if (!has(payload, 'reasoning_effort')) return undefined;
  const value = member(payload, 'reasoning_effort');
  if (value === null) return null;
  return optionalText(payload, 'reasoning_effort')?.slice(0, 32) || null;
}

const updateAgent: ActionHandler = async (context, payload) => {
  const loaded = configOf(context).loaded();
  const changes: ((defaults: Tree) => void)[] = [];
  if (has(payload, 'model_preset')) {
    const preset = optionalText(payload, 'model_preset') ?? '';
    const value = !preset || preset === 'default' ? null : preset;
    if (value !== null && !Object.hasOwn(loaded.config.modelPresets, value)) {
      throw new WebuiApiError(400, 'unknown model preset');
    }
    changes.push((d) => {
      d.modelPreset = value;
    });
  }
  if (has(payload, 'model')) {
    const model = requiredText(payload, 'model', 'model is required');
    changes.push((d) => {
      d.model = model;
    });
  }
  if (has(payload, 'provider')) {
    const provider = requiredText(payload, 'provider', 'provider is required');
    await checkChatProvider(context, provider);
    const written = settingsProvider(loaded.config, provider)?.key ?? provider;
    changes.push((d) => {
      d.provider = provider === 'auto' ? 'auto' : written;
    });
  }
  const contextWindow = optionalInt(payload, 'context_window_tokens', 1);
  if (contextWindow !== undefined) {
    if (!CONTEXT_WINDOW_OPTIONS.has(contextWindow)) {
      throw new WebuiApiError(400, 'context_window_tokens must be 65536, 200000, 262144, 500000, or 1048576');
    }
    changes.push((d) => {
      d.contextWindowTokens = contextWindow;
    });
  }
  if (has(payload, 'timezone')) {
    const zone = requiredText(payload, 'timezone', 'timezone is required');
    if (!isTimeZone(zone)) throw new WebuiApiError(400, 'invalid timezone');
    changes.push((d) => {
      d.timezone = zone;
      d.timezoneMode = 'manual';
    });
  }
  const hintLength = optionalInt(payload, 'tool_hint_max_length', 20, 500);
  if (hintLength !== undefined) {
    changes.push((d) => {
      d.toolHintMaxLength = hintLength;
    });
  }
  if (!changes.length) return answer(context);
  return writeAndAnswer(context, (tree) => {
    const defaults = agentDefaults(tree);
    for (const change of changes) change(defaults);
  });
};

/** The generation settings of a preset form (positive integers, temperature 0-2). */
function generationSettings(payload: Payload) {
  return {
    maxTokens: optionalInt(payload, 'max_tokens', 1),
    contextWindowTokens: optionalInt(payload, 'context_window_tokens', 1),
    temperature: optionalNumber(payload, 'temperature', 0, 2),
    reasoningEffort: reasoningEffort(payload),
  };
}

const createPreset: ActionHandler = async (context, payload) => {
  const loaded = configOf(context).loaded();
  const model = requiredText(payload, 'model', 'model is required');
  const provider = requiredText(payload, 'provider', 'provider is required');
  const rawName = optionalText(payload, 'name');
  const name = rawName !== undefined ? presetName(rawName) : slugName(optionalText(payload, 'label') ?? '');
  if (nameTaken(loaded.config.modelPresets, name)) throw new WebuiApiError(409, 'configuration already exists');
  await checkChatProvider(context, provider);
  const settings = generationSettings(payload);
  const base = loaded.config.agents.defaults;
  const preset = {
    model,
    provider: provider === 'auto' ? 'auto' : (settingsProvider(loaded.config, provider)?.key ?? provider),
    maxTokens: settings.maxTokens ?? base.maxTokens,
    contextWindowTokens: settings.contextWindowTokens ?? base.contextWindowTokens,
    temperature: settings.temperature ?? base.temperature,
    reasoningEffort: settings.reasoningEffort === undefined ? base.reasoningEffort : settings.reasoningEffort,
  };
  return writeAndAnswer(
    context,
    (tree) => {
      const presets = modelPresets(tree);
      if (nameTaken(presets, name)) throw new WebuiApiError(409, 'configuration already exists');
      presets[name] = preset;
    },
    { created_model_preset: name },
  );
};

/** Renames a preset and every reference to it (the model in use, the fallbacks, Dream's model). */
function renamePreset(tree: Tree, from: string, to: string): void {
  const presets = modelPresets(tree);
  if (nameTaken(presets, to, from)) throw new WebuiApiError(409, 'configuration already exists');
  tree.modelPresets = Object.fromEntries(
    Object.entries(presets).map(([key, value]) => [key === from ? to : key, value]),
  );
  const defaults = agentDefaults(tree);
  if (defaults.modelPreset === from) defaults.modelPreset = to;
  if (Array.isArray(defaults.fallbackModels)) {
    defaults.fallbackModels = defaults.fallbackModels.map((entry) => (entry === from ? to : entry));
  }
  const dream = defaults.dream;
  if (typeof dream === 'object' && dream !== null && (dream as Tree).modelOverride === from) {
    (dream as Tree).modelOverride = to;
  }
}

function presetToChange(payload: Payload, presets: Record<string, unknown>): string {
  const name = optionalText(payload, 'name') ?? '';
  if (!name || name === 'default') throw new WebuiApiError(400, 'model configuration is required');
  if (!Object.hasOwn(presets, name)) throw new WebuiApiError(400, 'unknown model configuration');
  return name;
}

const updatePreset: ActionHandler = async (context, payload) => {
  const loaded = configOf(context).loaded();
  const name = presetToChange(payload, loaded.config.modelPresets);
  const newName = has(payload, 'new_name') ? presetName(optionalText(payload, 'new_name') ?? '') : undefined;
  const model = has(payload, 'model') ? requiredText(payload, 'model', 'model is required') : undefined;
  const provider = has(payload, 'provider') ? requiredText(payload, 'provider', 'provider is required') : undefined;
  if (provider !== undefined) await checkChatProvider(context, provider);
  const settings = generationSettings(payload);
  return writeAndAnswer(context, (tree) => {
    let key = name;
    if (newName !== undefined && newName !== name) {
      renamePreset(tree, name, newName);
      key = newName;
    }
    const preset = modelPresets(tree)[key];
    if (!preset) throw new WebuiApiError(400, 'unknown model configuration');
    if (model !== undefined) preset.model = model;
    if (provider !== undefined) {
      preset.provider = provider === 'auto' ? 'auto' : (settingsProvider(loaded.config, provider)?.key ?? provider);
    }
    if (settings.maxTokens !== undefined) preset.maxTokens = settings.maxTokens;
    if (settings.contextWindowTokens !== undefined) preset.contextWindowTokens = settings.contextWindowTokens;
    if (settings.temperature !== undefined) preset.temperature = settings.temperature;
    if (settings.reasoningEffort !== undefined) preset.reasoningEffort = settings.reasoningEffort;
  });
};

const deletePreset: ActionHandler = async (context, payload) => {
  const { config } = configOf(context).loaded();
  const name = presetToChange(payload, config.modelPresets);
  const defaults = config.agents.defaults;
  if (defaults.modelPreset === name || defaults.fallbackModels.includes(name)) {
    throw new WebuiApiError(409, 'remove the model preset from the call order first');
  }
  return writeAndAnswer(context, (tree) => {
    delete modelPresets(tree)[name];
  });
};

/** Turns the model in use and inline fallbacks into named presets, so the call order can be edited. */
const migratePresets: ActionHandler = async (context) => {
  const { config } = configOf(context).loaded();
  const defaults = config.agents.defaults;
  const needsPrimary = !defaults.modelPreset || defaults.modelPreset === 'default';
  const inline = defaults.fallbackModels.some((entry) => typeof entry !== 'string');
  if (!needsPrimary && !inline) return answer(context);
  return writeAndAnswer(context, (tree) => {
    const presets = modelPresets(tree);
    const d = agentDefaults(tree);
    const label = (model: string) => model.split('/').pop() || model;
    if (needsPrimary) {
      const name = uniqueName(presets, label(defaults.model));
      presets[name] = {
        model: defaults.model,
        provider: defaults.provider,
        maxTokens: defaults.maxTokens,
        contextWindowTokens: defaults.contextWindowTokens,
        temperature: defaults.temperature,
        reasoningEffort: defaults.reasoningEffort,
      };
      d.modelPreset = name;
    }
    const primary = config.agents.defaults;
    d.fallbackModels = defaults.fallbackModels.map((entry) => {
      if (typeof entry === 'string') return entry;
      const name = uniqueName(presets, label(entry.model));
      presets[name] = {
        model: entry.model,
        provider: entry.provider,
        maxTokens: entry.maxTokens ?? primary.maxTokens,
        contextWindowTokens:
          typeof entry.contextWindowTokens === 'number' ? entry.contextWindowTokens : primary.contextWindowTokens,
        temperature: entry.temperature ?? primary.temperature,
        reasoningEffort: entry.reasoningEffort ?? null,
      };
      return name;
    });
  });
};

const updateCallOrder: ActionHandler = async (context, payload) => {
  const { config } = configOf(context).loaded();
  const order = optionalNameList(payload, has(payload, 'order') ? 'order' : 'preset_names');
  if (order === undefined) throw new WebuiApiError(400, 'model call order is required');
  if (!order.length || order.some((name) => !name)) {
    throw new WebuiApiError(400, 'model call order must contain at least one preset');
  }
  if (!callOrderState(config).editable) {
    throw new WebuiApiError(409, 'convert the existing model configuration to presets first');
  }
  const unknown = order.find((name) => !Object.hasOwn(config.modelPresets, name));
  if (unknown !== undefined) throw new WebuiApiError(400, `unknown model preset: ${unknown.slice(0, 64)}`);
  const [primary, ...fallbacks] = order;
  return writeAndAnswer(context, (tree) => {
    const d = agentDefaults(tree);
    d.modelPreset = primary;
    d.fallbackModels = fallbacks;
  });
};

export const settingsModelsModule: WebuiApiModule = {
  routes: {
    settings: (context) => answer(context),
    'settings/provider-models': (context, { query }) => providerModels(context, query),
  },
  actions: {
    'settings.agent.update': updateAgent,
    'settings.model_configuration.create': createPreset,
    'settings.model_configuration.update': updatePreset,
    'settings.model_configuration.delete': deletePreset,
    'settings.model_configuration.migrate': migratePresets,
    'settings.model_call_order.update': updateCallOrder,
    'settings.model.test': testModel,
    ...providerActions,
    ...oauthActions,
    ...capabilityActions,
  },
};
