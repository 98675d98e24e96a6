/**
 * Turns grep's `pattern` into JavaScript regular expressions. Models write ripgrep/PCRE syntax, so a
 * leading `(?i)` is accepted as the case-insensitive flag, and a pattern that is invalid with the `u`
 * flag (e.g. `\-`) is retried without it before it is reported.
 */

export interface GrepPatternOptions {
  caseInsensitive?: boolean;
  fixedStrings?: boolean;
}

export interface CompiledPattern {
  /** Tests one line (no `\n` inside). */
  line: RegExp;
  /** Tests a whole file at once (`m` flag), a cheap filter before splitting it into lines. */
  wholeText: RegExp;
  /**
   * For a case-sensitive pattern that is plain text (the usual identifier search), its UTF-8 bytes: a
   * file without them is rejected with Buffer#indexOf before it is decoded at all.
   */
  literal?: Buffer;
}

const REGEX_SYNTAX = /[\\^$.*+?()[\]{}|]/;

const escapeRegExp = (text: string): string => text.replace(/[\\^$.*+?()[\]{}|/-]/g, '\\$&');

export function compileGrepPattern(pattern: string, options: GrepPatternOptions = {}): CompiledPattern | string {
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
      const line = new RegExp(source, flags + unicode);
      return { line, wholeText: new RegExp(source, `${flags + unicode}m`), ...literal };
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
