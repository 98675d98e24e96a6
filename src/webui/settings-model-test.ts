/**
 * `settings.model.test` (nanobot-ts only; nanobot's WebUI has no such button): one tiny request to a preset, or to
 * a model and provider not saved yet, answering which provider served it and how long it took, as
 * `nanobot doctor --ping` does. A failure is an answer (`ok: false` with the provider's error kind), not a refusal.
 */
import { effectiveModel } from '../config/model.js';
import { resolveModel } from '../providers/chain.js';
import { pingModel } from '../providers/ping.js';
import { isResolveError } from '../providers/resolve.js';
import { collectSecrets, redactSecrets } from '../security/secrets.js';
import type { ActionHandler } from './api.js';
import { WebuiApiError } from './api.js';
import { has, optionalText, requiredText } from './settings-input.js';
import { configOf } from './settings-write.js';

export const testModel: ActionHandler = async (context, payload) => {
  const loaded = configOf(context).loaded();
  const preset = optionalText(payload, 'model_preset') || 'default';
  let target: { model: string; provider: string };
  if (has(payload, 'model')) {
    target = {
      model: requiredText(payload, 'model', 'model is required'),
      provider: optionalText(payload, 'provider') || 'auto',
    };
  } else {
    if (preset !== 'default' && !Object.hasOwn(loaded.config.modelPresets, preset)) {
      throw new WebuiApiError(400, 'unknown model preset');
    }
    target = effectiveModel(loaded.config, preset);
  }
  const secrets = collectSecrets(loaded.config);
  const clean = (text: string) => redactSecrets(text, secrets).slice(0, 500);
  const base = { model_preset: has(payload, 'model') ? null : preset, model: target.model, provider: target.provider };
  const resolved = resolveModel(loaded, target, process.env);
  if (isResolveError(resolved)) {
    return {
      ...base,
      ok: false,
      resolved_provider: null,
      latency_ms: null,
      error: { kind: 'config', message: clean(`${resolved.error} ${resolved.hint}`) },
    };
  }
  const result = await pingModel(loaded, process.env, resolved);
  return result.ok
    ? { ...base, ok: true, resolved_provider: resolved.name, latency_ms: result.ms, answer: clean(result.answer) }
    : {
        ...base,
        ok: false,
        resolved_provider: resolved.name,
        latency_ms: result.ms,
        error: { kind: result.kind, message: clean(result.message) },
      };
};
