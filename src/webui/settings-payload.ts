/**
 * `GET /api/settings` and the answer of every settings action: nanobot's SettingsPayload (its webui/src/lib/types.ts),
 * built from the config the gateway runs and the provider registry. Secrets appear only as hints. Sections this
 * version cannot act on (transcription) are shown as configured, read-only.
 */
import { RUNTIME_CAPABILITIES } from '../channels/websocket/bootstrap.js';
import type { LoadedConfig } from '../config/load.js';
import { effectiveModel, type ModelSettings } from '../config/model.js';
import type { Config } from '../config/schema.js';
import { resolveModel } from '../providers/chain.js';
import { findSpec } from '../providers/registry.js';
import { isResolveError } from '../providers/resolve.js';
import { displayUrl, secretHint } from '../security/secret-hints.js';
import { SEARCH_PROVIDERS } from '../tools/web/search-providers.js';
import { packageVersion } from '../util/paths.js';
import { imageGenerationSection } from './settings-image-section.js';
import { oauthStates, providerRows } from './settings-providers.js';

type Env = Record<string, string | undefined>;

const RESTART_BEHAVIOR_BY_SECTION = {
  appearance: 'none',
  models: 'none',
  providers: 'none',
  runtime: 'engineRestart',
  browser: 'engineRestart',
  image: 'engineRestart',
  apps: 'engineRestart',
  advanced: 'appRestart',
} as const;

const DEFAULT_REASONING_EFFORTS = ['', 'low', 'medium', 'high'];

/** The reasoning efforts a model takes, as the picker offers them ("" = the provider's default). */
export function reasoningEffortValues(provider: string | null, model: string): string[] {
  const spec = provider ? findSpec(provider) : undefined;
  if (!spec) return [...DEFAULT_REASONING_EFFORTS];
  const lower = model.toLowerCase();
  const quirks = spec.quirks ?? {};
  if ((quirks.noReasoningEffortModels ?? []).some((pattern) => lower.includes(pattern))) return [''];
  const map = quirks.reasoningEffortMap;
  if (map) {
    const values = [...new Set(Object.values(map).filter((value) => value && value !== 'none'))];
    return ['', ...values];
  }
  return [...DEFAULT_REASONING_EFFORTS];
}

/** The provider a model would run on (its registry or config name), or null when none would serve it. */
function resolvedName(loaded: LoadedConfig, model: Pick<ModelSettings, 'model' | 'provider'>, env: Env) {
  const resolved = resolveModel(loaded, model, env);
  return isResolveError(resolved) ? null : resolved.name;
}

function presetRow(
  loaded: LoadedConfig,
  name: string,
  settings: ModelSettings,
  written: { provider: string; maxTokens?: number; contextWindowTokens?: number; temperature?: number },
  env: Env,
  active: string,
) {
  const resolved = resolvedName(loaded, settings, env);
  return {
    name,
    label: name === 'default' ? 'Default' : name,
    active: active === name,
    is_default: name === 'default',
    model: settings.model,
    provider: written.provider,
    resolved_provider: resolved,
    max_tokens: settings.maxTokens,
    context_window_tokens: settings.contextWindowTokens,
    temperature: settings.temperature,
    reasoning_effort: settings.reasoningEffort,
    reasoning_effort_values: reasoningEffortValues(resolved ?? settings.provider, settings.model),
  };
}

/** nanobot's call order: the active preset then the fallbacks, editable only when all are named presets. */
export function callOrderState(config: Config): { order: string[]; editable: boolean } {
  const defaults = config.agents.defaults;
  const primary = defaults.modelPreset;
  if (!primary || primary === 'default' || !Object.hasOwn(config.modelPresets, primary)) {
    return { order: [], editable: false };
  }
  const order = [primary];
  for (const fallback of defaults.fallbackModels) {
    if (typeof fallback !== 'string') return { order: [], editable: false };
    order.push(fallback);
  }
  return { order, editable: true };
}

function modelSections(loaded: LoadedConfig, oauth: Awaited<ReturnType<typeof oauthStates>>, env: Env) {
  const { config } = loaded;
  const defaults = config.agents.defaults;
  const active = defaults.modelPreset || 'default';
  let effective: ModelSettings;
  try {
    effective = effectiveModel(config);
  } catch {
    effective = effectiveModel(config, null); // a preset name the file does not define: the defaults run
  }
  const resolved = resolveModel(loaded, effective, env);
  const resolvedProvider = isResolveError(resolved) ? null : resolved.name;
  const explicit = effective.provider !== 'auto' ? findSpec(effective.provider)?.name : undefined;
  const presets = [
    presetRow(loaded, 'default', effectiveModel(config, null), defaults, env, active),
    ...Object.entries(config.modelPresets).map(([name, preset]) =>
      presetRow(loaded, name, effectiveModel(config, name), preset, env, active),
    ),
  ];
  const { order, editable } = callOrderState(config);
  return {
    agent: {
      model: effective.model,
      provider: explicit ?? resolvedProvider ?? effective.provider,
      resolved_provider: resolvedProvider,
      has_api_key: !isResolveError(resolved) && !!resolved.apiKey,
      model_preset: active,
      max_tokens: effective.maxTokens,
      context_window_tokens: effective.contextWindowTokens,
      temperature: effective.temperature,
      reasoning_effort: effective.reasoningEffort,
      timezone: defaults.timezone,
      tool_hint_max_length: defaults.toolHintMaxLength,
    },
    model_presets: presets,
    model_call_order: order,
    model_call_order_editable: editable,
    providers: providerRows(loaded, oauth),
  };
}

