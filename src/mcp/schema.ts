/**
 * An MCP tool's `inputSchema` (JSON Schema) as the zod object the tool registry works with. Each top-level property
 * becomes `z.unknown()` carrying the property's own JSON Schema as metadata, so the schema advertised to the model is
 * the server's, unchanged, while the registry still checks required and unknown parameters and casts stringly-typed
 * values by the declared types. Deeper validation is the server's job: it has the real schema and says what is wrong.
 */
import { z } from 'zod';
import type { JsonSchema } from '../tools/schema.js';
import type { AnyToolSchema } from '../tools/types.js';

const isRecord = (value: unknown): value is JsonSchema =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** Nested `$ref`s are expanded this deep; a recursive type ends as an untyped `{}` below that. */
const MAX_REF_DEPTH = 8;

/** Keys that would change what zod does with the metadata (`id` registers a shared definition) or that lose meaning once refs are inlined. */
const DROPPED_KEYS = new Set(['id', '$id', '$schema', '$defs', 'definitions']);

export function parametersFromJsonSchema(inputSchema: unknown): AnyToolSchema {
  const root = isRecord(inputSchema) ? inputSchema : {};
  const properties = isRecord(root.properties) ? root.properties : {};
  const required = new Set(Array.isArray(root.required) ? root.required.filter((k) => typeof k === 'string') : []);
  const entries = Object.entries(properties).map(([name, property]) => {
    const meta = cleanMeta(inlineRefs(isRecord(property) ? property : {}, root, 0));
    const field = required.has(name) ? z.unknown().nonoptional() : z.unknown().optional();
    return [name, field.meta(meta)] as const;
  });
  // fromEntries defines own properties, so a parameter named `__proto__` stays a parameter.
  return z.object(Object.fromEntries(entries));
}

function cleanMeta(schema: JsonSchema): JsonSchema {
  return Object.fromEntries(Object.entries(schema).filter(([key]) => !DROPPED_KEYS.has(key)));
}

/** Replaces local `$ref`s (`#/$defs/X`, `#/definitions/X`, any `#/…` pointer) with the schema they point at. */
function inlineRefs(node: unknown, root: JsonSchema, depth: number): JsonSchema {
  if (!isRecord(node)) return {};
  const ref = node.$ref;
  if (typeof ref === 'string') {
    const { $ref: _ref, ...siblings } = node;
    const target = depth < MAX_REF_DEPTH ? resolvePointer(root, ref) : undefined;
    return {
      ...(target === undefined ? {} : inlineRefs(target, root, depth + 1)),
      ...mapChildren(siblings, root, depth),
    };
  }
  return mapChildren(node, root, depth);
}

function mapChildren(node: JsonSchema, root: JsonSchema, depth: number): JsonSchema {
  const out: JsonSchema = {};
  for (const [key, value] of Object.entries(node)) {
    if (key === '$defs' || key === 'definitions') continue;
    if (Array.isArray(value)) out[key] = value.map((item) => (isRecord(item) ? inlineRefs(item, root, depth) : item));
    else if (isRecord(value) && (key === 'properties' || key === 'patternProperties')) {
      out[key] = Object.fromEntries(Object.entries(value).map(([name, sub]) => [name, inlineRefs(sub, root, depth)]));
    } else out[key] = isRecord(value) ? inlineRefs(value, root, depth) : value;
  }
  return out;
}

/** A JSON Pointer inside this schema (`#/$defs/Point`); remote references are not followed. */
function resolvePointer(root: JsonSchema, ref: string): unknown {
  if (!ref.startsWith('#')) return undefined;
  let pointer: string;
  try {
    pointer = decodeURIComponent(ref.slice(1));
  } catch {
    return undefined;
  }
  if (pointer === '') return root;
  if (!pointer.startsWith('/')) return undefined;
  let current: unknown = root;
  for (const raw of pointer.slice(1).split('/')) {
    const part = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    if (Array.isArray(current)) current = current[Number(part)];
    else if (isRecord(current) && Object.hasOwn(current, part)) current = current[part];
    else return undefined;
  }
  return current;
}
