/**
 * Key-shape normalisation: nanobot accepts snake_case and camelCase and writes camelCase.
 * Map-like blocks keep their keys as written (provider names such as `lm_studio`, MCP server names,
 * header names, env var names); only the structural keys inside them are converted.
 */

type Json = unknown;

/** Paths (dot-joined, `*` = any key) whose children are user-named entries. */
const NAMED_ENTRY_PARENTS = [
  'providers',
  'modelPresets',
  'tools.mcpServers',
  'agents.defaults.modelPrices',
  // MoChat's per-group / per-panel rules are keyed by MoChat ids, which may hold underscores.
  'channels.mochat.groups',
];
/** Keys whose whole value is user data: never converted. */
export const OPAQUE_KEYS: ReadonlySet<string> = new Set(['extraHeaders', 'extraBody', 'extraQuery', 'env', 'headers']);

export const snakeToCamel = (key: string): string => key.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Returns a copy of `value` with structural keys in camelCase. */
export function normalizeKeys(value: Json, path: string[] = []): Json {
  if (Array.isArray(value)) return value.map((item) => normalizeKeys(item, path));
  if (!isPlainObject(value)) return value;
  const parentIsNamed = NAMED_ENTRY_PARENTS.includes(path.join('.'));
  const out: Record<string, unknown> = {};
  for (const [rawKey, child] of Object.entries(value)) {
    const key = parentIsNamed ? rawKey : snakeToCamel(rawKey);
    out[key] = OPAQUE_KEYS.has(key) ? child : normalizeKeys(child, [...path, key]);
  }
  return out;
}

/** Is `path` a position whose key is a user-chosen name (e.g. `providers.lm_studio`)? */
export function isNamedEntry(parentPath: string[]): boolean {
  return NAMED_ENTRY_PARENTS.includes(parentPath.join('.'));
}
