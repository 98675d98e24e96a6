/**
 * JSON read at a boundary (a file, an HTTP body) and checked against a zod schema instead of cast: a bad or partial
 * value becomes a problem that names its source and what is wrong, never a crash or a wrongly-typed value.
 */
import type { z } from 'zod';

export type JsonResult<T> = { ok: true; value: T } | { ok: false; problem: string };

/** Parses `text` and validates it; `source` (a path, "webhook body") starts the problem text. */
export function parseJsonAs<S extends z.ZodType>(text: string, schema: S, source: string): JsonResult<z.output<S>> {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    const reason = text.trim() === '' ? 'it is empty' : (error as Error).message;
    return { ok: false, problem: `${source} is not valid JSON: ${reason}` };
  }
  const checked = schema.safeParse(raw);
  if (checked.success) return { ok: true, value: checked.data };
  return { ok: false, problem: `${source} has the wrong shape: ${describeIssues(checked.error)}` };
}

/** The first few issues as `path: message` (`pending.0.code: Invalid input: expected string, received number`). */
export function describeIssues(error: z.ZodError): string {
  const shown = error.issues.slice(0, 3).map((issue) => {
    const path = issue.path.map(String).join('.');
    return path ? `${path}: ${issue.message}` : issue.message;
  });
  const more = error.issues.length - shown.length;
  return more > 0 ? `${shown.join('; ')} (and ${more} more)` : shown.join('; ');
}
