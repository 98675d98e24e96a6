/**
 * The capability settings nanobot's Settings pages save: web search (provider, key or base URL, limits, the Jina
 * reader for fetches), and image generation (settings-image.ts). The WebUI's network access modes have no effect in
 * this version, and voice transcription is set in config.json, so their saves are refused with a 501 that says so.
 */
import { SEARCH_PROVIDERS } from '../tools/web/search-providers.js';
import type { ActionHandler } from './api.js';
import { WebuiApiError } from './api.js';
import { updateImageGeneration } from './settings-image.js';
import { has, optionalBool, optionalInt, optionalText } from './settings-input.js';
import { toolSafetyActions } from './settings-tool-safety.js';
import { configOf, objectAt, writeAndAnswer } from './settings-write.js';

const updateWebSearch: ActionHandler = async (context, payload) => {
  const { config } = configOf(context).loaded();
  const name = (optionalText(payload, 'provider') ?? '').toLowerCase();
  const provider = Object.hasOwn(SEARCH_PROVIDERS, name) ? SEARCH_PROVIDERS[name] : undefined;
  if (!provider) {
    throw new WebuiApiError(
      400,
      `unknown web search provider (this version has: ${Object.keys(SEARCH_PROVIDERS).join(', ')})`,
    );
  }
  const current = config.tools.web.search;
  const sameProvider = current.provider === provider.name;
  const changes: Record<string, unknown> = { provider: provider.name };
  if (provider.needs === 'nothing') {
    changes.apiKey = '';
    changes.baseUrl = '';
  } else if (provider.needs === 'baseUrl') {
    const sent = optionalText(payload, 'base_url');
    const baseUrl = sent || (sameProvider ? current.baseUrl : undefined);
    if (!baseUrl) throw new WebuiApiError(400, 'base_url is required');
    if (sent && !/^https?:\/\/[^\s/]+/i.test(sent))
      throw new WebuiApiError(400, 'base_url must be an http:// or https:// URL');
    if (sent) changes.baseUrl = sent;
    changes.apiKey = '';
  } else {
    // A key left empty keeps the stored one (when the provider stays the same).
    const typed = optionalText(payload, 'api_key');
    const sent = typed?.includes('••') ? undefined : typed; // the hint sent back is no new key
    if (sent) changes.apiKey = sent;
    else if (!(sameProvider && current.apiKey)) throw new WebuiApiError(400, 'api_key is required');
    changes.baseUrl = '';
  }
  const maxResults = optionalInt(payload, 'max_results', 1, 10);
  if (maxResults !== undefined) changes.maxResults = maxResults;
  const timeout = optionalInt(payload, 'timeout', 1, 120);
  if (timeout !== undefined) changes.timeout = timeout;
  const jina = optionalBool(payload, 'use_jina_reader');
  return writeAndAnswer(context, (tree) => {
    const search = objectAt(tree, 'tools', 'web', 'search');
    for (const [key, value] of Object.entries(changes)) {
      if (value === '') delete search[key];
      else search[key] = value;
    }
    if (jina !== undefined) objectAt(tree, 'tools', 'web', 'fetch').useJinaReader = jina;
  });
};

/** A save of a section this version does not act on: refused, naming what to do instead. */
function notInThisVersion(section: string, why: string): ActionHandler {
  return async () => {
    throw new WebuiApiError(501, `${section} is not supported by nanobot-ts yet: ${why}; nothing was saved`);
  };
}

const networkSafety: ActionHandler = async (_context, payload) => {
  if (!has(payload, 'webui_allow_local_service_access') && !has(payload, 'webui_default_access_mode')) {
    throw new WebuiApiError(400, 'webui_allow_local_service_access or webui_default_access_mode is required');
  }
  throw new WebuiApiError(
    501,
    'the WebUI has no Full Access or local-service preview mode in this version; nothing was saved ' +
      '(outbound requests of tools follow tools.ssrfWhitelist in ~/.nanobot/config.json)',
  );
};

export const capabilityActions: Record<string, ActionHandler> = {
  'settings.web_search.update': updateWebSearch,
  'settings.network_safety.update': networkSafety,
  ...toolSafetyActions,
  'settings.image_generation.update': updateImageGeneration,
  'settings.transcription.update': notInThisVersion(
    'Saving voice transcription settings from the WebUI',
    'set transcription.provider (and that provider’s apiKey) in config.json',
  ),
};
