/**
 * The providers as nanobot's settings see them: one row per registry entry this version can talk to, plus each
 * user-named endpoint under `providers`, with what is configured (keys only as hints) and what can be edited.
 */
import { join } from 'node:path';
import type { LoadedConfig } from '../config/load.js';
import type { Config, ProviderConfig } from '../config/schema.js';
import { findOAuthProvider, OAUTH_PROVIDERS, TokenStore } from '../providers/oauth/index.js';
import { customSpec, findSpec, normalizeProviderName, PROVIDERS, type ProviderSpec } from '../providers/registry.js';
import { displayUrl, redactSecretMembers, secretHint } from '../security/secret-hints.js';

export interface OAuthState {
  configured: boolean;
  account: string | null;
  expires_at: number | null;
  login_supported: boolean;
}

/** The sign-in of each OAuth provider, read from `<config dir>/auth/`. */
export async function oauthStates(loaded: LoadedConfig, now = Date.now()): Promise<Map<string, OAuthState>> {
  const store = new TokenStore(join(loaded.dataDir, 'auth'), () => undefined);
  const states = new Map<string, OAuthState>();
  for (const def of OAUTH_PROVIDERS) {
    const token = await store.read(def.tokenFile);
    const expires = token?.expiresAt ?? null;
    states.set(def.name, {
      // Copilot's GitHub token does not expire; Codex's renews with its refresh token.
      configured: !!token && (!!token.refresh || expires === null || expires > now),
      account: token?.accountId ?? null,
      expires_at: expires,
      login_supported: true,
    });
  }
  return states;
}

/** The config key of a provider block, however the file spells it (`lm_studio`, `lmStudio`, `lm-studio`). */
export function providerKeyOf(config: Pick<Config, 'providers'>, name: string): string | undefined {
  if (Object.hasOwn(config.providers, name)) return name;
  const wanted = normalizeProviderName(name);
  return Object.keys(config.providers).find((key) => normalizeProviderName(key) === wanted);
}

export function providerBlock(config: Pick<Config, 'providers'>, name: string): ProviderConfig {
  const key = providerKeyOf(config, name);
  return (key ? config.providers[key] : undefined) ?? {};
}

/** The registry entries a settings client may choose (those this version cannot talk to are left out). */
export const SETTINGS_PROVIDERS: readonly ProviderSpec[] = PROVIDERS.filter((spec) => !spec.unsupported);

/** A provider by settings name: a registry entry, or a user-named endpoint under `providers`. */
export function settingsProvider(
  config: Pick<Config, 'providers'>,
  name: string,
): { spec: ProviderSpec; key: string; custom: boolean } | undefined {
  const builtIn = findSpec(name);
  if (builtIn) return builtIn.unsupported ? undefined : { spec: builtIn, key: builtIn.name, custom: false };
  const key = providerKeyOf(config, name);
  return key ? { spec: customSpec(key), key, custom: true } : undefined;
}

export function apiKeyRequired(spec: ProviderSpec): boolean {
  return spec.name !== 'azure_openai' && spec.kind !== 'oauth' && spec.kind !== 'local' && spec.kind !== 'direct';
}

function apiBaseRequired(spec: ProviderSpec): boolean {
  return spec.name === 'azure_openai' || (spec.kind === 'direct' && spec.wire === 'openai' && !spec.defaultApiBase);
}

const filled = (value: unknown): boolean => typeof value === 'string' && value.trim() !== '';

/** nanobot's "configured": signed in, or the one setting the provider cannot work without is there. */
export function providerConfigured(spec: ProviderSpec, block: ProviderConfig, oauth: Map<string, OAuthState>): boolean {
  if (spec.kind === 'oauth') return oauth.get(spec.name)?.configured ?? false;
  if (apiBaseRequired(spec)) return filled(block.apiBase);
  if (apiKeyRequired(spec)) return filled(block.apiKey);
  return filled(block.apiKey) || filled(block.apiBase) || filled(block.region) || filled(block.profile);
}

export type CatalogKind = 'builtin' | 'official' | 'catalog' | 'local' | 'custom' | 'unsupported';

/** Where the model picker's list comes from (nanobot's `model_catalog`): only OpenAI-compatible endpoints list. */
export function catalogKind(spec: ProviderSpec): CatalogKind {
  if (spec.kind === 'oauth') return 'unsupported';
  if (spec.wire !== 'openai' && spec.name !== 'minimax_anthropic') return 'unsupported';
  if (spec.kind === 'local') return 'local';
  if (spec.kind === 'direct') return 'custom';
  if (spec.kind === 'gateway') return 'catalog';
  return 'official';
}

