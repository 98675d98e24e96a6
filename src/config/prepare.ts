/**
 * What upstream nanobot does to a config tree before validating it, done the same way here: `null` means "unset"
 * for every key (pydantic's `Optional` fields; upstream's own `onboard` writes nulls), old spellings and moved keys
 * are read under their current names, and `agents.defaults.timezoneMode` decides the time zone.
 */
import { isPlainObject, OPAQUE_KEYS } from './keys.js';
import { detectSystemTimezone } from './timezone.js';

/** Other names upstream reads for a key (pydantic aliases), by the parent's path: `[parent, alias, name]`. */
export const KEY_ALIASES: readonly (readonly [string, string, string])[] = [
  ['agents.defaults', 'sessionTtlMinutes', 'idleCompactAfterMinutes'],
  ['agents.defaults.dream', 'model', 'modelOverride'],
  ['tools', 'allowLocalPreviewAccess', 'webuiAllowLocalServiceAccess'],
];

/** Keys upstream moved (its loader's migrations): `[from, to]`, dot paths. */
export const MOVED_KEYS: readonly (readonly [string, string])[] = [
  ['tools.exec.restrictToWorkspace', 'tools.restrictToWorkspace'],
  ['tools.myEnabled', 'tools.my.enable'],
  ['tools.mySet', 'tools.my.allowSet'],
];

export interface PrepareOptions {
  /** The host's time zone, for `timezoneMode: "auto"` (default: detected). */
  systemTimezone?: () => string;
}

/** A copy of a normalised (camelCase) tree, ready for the schema. */
export function prepareTree(tree: Record<string, unknown>, options: PrepareOptions = {}): Record<string, unknown> {
  const out = dropNulls(tree) as Record<string, unknown>;
  for (const [from, to] of MOVED_KEYS) moveKey(out, from.split('.'), to.split('.'));
  for (const [parent, alias, name] of KEY_ALIASES) {
    const path = parent.split('.');
    moveKey(out, [...path, alias], [...path, name]);
  }
  resolveTimezone(out, options.systemTimezone ?? detectSystemTimezone);
  return out;
}

/** Removes every `null` object member (user data under opaque keys such as `extraBody` is kept as written). */
export function dropNulls(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(dropNulls);
  if (!isPlainObject(value)) return value;
  const out: Record<string, unknown> = {};
  for (const [key, child] of Object.entries(value)) {
    if (child === null) continue;
    out[key] = OPAQUE_KEYS.has(key) ? child : dropNulls(child);
  }
  return out;
}

/** Moves `from` to `to` unless `to` is already set (upstream: the current name wins); the old key goes either way. */
function moveKey(tree: Record<string, unknown>, from: string[], to: string[]): void {
  const source = objectAt(tree, from.slice(0, -1), false);
  const key = from.at(-1) as string;
  if (!source || !(key in source)) return;
  const value = source[key];
  delete source[key];
  const target = objectAt(tree, to.slice(0, -1), true);
  const name = to.at(-1) as string;
  if (target && !(name in target)) target[name] = value;
}

function objectAt(tree: Record<string, unknown>, path: string[], create: boolean): Record<string, unknown> | undefined {
  let node = tree;
  for (const key of path) {
    const next = node[key];
    if (isPlainObject(next)) node = next;
    else if (create && next === undefined) node = node[key] = {};
    else return undefined;
  }
  return node;
}

/**
 * Upstream's rule: without `timezoneMode`, a config that names a `timezone` is "manual", one that does not is "auto";
 * "auto" uses the system's zone (so a laptop that travels follows it).
 */
function resolveTimezone(tree: Record<string, unknown>, system: () => string): void {
  const defaults = objectAt(tree, ['agents', 'defaults'], true);
  if (!defaults) return;
  const mode = defaults.timezoneMode ?? ('timezone' in defaults ? 'manual' : 'auto');
  defaults.timezoneMode = mode;
  if (mode === 'auto') defaults.timezone = system();
}
