/**
 * `settings.provider.update` and `settings.provider.create`: a provider's key, base URL and advanced settings, and
 * new user-named OpenAI-compatible endpoints. A key left empty keeps the stored key; secret members of the JSON maps
 * come back as a placeholder and keep their stored value; a proxy or base URL sent back as shown keeps its password.
 */
import { normalizeProviderName, PROVIDERS } from '../providers/registry.js';
import { parseProxyUrl } from '../security/proxy.js';
import { restoreSecretMembers, restoreUrl } from '../security/secret-hints.js';
import type { ActionHandler } from './api.js';
import { WebuiApiError } from './api.js';
import { has, optionalJsonObject, optionalText, requiredText } from './settings-input.js';
import { advancedFields, settingsProvider } from './settings-providers.js';
import { configOf, providerBlocks, type Tree, writeAndAnswer } from './settings-write.js';

type Payload = Readonly<Record<string, unknown>>;

const TEXT_FIELDS = ['api_base', 'api_type', 'proxy', 'thinking_style', 'region', 'profile', 'display_name'] as const;
const MAP_FIELDS = ['extra_headers', 'extra_body', 'extra_query'] as const;
const THINKING_STYLES = new Set(['thinking_type', 'enable_thinking', 'reasoning_split']);
const API_TYPES = new Set(['auto', 'chat_completions', 'responses']);
const camel = (snake: string) => snake.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());

/** The provider settings a request names: `undefined` = leave as is, `null` = remove. */
type Updates = Map<string, string | Record<string, unknown> | null>;

function readUpdates(payload: Payload): Updates {
  const updates: Updates = new Map();
  const key = optionalText(payload, 'api_key');
  // Empty, absent, or the hint sent back: the stored key stays.
  if (key && !key.includes('••')) updates.set('api_key', key);
  for (const field of TEXT_FIELDS) {
    if (!has(payload, field)) continue;
    const value = optionalText(payload, field) ?? '';
    updates.set(field, value || (field === 'api_type' ? 'auto' : null));
  }
  for (const field of MAP_FIELDS) {
    if (has(payload, field)) updates.set(field, optionalJsonObject(payload, field) ?? null);
  }
  return updates;
}

function checkValues(updates: Updates): void {
  const apiBase = updates.get('api_base');
  if (typeof apiBase === 'string' && !/^https?:\/\/[^\s/]+/i.test(apiBase)) {
    throw new WebuiApiError(400, 'api_base must be an http:// or https:// URL');
  }
  const proxy = updates.get('proxy');
  if (typeof proxy === 'string') {
    const checked = parseProxyUrl(proxy, 'proxy');
    if (!checked.ok) throw new WebuiApiError(400, checked.reason);
  }
  const style = updates.get('thinking_style');
  if (typeof style === 'string' && !THINKING_STYLES.has(style)) {
    throw new WebuiApiError(400, 'thinking_style must be thinking_type, enable_thinking or reasoning_split');
  }
  const apiType = updates.get('api_type');
  if (typeof apiType === 'string' && !API_TYPES.has(apiType)) {
    throw new WebuiApiError(400, 'api_type must be auto, chat_completions or responses');
  }
  const headers = updates.get('extra_headers');
  const query = updates.get('extra_query');
  for (const [name, map] of [
    ['extra_headers', headers],
    ['extra_query', query],
  ] as const) {
    if (map && typeof map === 'object' && Object.values(map).some((value) => typeof value !== 'string')) {
      throw new WebuiApiError(400, `${name} values must be strings`);
    }
  }
  const name = updates.get('display_name');
  if (typeof name === 'string' && name.length > 80) {
    throw new WebuiApiError(400, 'provider name must be 80 characters or fewer');
  }
}

/** Writes `updates` into a provider block of the file's tree. */
function apply(block: Tree, updates: Updates): void {
  for (const [field, value] of updates) {
    const key = camel(field);
    const current = block[key];
    let next: unknown = value;
    if (MAP_FIELDS.includes(field as (typeof MAP_FIELDS)[number]) && value !== null) {
      next = restoreSecretMembers(value, current);
    } else if ((field === 'proxy' || field === 'api_base') && typeof value === 'string') {
      next = restoreUrl(value, typeof current === 'string' ? current : null);
    }
    if (next === null || next === undefined) delete block[key];
    else block[key] = next;
  }
}

/** The label a provider is shown under, for the "already exists" check (registry labels count too). */
function labelTaken(providers: Record<string, Tree>, label: string, except?: string): boolean {
  const wanted = label.trim().toLowerCase();
  if (PROVIDERS.some((spec) => spec.label.trim().toLowerCase() === wanted)) return true;
  return Object.entries(providers).some(([key, block]) => {
    if (key === except) return false;
    const shown = typeof block?.displayName === 'string' && block.displayName ? block.displayName : key;
    return shown.trim().toLowerCase() === wanted;
  });
}

