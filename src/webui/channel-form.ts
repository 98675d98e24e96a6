/**
 * A channel form from nanobot's WebUI (`values: {"channels.telegram.token": "…"}` or bare field names): each key
 * must be a field of the channel's setup description, and each value is turned into what config.json holds for
 * that kind. An empty secret keeps the stored one (the form never has it), as nanobot does.
 */
import type { RegisteredChannel } from '../channels/definition.js';
import { type SetupField, setupField } from '../channels/setup.js';
import { WebuiApiError } from './api.js';

const MAX_VALUE_CHARS = 4096;
const MAX_LIST_ITEMS = 500;
const MAX_FIELDS = 64;

/** The parsed form: config.json values per field key; secrets left empty are absent. */
export function parseChannelValues(
  definition: RegisteredChannel,
  values: Readonly<Record<string, unknown>>,
): Record<string, unknown> {
  const entries = Object.entries(values);
  if (entries.length > MAX_FIELDS) throw new WebuiApiError(400, `at most ${MAX_FIELDS} channel fields at once`);
  const parsed: Record<string, unknown> = {};
  const prefix = `channels.${definition.name}.`;
  for (const [rawKey, rawValue] of entries) {
    const key = rawKey.startsWith(prefix) ? rawKey.slice(prefix.length) : rawKey;
    const field = setupField(definition.setup, key);
    if (!field) throw new WebuiApiError(400, `'${rawKey}' cannot be configured from WebUI`);
    const value = coerce(rawKey, field, rawValue);
    if (value !== SKIP) parsed[field.key] = value;
  }
  return parsed;
}

const SKIP = Symbol('skip');

function coerce(rawKey: string, field: SetupField, raw: unknown): unknown {
  switch (field.kind) {
    case 'string':
    case 'secret': {
      const text = scalarText(rawKey, raw);
      return field.kind === 'secret' && !text ? SKIP : text;
    }
    case 'list': {
      if (raw === null || raw === undefined) return [];
      const items = typeof raw === 'string' ? raw.split(',') : Array.isArray(raw) ? raw : undefined;
      if (!items) throw new WebuiApiError(400, `'${rawKey}' must be a comma-separated list`);
      if (items.length > MAX_LIST_ITEMS)
        throw new WebuiApiError(400, `'${rawKey}' has more than ${MAX_LIST_ITEMS} entries`);
      return items.map((item) => scalarText(rawKey, item)).filter(Boolean);
    }
    case 'int': {
      if (raw === '' || raw === null || raw === undefined) return SKIP;
      const number =
        typeof raw === 'number' ? raw : typeof raw === 'string' && /^-?\d+$/.test(raw.trim()) ? Number(raw) : NaN;
      if (!Number.isSafeInteger(number)) throw new WebuiApiError(400, `'${rawKey}' must be a whole number`);
      return number;
    }
    case 'bool': {
      if (typeof raw === 'boolean') return raw;
      const text = typeof raw === 'string' ? raw.trim().toLowerCase() : '';
      if (['true', '1', 'yes', 'on'].includes(text)) return true;
      if (['false', '0', 'no', 'off'].includes(text)) return false;
      throw new WebuiApiError(400, `'${rawKey}' must be true or false`);
    }
    case 'enum': {
      const text = scalarText(rawKey, raw);
      if (!text) return SKIP;
      if (!field.choices?.includes(text)) {
        throw new WebuiApiError(400, `'${rawKey}' must be one of: ${[...(field.choices ?? [])].sort().join(', ')}`);
      }
      return text;
    }
  }
}

function scalarText(rawKey: string, raw: unknown): string {
  if (raw === null || raw === undefined) return '';
  if (typeof raw !== 'string' && typeof raw !== 'number' && typeof raw !== 'boolean') {
    throw new WebuiApiError(400, `'${rawKey}' must be text`);
  }
  const text = String(raw).trim();
  if (text.length > MAX_VALUE_CHARS)
    throw new WebuiApiError(400, `'${rawKey}' is longer than ${MAX_VALUE_CHARS} characters`);
  return text;
}
