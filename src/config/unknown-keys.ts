/**
 * Keys a config sets that neither this version nor upstream knows (a typo such as `modle`): not fatal, since
 * upstream ignores extras too, but reported with the closest known key at that level.
 */
import { z } from 'zod';
import { isPlainObject } from './keys.js';
import { KEY_ALIASES } from './prepare.js';
import { ConfigSchema } from './schema.js';
import { IGNORED_KEYS, isRegistered, UNSUPPORTED_KEYS } from './unsupported.js';

/** Upstream's chat channels (`channels.<name>`); each block's own keys are checked by its channel, not here. */
export const UPSTREAM_CHANNELS: readonly string[] = [
  'dingtalk',
  'discord',
  'email',
  'feishu',
  'matrix',
  'mattermost',
  'mochat',
  'msteams',
  'napcat',
  'qq',
  'signal',
  'slack',
  'telegram',
  'websocket',
  'wecom',
  'weixin',
  'whatsapp',
];

export interface UnknownKey {
  path: string;
  /** The closest known key at that level, if one is close enough to be a typo. */
  suggestion?: string;
}

/** A channel's settings schema by channel name: the channels layer knows them, so its callers pass them in. */
export type ChannelSchemas = Readonly<Record<string, z.ZodType>>;

/**
 * The unknown keys of a normalised (camelCase, null-free) tree. A channel block is checked against its channel's
 * schema when `channelSchemas` has one (a channel this version lacks is reported as a whole, by unsupported.ts).
 */
export function findUnknownKeys(tree: Record<string, unknown>, channelSchemas: ChannelSchemas = {}): UnknownKey[] {
  const found: UnknownKey[] = [];
  walk(tree, ConfigSchema, [], found, channelSchemas);
  return found;
}

function walk(value: unknown, schema: z.ZodType, path: string[], found: UnknownKey[], channels: ChannelSchemas): void {
  const node = unwrap(schema);
  if (node instanceof z.ZodObject && isPlainObject(value)) {
    const shape = node.shape as Record<string, z.ZodType>;
    const isChannels = path.join('.') === 'channels';
    for (const [key, child] of Object.entries(value)) {
      const at = [...path, key];
      const channelSchema = isChannels && Object.hasOwn(channels, key) ? channels[key] : undefined;
      if (channelSchema && isPlainObject(child)) walk(child, channelSchema, at, found, channels);
      else if (isChannels && (key in shape || UPSTREAM_CHANNELS.includes(key)) && isPlainObject(child)) continue;
      else if (key in shape) walk(child, shape[key] as z.ZodType, at, found, channels);
      else if (!isRegistered(at)) {
        const known = [...Object.keys(shape), ...registeredAt(path), ...(isChannels ? UPSTREAM_CHANNELS : [])];
        const suggestion = closest(key, known);
        found.push({ path: at.join('.'), ...(suggestion ? { suggestion } : {}) });
      }
    }
  } else if (node instanceof z.ZodRecord && isPlainObject(value)) {
    for (const [key, child] of Object.entries(value)) {
      walk(child, node.valueType as z.ZodType, [...path, key], found, channels);
    }
  } else if (node instanceof z.ZodArray && Array.isArray(value)) {
    value.forEach((item, i) => {
      walk(item, node.element as z.ZodType, [...path, String(i)], found, channels);
    });
  } else if (node instanceof z.ZodUnion && isPlainObject(value)) {
    const object = (node.options as z.ZodType[]).find((option) => unwrap(option) instanceof z.ZodObject);
    if (object) walk(value, object, path, found, channels);
  }
}

function unwrap(schema: z.ZodType): z.ZodType {
  let node = schema;
  for (;;) {
    if (
      node instanceof z.ZodDefault ||
      node instanceof z.ZodPrefault ||
      node instanceof z.ZodOptional ||
      node instanceof z.ZodNullable
    ) {
      node = node.unwrap() as z.ZodType;
    } else if (node instanceof z.ZodPipe) node = node.in as z.ZodType;
    else return node;
  }
}

/** The registry's keys (and upstream's aliases) one level below `path`, as typo candidates. */
function registeredAt(path: string[]): string[] {
  const patterns = [...UNSUPPORTED_KEYS.map((entry) => entry.path), ...IGNORED_KEYS];
  const keys = patterns
    .map((pattern) => pattern.split('.'))
    .filter(
      (parts) => parts.length === path.length + 1 && path.every((part, i) => parts[i] === '*' || parts[i] === part),
    )
    .map((parts) => parts.at(-1) as string);
  const aliases = KEY_ALIASES.filter(([parent]) => parent === path.join('.')).map(([, alias]) => alias);
  return [...keys, ...aliases];
}

/** The known key nearest to `key` (edit distance, transpositions count one), if near enough to be a typo. */
export function closest(key: string, known: readonly string[]): string | undefined {
  const limit = key.length >= 5 ? 2 : 1;
  let best: string | undefined;
  let bestDistance = limit + 1;
  for (const candidate of known) {
    const distance = editDistance(key.toLowerCase(), candidate.toLowerCase());
    if (distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
    }
  }
  return best;
}

/** Optimal string alignment distance: insertions, deletions, substitutions and adjacent swaps cost one each. */
export function editDistance(a: string, b: string): number {
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) =>
    Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)),
  );
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      const row = d[i] as number[];
      const prev = d[i - 1] as number[];
      row[j] = Math.min((prev[j] as number) + 1, (row[j - 1] as number) + 1, (prev[j - 1] as number) + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        row[j] = Math.min(row[j] as number, ((d[i - 2] as number[])[j - 2] as number) + 1);
      }
    }
  }
  return (d[a.length] as number[])[b.length] as number;
}
