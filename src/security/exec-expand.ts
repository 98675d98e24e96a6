/**
 * What the exec guard can know about a command line before the shell runs it: the variables it assigns, and its
 * words after the expansions those make possible (IFS splitting, `${NAME:-default}`, brace lists).
 */
import { programIndex, programName } from './exec-deny-rules.js';
import type { ShellSegment, ShellWord } from './shell-parse.js';

export const ASSIGNMENT_WORD = /^([A-Za-z_][A-Za-z0-9_]*)=(.*)$/s;
const DECLARATION = new Set(['export', 'declare', 'typeset', 'local', 'readonly']);
const VARIABLE_REFERENCE = /\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?/g;

/**
 * Values of `NAME=value` segments (plain or after export/declare/local/readonly). A nameref (`declare -n r=c`) is
 * kept as `r` = `${c}`, so `$r` expands to whatever `c` holds, and an assignment to `r` sets `c`.
 */
export function collectAssignments(segments: ShellSegment[], into: Map<string, string>): Map<string, string> {
  const result = new Map(into);
  const namerefs = new Map<string, string>();
  for (const segment of segments) {
    let words = segment.words.map((word) => word.value);
    let nameref = false;
    if (DECLARATION.has(words[0] ?? '')) {
      nameref = words.some((word) => /^-[a-zA-Z]*n[a-zA-Z]*$/.test(word));
      words = words.slice(1).filter((word) => !word.startsWith('-'));
    }
    const pairs = words.map((word) => ASSIGNMENT_WORD.exec(word));
    if (pairs.length === 0 || pairs.some((pair) => pair === null)) continue;
    for (const pair of pairs) {
      if (!pair) continue;
      const [name, value] = [pair[1] as string, pair[2] as string];
      if (nameref && /^[A-Za-z_]\w*$/.test(value)) {
        namerefs.set(name, value);
        result.set(name, `\${${value}}`);
      } else result.set(namerefs.get(name) ?? name, value);
    }
  }
  return result;
}

/** The characters the shell splits unquoted expansions on: IFS when the command sets it, else blanks. */
export function splitter(assignments: Map<string, string>): RegExp {
  const ifs = assignments.get('IFS');
  if (ifs === undefined || ifs.trim() === '') return /\s+/;
  return new RegExp(`[${ifs.replace(/[\\\]^-]/g, '\\$&')}]+`);
}

/** `${NAME:-word}` / `${NAME-word}` with NAME unset, and `$NAME` / `${NAME}` the command line assigned. */
function substituteVariables(value: string, assignments: Map<string, string>): string {
  // A few rounds, for namerefs (`$r` is `${c}`, which is `rm`); a self-reference stops at the bound.
  let out = value;
  for (let round = 0; round < 4; round++) {
    const next = substituteOnce(out, assignments);
    if (next === out) break;
    out = next;
  }
  return out;
}

function substituteOnce(value: string, assignments: Map<string, string>): string {
  return value
    .replace(/\$\{([A-Za-z_]\w*):?[-=]([^}]*)\}/g, (_match, name: string, fallback: string) =>
      assignments.has(name) ? (assignments.get(name) as string) : fallback,
    )
    .replace(VARIABLE_REFERENCE, (match, name: string) => assignments.get(name) ?? match);
}

/**
 * Expands what the guard can know before the shell runs: variables the command line assigned (split on IFS as
 * the shell would), `${NAME:-default}`, and brace lists (`{rm,-rf,x}` is `rm -rf x`).
 */
export function expandAssigned(words: ShellWord[], assignments: Map<string, string>): ShellWord[] {
  const split = splitter(assignments);
  return words.flatMap((word) => {
    const brace = word.quoted ? null : /^\{([^{}\s]*,[^{}\s]*)\}$/.exec(word.value);
    if (brace) return (brace[1] as string).split(',').map((part) => ({ value: part, quoted: false }));
    if (!word.value.includes('$')) return [word];
    const value = substituteVariables(word.value, assignments);
    if (value === word.value) return [word];
    // A substitution's source text stays one word, so the rules below can parse it.
    if (word.quoted || /\$\(|`/.test(value)) return [{ value, quoted: word.quoted }];
    return value
      .split(split)
      .filter((part) => part !== '')
      .map((part) => ({ value: part, quoted: false }));
  });
}

/** `$(…) -rf x`, `$CMD -r x`: a program known only at run time, given a recursive flag first. */
export function dynamicRecursiveCall(words: readonly string[]): boolean {
  const start = programIndex(words);
  const name = programName(words[start] ?? '');
  return /[$`)]/.test(name) && /^(?:-[a-zA-Z]*[rR][a-zA-Z]*|--recursive)$/.test(words[start + 1] ?? '');
}
