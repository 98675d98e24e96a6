/**
 * The one-line hint for a tool call the model started (`read_file("notes.md")`), shown by the CLI and sent by the
 * gateway as a progress line. It lives below both surfaces so neither imports the other.
 */
import type { RunnerEvent } from './runner.js';

/** `name("first argument")`, the first argument cut to `maxLength` characters (0: no cut). */
export function toolHint(event: Extract<RunnerEvent, { type: 'tool-start' }>, maxLength: number): string {
  const { name, arguments: raw } = event.call.function;
  let first = '';
  try {
    // The model's arguments: only an object has a first argument; anything else is shown as written.
    const args: unknown = JSON.parse(raw || '{}');
    if (typeof args !== 'object' || args === null || Array.isArray(args)) first = raw;
    else {
      const value: unknown = Object.values(args)[0];
      first = typeof value === 'string' ? value : value === undefined ? '' : JSON.stringify(value);
    }
  } catch {
    first = raw;
  }
  first = first.replace(/\s+/g, ' ');
  if (maxLength > 0 && first.length > maxLength) first = `${first.slice(0, maxLength)}…`;
  return `${name}(${first ? JSON.stringify(first) : ''})`;
}
