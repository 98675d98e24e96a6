/**
 * Bridges a tool's zod schema and what models send: the JSON Schema advertised in the prompt, argument
 * aliases (`.meta({ aliases: ['cmd'] })`), casting of stringly-typed values ("5" → 5), and readable
 * validation errors that name each bad parameter.
 */
import { z } from 'zod';
import type { AnyToolSchema } from './types.js';

export type JsonSchema = { [key: string]: unknown };

const isRecord = (value: unknown): value is JsonSchema =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** The full JSON Schema of a tool's arguments, as zod emits it (aliases still included). */
export function rawJsonSchema(schema: AnyToolSchema): JsonSchema {
  // Input mode: parameters with defaults are optional for the model.
  const json = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as JsonSchema;
  delete json.$schema;
  return json;
}

/** The schema to advertise: no `$schema`, no private keys, `additionalProperties: false` on objects. */
export function publicJsonSchema(raw: JsonSchema): JsonSchema {
  const visit = (node: unknown): unknown => {
    if (Array.isArray(node)) return node.map(visit);
    if (!isRecord(node)) return node;
    const out: JsonSchema = {};
    for (const [key, value] of Object.entries(node)) {
      if (key === 'aliases' || key === '$schema') continue;
      // z.int() adds the safe-integer bounds; they only cost prompt tokens.
      if (key === 'maximum' && value === Number.MAX_SAFE_INTEGER) continue;
      if (key === 'minimum' && value === Number.MIN_SAFE_INTEGER) continue;
      out[key] = key === 'properties' && isRecord(value) ? mapValues(value, visit) : visit(value);
    }
    if (out.type === 'object' && isRecord(out.properties) && out.additionalProperties === undefined) {
      out.additionalProperties = false;
    }
    return out;
  };
  return visit(raw) as JsonSchema;
}

function mapValues(record: JsonSchema, fn: (value: unknown) => unknown): JsonSchema {
  return Object.fromEntries(Object.entries(record).map(([key, value]) => [key, fn(value)]));
}

/** Alias → canonical top-level parameter name, from `aliases` metadata. */
export function argumentAliases(raw: JsonSchema): Map<string, string> {
  const aliases = new Map<string, string>();
  const properties = isRecord(raw.properties) ? raw.properties : {};
  for (const [name, property] of Object.entries(properties)) {
    if (!isRecord(property) || !Array.isArray(property.aliases)) continue;
    for (const alias of property.aliases) if (typeof alias === 'string') aliases.set(alias, name);
  }
  return aliases;
}

export function applyAliases(args: JsonSchema, aliases: Map<string, string>): JsonSchema {
  if (aliases.size === 0) return args;
  const out: JsonSchema = {};
  for (const [key, value] of Object.entries(args)) {
    const canonical = aliases.get(key);
    if (canonical === undefined) out[key] = value;
    else if (!(canonical in args)) out[canonical] = value;
  }
  return out;
}

function declaredTypes(schema: JsonSchema): Set<string> {
  const types = new Set<string>();
  const add = (node: unknown) => {
    if (!isRecord(node)) return;
    if (typeof node.type === 'string') types.add(node.type);
    if (Array.isArray(node.type)) for (const t of node.type) if (typeof t === 'string') types.add(t);
    for (const key of ['anyOf', 'oneOf']) if (Array.isArray(node[key])) for (const sub of node[key]) add(sub);
  };
  add(schema);
  return types;
}

const NUMERIC = /^-?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/;

/** Casts values to the declared type where the intent is unambiguous ("5" → 5, "true" → true, 5 → "5"). */
export function coerceToSchema(value: unknown, schema: unknown): unknown {
  if (!isRecord(schema)) return value;
  const types = declaredTypes(schema);
  if (typeof value === 'string' && !types.has('string')) {
    const text = value.trim();
    if ((types.has('number') || types.has('integer')) && NUMERIC.test(text)) {
      const number = Number(text);
      if (types.has('number') || Number.isInteger(number)) return number;
    }
    if (types.has('boolean') && /^(?:true|false)$/i.test(text)) return text.toLowerCase() === 'true';
    if ((types.has('array') && text.startsWith('[')) || (types.has('object') && text.startsWith('{'))) {
      try {
        return coerceToSchema(JSON.parse(text), schema);
      } catch {
        return value;
      }
    }
    return value;
  }
  if ((typeof value === 'number' || typeof value === 'boolean') && types.size === 1 && types.has('string')) {
    return String(value);
  }
  if (Array.isArray(value) && isRecord(schema.items)) return value.map((item) => coerceToSchema(item, schema.items));
  if (isRecord(value) && isRecord(schema.properties)) {
    const properties = schema.properties;
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, coerceToSchema(item, properties[key])]));
  }
  return value;
}

function valueAt(root: unknown, pathKeys: readonly PropertyKey[]): unknown {
  let node = root;
  for (const key of pathKeys) {
    if (!isRecord(node) && !Array.isArray(node)) return undefined;
    node = (node as Record<PropertyKey, unknown>)[key];
  }
  return node;
}

const describeType = (value: unknown): string =>
  Array.isArray(value) ? 'array' : value === null ? 'null' : typeof value;

/** `path: problem` for each zod issue, in words a model can act on. */
export function describeIssues(error: z.ZodError, args: unknown, allowedKeys: string[]): string {
  const lines: string[] = [];
  for (const issue of error.issues) {
    const where = issue.path.length > 0 ? issue.path.map(String).join('.') : '(arguments)';
    if (issue.code === 'unrecognized_keys') {
      const prefix = issue.path.length > 0 ? `${where}.` : '';
      for (const key of issue.keys) {
        lines.push(`${prefix}${key}: unknown parameter (allowed: ${allowedKeys.join(', ')})`);
      }
      continue;
    }
    const value = valueAt(args, issue.path);
    if (issue.code === 'invalid_type' && value === undefined) {
      lines.push(`${where}: missing required parameter`);
    } else if (issue.code === 'invalid_type') {
      lines.push(`${where}: expected ${issue.expected}, got ${describeType(value)}`);
    } else {
      lines.push(`${where}: ${issue.message.replace(/^Invalid input: /, '')}`);
    }
  }
  return lines.join('; ');
}
