/**
 * `GET /api/settings/provider-models?provider=…`: the model picker's list (nanobot's ProviderModelsPayload). Only
 * OpenAI-compatible endpoints list their models; the list is fetched when the user opens the picker, with the key
 * and base URL the provider would use for a chat (config, then the vendor's environment variable). Nothing is made up:
 * a provider that cannot list says so, and the user types the model id.
 */
import { resolveModel } from '../providers/chain.js';
import { listModels } from '../providers/model-list.js';
import { isResolveError } from '../providers/resolve.js';
import type { WebuiApiContext } from './api.js';
import { WebuiApiError } from './api.js';
import { apiKeyRequired, catalogKind, settingsProvider } from './settings-providers.js';
import { configOf } from './settings-write.js';

export async function providerModels(context: WebuiApiContext, query: URLSearchParams) {
  const name = query.get('provider')?.trim();
  if (!name) throw new WebuiApiError(400, 'provider is required');
  const loaded = configOf(context).loaded();
  const found = settingsProvider(loaded.config, name);
  if (!found) throw new WebuiApiError(400, 'unknown provider');
  const { spec, key } = found;
  const kind = catalogKind(spec);
  const base = {
    provider: key,
    label: spec.label,
    catalog_kind: kind,
    models: [] as unknown[],
    model_count: 0,
    message: null as string | null,
    fetched_at: Date.now() / 1000,
  };
  if (kind === 'unsupported') {
    return {
      ...base,
      status: 'unsupported',
      message: 'Model list is not available for this provider. Type a model ID manually.',
    };
  }
  // The provider as a chat would reach it: its base URL and key, from the config or the environment.
  const resolved = resolveModel(loaded, { model: 'settings-model-list', provider: key }, process.env);
  const apiBase = isResolveError(resolved)
    ? (loaded.config.providers[key]?.apiBase ?? spec.defaultApiBase)
    : resolved.apiBase;
  if (!apiBase) {
    return { ...base, status: 'missing_api_base', message: 'Configure an API base URL to load models.' };
  }
  const apiKey = isResolveError(resolved) ? undefined : resolved.apiKey;
  if (isResolveError(resolved) || (apiKeyRequired(spec) && !apiKey)) {
    return { ...base, status: 'not_configured', message: 'Configure this provider before loading models.' };
  }
  const minimax = spec.name === 'minimax_anthropic';
  const outcome = await listModels({
    apiBase: minimax && !/\/v1\/?$/.test(apiBase) ? `${apiBase.replace(/\/+$/, '')}/v1` : apiBase,
    ...(apiKey ? { apiKey } : {}),
    keyHeader: minimax ? 'x-api-key' : 'authorization',
    headers: { ...(spec.defaultHeaders ?? {}), ...(resolved.settings.extraHeaders ?? {}) },
  });
  if (!outcome.ok) return { ...base, status: outcome.status, message: outcome.message };
  return { ...base, status: 'available', models: outcome.models, model_count: outcome.models.length };
}
