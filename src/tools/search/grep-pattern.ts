/**
 * Turns grep's `pattern` into JavaScript regular expressions. Models write ripgrep/PCRE syntax, so a
 * leading `(?i)` is accepted as the case-insensitive flag, and a pattern that is invalid with the `u`
 * flag (e.g. `\-`) is retried without it before it is reported. The pattern is the model's, so it is matched
 * within a time budget (security/bounded-regex.ts): a backtracking pattern fails the search, never stalls the process.
 */
import { BoundedRegex, RegexBudget } from '../../security/bounded-regex.js';

export interface GrepPatternOptions {
  caseInsensitive?: boolean;
  fixedStrings?: boolean;
}

export interface CompiledPattern {
  /** Finds the matching lines of a file (bounded in time). */
  regex: BoundedRegex;
  /**
   * For a case-sensitive pattern that is plain text (the usual identifier search), its UTF-8 bytes: a
   * file without them is rejected with Buffer#indexOf before it is decoded at all.
   */
  literal?: Buffer;
}

const REGEX_SYNTAX = /[\\^$.*+?()[\]{}|]/;

const escapeRegExp = (text: string): string => text.replace(/[\\^$.*+?()[\]{}|/-]/g, '\\$&');

export function compileGrepPattern(
  pattern: string,
  options: GrepPatternOptions = {},
  budget: RegexBudget = new RegexBudget(),
): CompiledPattern | string {
  let source = options.fixedStrings ? escapeRegExp(pattern) : pattern;
  let ignoreCase = options.caseInsensitive === true;
  if (!options.fixedStrings && source.startsWith('(?i)')) {
    source = source.slice(4);
    ignoreCase = true;
  }
  const flags = ignoreCase ? 'i' : '';
  const plain = options.fixedStrings || !REGEX_SYNTAX.test(pattern);
  const literal = plain && !ignoreCase ? { literal: Buffer.from(pattern, 'utf8') } : {};
  let firstError: unknown;
  for (const unicode of ['u', '']) {
    try {
      return { regex: new BoundedRegex(source, flags + unicode, budget), ...literal };
    } catch (error) {
      firstError ??= error;
    }
  }
  const reason = firstError instanceof Error ? firstError.message : String(firstError);
  return (
    `Error: invalid regular expression ${JSON.stringify(pattern)}: ${reason}. ` +
    'Fix the pattern (JavaScript regex syntax), or set fixed_strings to search for the text literally.'
  );
}
