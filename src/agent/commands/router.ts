/**
 * CommandRouter: decides whether a message is a slash command, which one, and when it runs (see CommandTier).
 * `/cmd@botname` and upper case are normalised; a command-shaped word nobody registered gets a "did you mean"
 * reply instead of reaching the model. Paths such as `/etc/hosts` are not command-shaped and go to the model.
 */
import type { Command } from './types.js';

/** A single slash, a short word of letters, digits, `-` or `_`, an optional `@botname`, and nothing else. */
const COMMAND_WORD = /^\/([a-z][a-z0-9_-]{0,31})(?:@[a-z0-9_.-]+)?$/i;
const MAX_SUGGESTION_DISTANCE = 2;

export type RouteMatch =
  | { kind: 'command'; command: Command; name: string; args: string }
  | { kind: 'unknown'; name: string; reply: string };

/** Splits a message into a normalised command word and its arguments, or undefined when it is not command-shaped. */
export function parseCommand(content: string): { name: string; args: string } | undefined {
  const text = content.trim();
  const space = text.search(/\s/);
  const word = space === -1 ? text : text.slice(0, space);
  const match = COMMAND_WORD.exec(word);
  if (!match?.[1]) return undefined;
  return { name: `/${match[1].toLowerCase()}`, args: space === -1 ? '' : text.slice(space).trim() };
}

export class CommandRouter {
  private readonly commands = new Map<string, Command>();

  /** Adds a command; a later registration of the same name replaces the earlier one. */
  register(command: Command): this {
    this.commands.set(command.name.toLowerCase(), command);
    return this;
  }

  get(name: string): Command | undefined {
    return this.commands.get(name.toLowerCase());
  }

  /** In registration order, which is the order /help shows. */
  list(): Command[] {
    return [...this.commands.values()];
  }

  /** A registered command, an unknown command-shaped word, or undefined for an ordinary message. */
  match(content: string): RouteMatch | undefined {
    const parsed = parseCommand(content);
    if (!parsed) return undefined;
    const command = this.commands.get(parsed.name);
    if (command) return { kind: 'command', command, ...parsed };
    return { kind: 'unknown', name: parsed.name, reply: this.unknownReply(parsed.name) };
  }

  /** True when the message is handled without the model at once, whatever the session is doing. */
  isImmediate(match: RouteMatch | undefined): boolean {
    return match?.kind === 'unknown' || match?.command.tier === 'priority';
  }

  help(): string {
    const lines = this.list().map((c) => `${c.usage ?? c.name} — ${c.description}`);
    return ['Commands:', ...lines].join('\n');
  }

  private unknownReply(name: string): string {
    const suggestion = this.closest(name);
    if (suggestion) return `Unknown command ${name}. Did you mean ${suggestion}?`;
    return `Unknown command ${name}. Available: ${this.list()
      .map((c) => c.name)
      .join(', ')}`;
  }

  private closest(name: string): string | undefined {
    let best: { name: string; distance: number } | undefined;
    for (const candidate of this.commands.keys()) {
      const distance = editDistance(name, candidate);
      if (distance <= MAX_SUGGESTION_DISTANCE && (!best || distance < best.distance))
        best = { name: candidate, distance };
    }
    return best?.name;
  }
}

/** Damerau–Levenshtein (optimal string alignment): a swapped pair of letters (`/stpo`) costs one edit. */
export function editDistance(a: string, b: string): number {
  const rows: number[][] = Array.from({ length: a.length + 1 }, (_, i) =>
    Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)),
  );
  const at = (i: number, j: number): number => rows[i]?.[j] ?? Number.POSITIVE_INFINITY;
  for (let i = 1; i <= a.length; i++) {
    const row = rows[i] ?? [];
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let value = Math.min(at(i - 1, j) + 1, at(i, j - 1) + 1, at(i - 1, j - 1) + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        value = Math.min(value, at(i - 2, j - 2) + 1);
      row[j] = value;
    }
  }
  return at(a.length, b.length);
}