/** The block of `key` in the file's tree, found however the file spells the name. */
function blockFor(tree: Tree, key: string): Tree {
  const blocks = providerBlocks(tree);
  const wanted = normalizeProviderName(key);
  const existing = Object.hasOwn(blocks, key)
    ? key
    : Object.keys(blocks).find((k) => normalizeProviderName(k) === wanted);
  const name = existing ?? key;
  const block = blocks[name];
  if (typeof block !== 'object' || block === null || Array.isArray(block)) blocks[name] = {};
  return blocks[name] as Tree;
}

const updateProvider: ActionHandler = async (context, payload) => {
  const { config } = configOf(context).loaded();
  const found = settingsProvider(config, requiredText(payload, 'provider', 'provider is required'));
  if (!found) throw new WebuiApiError(400, 'unknown provider');
  const { spec, key, custom } = found;
  const updates = readUpdates(payload);
  if (spec.name !== 'openai') updates.delete('api_type'); // only OpenAI's block chooses its wire API
  const allowed =
    spec.kind === 'oauth'
      ? new Set(advancedFields(spec, false))
      : new Set(['api_key', 'api_base', ...advancedFields(spec, custom), ...(custom ? ['display_name'] : [])]);
  const refused = [...updates.keys()].filter((field) => !allowed.has(field)).sort();
  if (refused.length) {
    if (spec.kind === 'oauth') {
      throw new WebuiApiError(
        400,
        `${spec.label} signs in with OAuth: only ${[...allowed].join(' and ') || 'nothing'} can be set`,
      );
    }
    throw new WebuiApiError(400, `${refused[0]} is not supported for this provider`);
  }
  if (updates.has('display_name') && !updates.get('display_name')) {
    throw new WebuiApiError(400, 'provider name is required');
  }
  checkValues(updates);
  const label = updates.get('display_name');
  if (typeof label === 'string' && labelTaken(config.providers as Record<string, Tree>, label, key)) {
    throw new WebuiApiError(409, 'provider already exists');
  }
  return writeAndAnswer(context, (tree) => apply(blockFor(tree, key), updates));
};

const CREATE_FIELDS = new Set([
  'api_key',
  'api_base',
  'proxy',
  'extra_headers',
  'extra_body',
  'extra_query',
  'thinking_style',
  'display_name',
]);

const createProvider: ActionHandler = async (context, payload) => {
  const { config } = configOf(context).loaded();
  const label = (has(payload, 'name') ? optionalText(payload, 'name') : optionalText(payload, 'display_name')) ?? '';
  if (!label) throw new WebuiApiError(400, 'provider name is required');
  const updates = readUpdates(payload);
  const refused = [...updates.keys()].filter((field) => !CREATE_FIELDS.has(field)).sort();
  if (refused.length) throw new WebuiApiError(400, `${refused[0]} is not supported for a custom provider`);
  if (!updates.get('api_base')) throw new WebuiApiError(400, 'API base is required');
  updates.set('display_name', label);
  updates.set('api_type', 'auto');
  checkValues(updates);
  if (labelTaken(config.providers as Record<string, Tree>, label))
    throw new WebuiApiError(409, 'provider already exists');
  const key = customKey(Object.keys(config.providers), label);
  return writeAndAnswer(
    context,
    (tree) => {
      const blocks = providerBlocks(tree);
      if (Object.hasOwn(blocks, key)) throw new WebuiApiError(409, 'provider already exists');
      blocks[key] = {};
      apply(blocks[key] as Tree, updates);
    },
    { created_provider: key },
  );
};

/** nanobot's key for a new endpoint: `custom-<slug>`, numbered when taken (never a registry name). */
function customKey(existing: readonly string[], label: string): string {
  const slug = label
    .trim()
    .toLowerCase()
    .replace(/[^a-z0-9_-]+/g, '-')
    .replace(/^[-_]+|[-_]+$/g, '');
  const base = `custom-${slug || 'provider'}`.slice(0, 56).replace(/[-_]+$/, '');
  const taken = new Set(existing.map(normalizeProviderName));
  let candidate = base;
  for (let suffix = 2; taken.has(normalizeProviderName(candidate)) || settingsProviderName(candidate); suffix++) {
    candidate = `${base}-${suffix}`;
  }
  return candidate;
}

const settingsProviderName = (name: string) => PROVIDERS.some((spec) => spec.name === normalizeProviderName(name));

export const providerActions: Record<string, ActionHandler> = {
  'settings.provider.update': updateProvider,
  'settings.provider.create': createProvider,
};