/** The provider settings a client may edit besides the key and base URL (nanobot's `advanced_fields`). */
export function advancedFields(spec: ProviderSpec, custom: boolean): string[] {
  if (spec.kind === 'oauth') return spec.name === 'openai_codex' ? ['extra_body', 'proxy'] : [];
  const fields: string[] = [];
  if (spec.wire === 'openai' || spec.wire === 'anthropic') fields.push('extra_headers');
  if (spec.wire === 'openai' || spec.wire === 'bedrock') fields.push('extra_body');
  if (spec.wire === 'openai') fields.push('extra_query', 'proxy');
  if (spec.name === 'openai') fields.push('api_type');
  if (spec.wire === 'bedrock') fields.push('region', 'profile');
  if (custom) fields.push('thinking_style');
  return fields;
}

const orNull = <T>(value: T | null | undefined): T | null => value ?? null;

/** One provider row; `raw` is the file's block (hints come from what is written, never from the environment). */
export function providerRow(
  name: string,
  spec: ProviderSpec,
  custom: boolean,
  block: ProviderConfig,
  rawBlock: Record<string, unknown> | undefined,
  oauth: Map<string, OAuthState>,
): Record<string, unknown> {
  const displayName = typeof block.displayName === 'string' && block.displayName.trim() ? block.displayName : null;
  const writtenKey = typeof rawBlock?.apiKey === 'string' ? rawBlock.apiKey : block.apiKey;
  const isOAuth = spec.kind === 'oauth';
  const row: Record<string, unknown> = {
    name,
    label: custom ? (displayName ?? name) : spec.label,
    is_custom: custom,
    configured: providerConfigured(spec, block, oauth),
    auth_type: isOAuth ? 'oauth' : 'api_key',
    api_key_required: apiKeyRequired(spec),
    api_key_hint: secretHint(writtenKey),
    api_base: displayUrl(block.apiBase),
    default_api_base: spec.defaultApiBase ?? null,
    model_selectable: true,
    model_catalog: catalogKind(spec),
    advanced_fields: advancedFields(spec, custom),
    extra_headers: redactSecretMembers(orNull(block.extraHeaders)),
    extra_body: redactSecretMembers(orNull(block.extraBody)),
    extra_query: redactSecretMembers(orNull(block.extraQuery)),
    thinking_style: orNull(block.thinkingStyle),
    region: orNull(block.region),
    profile: orNull(block.profile),
    proxy: displayUrl(block.proxy),
  };
  const state = isOAuth ? oauth.get(spec.name) : undefined;
  if (isOAuth) {
    row.oauth_account = state?.account ?? null;
    row.oauth_expires_at = state?.expires_at ?? null;
    row.oauth_login_supported = state?.login_supported ?? false;
  }
  if (spec.name === 'openai') row.api_type = block.apiType ?? 'auto';
  return row;
}

/** Registry entries nanobot's Settings show under another provider's row (`settings_alias_for`). */
const SETTINGS_ALIASES: Readonly<Record<string, string>> = { opencode_zen: 'opencode' };

/** Blocks that hold credentials for something other than chat (nanobot: voice transcription). */
const NOT_CHAT = new Set(['assemblyai']);

/** Every provider row: the registry's, then the user-named endpoints in the file's order. */
export function providerRows(loaded: LoadedConfig, oauth: Map<string, OAuthState>): Record<string, unknown>[] {
  const { config } = loaded;
  const rawProviders = (loaded.raw.providers ?? {}) as Record<string, Record<string, unknown> | undefined>;
  const rows: Record<string, unknown>[] = [];
  for (const spec of SETTINGS_PROVIDERS) {
    if (SETTINGS_ALIASES[spec.name]) continue;
    // A compatibility alias (opencode_zen) shares its provider's row: the one configured is shown.
    const family = [spec, ...SETTINGS_PROVIDERS.filter((alias) => SETTINGS_ALIASES[alias.name] === spec.name)];
    const chosen = family.find((s) => providerConfigured(s, providerBlock(config, s.name), oauth)) ?? spec;
    const key = providerKeyOf(config, chosen.name);
    const rawBlock = key ? rawProviders[key] : undefined;
    rows.push(providerRow(chosen.name, chosen, false, providerBlock(config, chosen.name), rawBlock, oauth));
  }
  for (const [key, block] of Object.entries(config.providers)) {
    if (findSpec(key) || NOT_CHAT.has(key)) continue;
    rows.push(providerRow(key, customSpec(key), true, block, rawProviders[key], oauth));
  }
  return rows;
}

/** Is this the name of an OAuth provider this version can sign in to? */
export function isOAuthProvider(name: string): boolean {
  return findOAuthProvider(name) !== undefined;
}
