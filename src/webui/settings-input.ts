/**
 * Reading a settings action's payload as nanobot does: each member may come in snake_case or camelCase, numbers and
 * booleans as JSON values or as the strings nanobot's query form carries, JSON maps as objects or as JSON text.
 * Unknown members are ignored; a member of the wrong type is a 400 that names it.
 */
import { z } from 'zod';
import { WebuiApiError } from './api.js';

type Payload = Readonly<Record<string, unknown>>;

const camel = (snake: string) => snake.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());

/** Is the member present (in either spelling)? */
export function has(payload: Payload, name: string): boolean {
  return Object.hasOwn(payload, name) || Object.hasOwn(payload, camel(name));
}

/** The member's value in either spelling (snake_case first, as nanobot). */
export function member(payload: Payload, name: string): unknown {
  if (Object.hasOwn(payload, name)) return payload[name];
  const alias = camel(name);
  return Object.hasOwn(payload, alias) ? payload[alias] : undefined;
}

function parse<T>(schema: z.ZodType<T>, value: unknown, message: string): T {
  const result = schema.safeParse(value);
  if (!result.success) throw new WebuiApiError(400, message);
  return result.data;
}

/** A text member, trimmed; undefined when absent. Over 4096 characters is refused (no setting is that long). */
export function optionalText(payload: Payload, name: string): string | undefined {
  const value = member(payload, name);
  if (value === undefined || value === null) return undefined;
  const text = parse(z.string(), value, `${name} must be a string`);
  if (text.length > 4096) throw new WebuiApiError(400, `${name} is too long (at most 4096 characters)`);
  return text.trim();
}

export function requiredText(payload: Payload, name: string, message = `${name} is required`): string {
  const value = optionalText(payload, name);
  if (!value) throw new WebuiApiError(400, message);
  return value;
}

const integer = z.union([
  z.int(),
  z
    .string()
    .trim()
    .regex(/^-?\d{1,15}$/)
    .transform(Number),
]);
const decimal = z.union([
  z.number(),
  z
    .string()
    .trim()
    .regex(/^-?\d+(\.\d+)?$/)
    .transform(Number),
]);

export function optionalInt(
  payload: Payload,
  name: string,
  min: number,
  max = Number.MAX_SAFE_INTEGER,
): number | undefined {
  const value = member(payload, name);
  if (value === undefined || value === null || value === '') return undefined;
  const parsed = parse(integer, value, `${name} must be an integer`);
  if (parsed < min || parsed > max) {
    throw new WebuiApiError(
      400,
      max === Number.MAX_SAFE_INTEGER ? `${name} must be at least ${min}` : `${name} must be between ${min} and ${max}`,
    );
  }
  return parsed;
}

export function optionalNumber(payload: Payload, name: string, min: number, max: number): number | undefined {
  const value = member(payload, name);
  if (value === undefined || value === null || value === '') return undefined;
  const parsed = parse(decimal, value, `${name} must be a number`);
  if (!Number.isFinite(parsed) || parsed < min || parsed > max) {
    throw new WebuiApiError(400, `${name} must be between ${min} and ${max}`);
  }
  return parsed;
}

const bool = z.union([
  z.boolean(),
  z
    .string()
    .trim()
    .toLowerCase()
    .pipe(z.enum(['1', '0', 'true', 'false', 'yes', 'no']))
    .transform((value) => ['1', 'true', 'yes'].includes(value)),
]);

export function optionalBool(payload: Payload, name: string): boolean | undefined {
  const value = member(payload, name);
  if (value === undefined || value === null) return undefined;
  return parse(bool, value, `${name} must be boolean`);
}

/** A JSON-object member (an object or its JSON text); null when cleared ("" or null), undefined when absent. */
export function optionalJsonObject(payload: Payload, name: string): Record<string, unknown> | null | undefined {
  if (!has(payload, name)) return undefined;
  let value = member(payload, name);
  if (value === null || value === '') return null;
  if (typeof value === 'string') {
    if (value.length > 65_536) throw new WebuiApiError(400, `${name} is too long`);
    if (!value.trim()) return null;
    try {
      value = JSON.parse(value);
    } catch {
      throw new WebuiApiError(400, `${name} must be a JSON object`);
    }
  }
  const parsed = parse(z.record(z.string(), z.unknown()), value, `${name} must be a JSON object`);
  return Object.keys(parsed).length ? parsed : null;
}

/** A list of names (a JSON array, or its JSON text). */
export function optionalNameList(payload: Payload, name: string): string[] | undefined {
  let value = member(payload, name);
  if (value === undefined || value === null) return undefined;
  if (typeof value === 'string') {
    try {
      value = JSON.parse(value);
    } catch {
      throw new WebuiApiError(400, `${name} must be a JSON array`);
    }
  }
  return parse(z.array(z.string().max(256)).max(64), value, `${name} must be a list of names`).map((item) =>
    item.trim(),
  );
}