/** The web search back-ends this version has, with what each needs (nanobot's `credential`). */
export function webSearchProviders(): { name: string; label: string; credential: string }[] {
  return Object.values(SEARCH_PROVIDERS).map((provider) => ({
    name: provider.name,
    label: provider.label,
    credential: provider.needs === 'apiKey' ? 'api_key' : provider.needs === 'baseUrl' ? 'base_url' : 'none',
  }));
}

function rawAt(raw: Record<string, unknown>, path: readonly string[]): unknown {
  let node: unknown = raw;
  for (const key of path)
    node = typeof node === 'object' && node !== null ? (node as Record<string, unknown>)[key] : undefined;
  return node;
}

/** A written secret's hint (the file's text: a `${VAR}` reference is hinted as written, not resolved). */
function hintAt(loaded: LoadedConfig, path: readonly string[], fallback: unknown): string | null {
  const written = rawAt(loaded.raw, path);
  return secretHint(typeof written === 'string' ? written : typeof fallback === 'string' ? fallback : null);
}

function capabilitySections(loaded: LoadedConfig) {
  const { config } = loaded;
  const web = config.tools.web;
  const search = web.search;
  const transcription = config.transcription;
  const known = Object.hasOwn(SEARCH_PROVIDERS, search.provider);
  return {
    web_search: {
      provider: known ? search.provider : 'duckduckgo',
      api_key_hint: hintAt(loaded, ['tools', 'web', 'search', 'apiKey'], search.apiKey),
      base_url: displayUrl(search.baseUrl),
      max_results: search.maxResults,
      timeout: search.timeout,
      providers: webSearchProviders(),
    },
    web: {
      enable: web.enable,
      proxy: displayUrl(web.proxy),
      user_agent: web.userAgent ?? null,
      search: { max_results: search.maxResults, timeout: search.timeout },
      fetch: { use_jina_reader: web.fetch.useJinaReader },
    },
    api: {
      host: config.api.host,
      port: config.api.port,
      timeout: config.api.timeout,
      api_key_hint: hintAt(loaded, ['api', 'apiKey'], config.api.apiKey),
    },
    // No tracing back-end in this version.
    observability: { provider: 'langfuse', configured: false, base_url: 'https://cloud.langfuse.com' },
    transcription: {
      enabled: transcription.enabled,
      provider: transcription.provider ?? 'groq',
      provider_configured: false,
      model: transcription.model ?? '',
      language: transcription.language ?? null,
      max_duration_sec: transcription.maxDurationSec,
      max_upload_mb: transcription.maxUploadMb,
      providers: [],
    },
  };
}

function systemSections(loaded: LoadedConfig) {
  const { config } = loaded;
  const defaults = config.agents.defaults;
  const exec = config.tools.exec;
  const version = packageVersion();
  return {
    runtime: {
      config_path: loaded.configPath,
      workspace_path: loaded.workspace,
      gateway_host: config.gateway.host,
      gateway_port: config.gateway.port,
      heartbeat: {
        enabled: config.gateway.heartbeat.enabled,
        interval_s: config.gateway.heartbeat.intervalS,
        keep_recent_messages: config.gateway.heartbeat.keepRecentMessages,
      },
      dream: {
        schedule: defaults.dream.enabled ? `every ${defaults.dream.intervalH}h` : 'disabled',
      },
      unified_session: defaults.unifiedSession,
    },
    advanced: {
      restrict_to_workspace: config.tools.restrictToWorkspace,
      ssrf_whitelist_count: config.tools.ssrfWhitelist.length,
      // nanobot-ts only: the entries themselves (addresses and ranges, no secrets), for the Tools page.
      ssrf_whitelist: [...config.tools.ssrfWhitelist],
      webui_allow_local_service_access: config.tools.webuiAllowLocalServiceAccess,
      allow_local_preview_access: config.tools.webuiAllowLocalServiceAccess,
      webui_default_access_mode: 'default',
      private_service_protection_enabled: true,
      mcp_server_count: Object.keys(config.tools.mcpServers).length,
      exec_enabled: exec.enable,
      exec_sandbox: exec.sandbox || null,
      exec_path_prepend_set: !!exec.pathPrepend,
      exec_path_append_set: !!exec.pathAppend,
    },
    version: { current: version },
  };
}

export interface PayloadOptions {
  env?: Env;
  /** Sections whose change needs a restart to apply (nanobot's `restart_required_sections`). */
  restartSections?: readonly string[];
}

export async function settingsPayload(loaded: LoadedConfig, options: PayloadOptions = {}) {
  const env = options.env ?? process.env;
  const oauth = await oauthStates(loaded);
  const sections = [...new Set(options.restartSections ?? [])].sort();
  const requiresRestart = sections.length > 0;
  return {
    ...modelSections(loaded, oauth, env),
    ...capabilitySections(loaded),
    image_generation: await imageGenerationSection(loaded, env),
    ...systemSections(loaded),
    requires_restart: requiresRestart,
    surface: 'browser',
    runtime_surface: 'browser',
    runtime_capabilities: { ...RUNTIME_CAPABILITIES },
    restart_behavior_by_section: { ...RESTART_BEHAVIOR_BY_SECTION },
    restart_required_sections: sections,
    apply_state: { status: requiresRestart ? 'pending' : 'idle', sections },
  };
}

export type SettingsPayload = Awaited<ReturnType<typeof settingsPayload>>;
