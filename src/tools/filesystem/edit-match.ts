/**
 * Text matching for edit_file. Models often get whitespace or quote characters slightly wrong, so after
 * an exact search we retry ignoring indentation and then ignoring curly-vs-straight quotes, adapting the
 * replacement to the file (its indentation, its quote style) so the edit looks as if made by hand.
 * All functions work on LF text; the caller converts CRLF files before and after.
 */

export type MatchStrategy = 'exact' | 'whitespace' | 'quotes' | 'quotes+whitespace';

export interface TextMatch {
  /** Offsets into the content: the text in [start, end) is replaced. */
  start: number;
  end: number;
  /** 1-based line of `start`. */
  line: number;
  replacement: string;
}

export interface MatchResult {
  strategy: MatchStrategy;
  matches: TextMatch[];
}

/** Curly and prime quotes → ASCII; each is one UTF-16 unit, so offsets stay valid. */
export function normaliseQuotes(text: string): string {
  return text.replace(/[\u2018\u2019\u201A\u201B\u2032]/g, "'").replace(/[\u201C\u201D\u201E\u201F\u2033]/g, '"');
}

const lineOf = (content: string, offset: number): number => {
  let line = 1;
  for (let i = content.indexOf('\n'); i !== -1 && i < offset; i = content.indexOf('\n', i + 1)) line++;
  return line;
};

const leadingWhitespace = (line: string): string => /^[ \t]*/.exec(line)?.[0] ?? '';
const normaliseLine = (line: string): string => line.trim().replace(/\s+/g, ' ');
const isBlank = (line: string): boolean => line.trim() === '';

function findExact(content: string, needle: string, replacement: (start: number, end: number) => string): TextMatch[] {
  const matches: TextMatch[] = [];
  if (needle === '') return matches;
  for (let at = content.indexOf(needle); at !== -1; at = content.indexOf(needle, at + needle.length)) {
    matches.push({
      start: at,
      end: at + needle.length,
      line: lineOf(content, at),
      replacement: replacement(at, at + needle.length),
    });
  }
  return matches;
}

/** Drops blank lines at both ends; returns the trimmed lines and how many were dropped at each end. */
function trimBlankLines(lines: string[]): { lines: string[]; head: number; tail: number } {
  let head = 0;
  let tail = lines.length;
  while (head < tail && isBlank(lines[head] as string)) head++;
  while (tail > head && isBlank(lines[tail - 1] as string)) tail--;
  return { lines: lines.slice(head, tail), head, tail: lines.length - tail };
}

/** Shifts `text` from the indentation `from` to the indentation `to`, keeping relative nesting. */
export function reindent(text: string, from: string, to: string): string {
  if (from === to) return text;
  return text
    .split('\n')
    .map((line) => {
      if (isBlank(line)) return '';
      const indent = leadingWhitespace(line);
      if (indent.length >= from.length) return to + line.slice(from.length);
      const keep = Math.max(0, to.length - (from.length - indent.length));
      return to.slice(0, keep) + line.trimStart();
    })
    .join('\n');
}

function findByLines(content: string, searchIn: string, oldText: string, newText: string): TextMatch[] {
  const wanted = trimBlankLines(oldText.split('\n'));
  if (wanted.lines.length === 0) return [];
  const wantedNormalised = wanted.lines.map(normaliseLine);
  // Strip as many blank lines from the replacement as were stripped from old_text.
  let newLines = newText.split('\n');
  for (let i = 0; i < wanted.head && newLines.length > 0 && isBlank(newLines[0] as string); i++)
    newLines = newLines.slice(1);
  for (let i = 0; i < wanted.tail && newLines.length > 0 && isBlank(newLines.at(-1) as string); i++) {
    newLines = newLines.slice(0, -1);
  }
  const replacementBase = newLines.join('\n');
  const oldIndent = leadingWhitespace(wanted.lines[0] as string);

  const lines = searchIn.split('\n');
  const starts: number[] = [];
  let offset = 0;
  for (const line of lines) {
    starts.push(offset);
    offset += line.length + 1;
  }
  const matches: TextMatch[] = [];
  const count = wanted.lines.length;
  for (let i = 0; i + count <= lines.length; i++) {
    let same = true;
    for (let k = 0; k < count && same; k++) same = normaliseLine(lines[i + k] as string) === wantedNormalised[k];
    if (!same) continue;
    const start = starts[i] as number;
    const end = (starts[i + count - 1] as number) + (lines[i + count - 1] as string).length;
    const fileIndent = leadingWhitespace(content.slice(start, end));
    matches.push({ start, end, line: i + 1, replacement: reindent(replacementBase, oldIndent, fileIndent) });
    i += count - 1;
  }
  return matches;
}

/** Rewrites straight quotes in `text` as curly ones where `region` uses curly quotes exclusively. */
export function matchQuoteStyle(text: string, region: string): string {
  const curlyDouble = /[\u201C\u201D]/.test(region) && !region.includes('"');
  const curlySingle = /[\u2018\u2019]/.test(region) && !region.includes("'");
  if (!curlyDouble && !curlySingle) return text;
  let out = '';
  for (let i = 0; i < text.length; i++) {
    const c = text[i] as string;
    const before = i === 0 ? '' : (text[i - 1] as string);
    const opening = before === '' || /[\s([{\u2014\u2013-]/.test(before);
    if (c === '"' && curlyDouble) out += opening ? '\u201C' : '\u201D';
    else if (c === "'" && curlySingle) out += opening ? '\u2018' : '\u2019';
    else out += c;
  }
  return out;
}

/** Finds where `oldText` occurs, trying each strategy in turn; undefined when nothing matches. */
export function findMatches(content: string, oldText: string, newText: string): MatchResult | undefined {
  const exact = findExact(content, oldText, () => newText);
  if (exact.length > 0) return { strategy: 'exact', matches: exact };

  const whitespace = findByLines(content, content, oldText, newText);
  if (whitespace.length > 0) return { strategy: 'whitespace', matches: whitespace };

  const quoteContent = normaliseQuotes(content);
  const quoteOld = normaliseQuotes(oldText);
  const withQuoteStyle = (match: TextMatch): TextMatch => ({
    ...match,
    replacement: matchQuoteStyle(match.replacement, content.slice(match.start, match.end)),
  });
  const quotes = findExact(quoteContent, quoteOld, () => newText).map(withQuoteStyle);
  if (quotes.length > 0) return { strategy: 'quotes', matches: quotes };

  const both = findByLines(content, quoteContent, quoteOld, newText).map(withQuoteStyle);
  if (both.length > 0) return { strategy: 'quotes+whitespace', matches: both };
  return undefined;
}

/** Applies non-overlapping matches (any order) to the content. */
export function applyMatches(content: string, matches: TextMatch[]): string {
  let out = content;
  for (const match of [...matches].sort((a, b) => b.start - a.start)) {
    out = out.slice(0, match.start) + match.replacement + out.slice(match.end);
  }
  return out;
}

function bigrams(text: string): Map<string, number> {
  const counts = new Map<string, number>();
  for (let i = 0; i < text.length - 1; i++) {
    const pair = text.slice(i, i + 2);
    counts.set(pair, (counts.get(pair) ?? 0) + 1);
  }
  return counts;
}

function diceSimilarity(a: Map<string, number>, aSize: number, b: string): number {
  const other = bigrams(b);
  const bSize = Math.max(0, b.length - 1);
  if (aSize + bSize === 0) return 0;
  let shared = 0;
  for (const [pair, count] of other) shared += Math.min(count, a.get(pair) ?? 0);
  return (2 * shared) / (aSize + bSize);
}

export interface SimilarRegion {
  startLine: number;
  endLine: number;
  similarity: number;
}

/** The window of lines most similar to `oldText` (bigram Dice over whitespace-normalised text). */
export function closestRegion(content: string, oldText: string, maxWindows = 20_000): SimilarRegion | undefined {
  const wanted = trimBlankLines(oldText.split('\n')).lines.map(normaliseLine);
  if (wanted.length === 0) return undefined;
  const target = normaliseQuotes(wanted.join('\n'));
  const targetBigrams = bigrams(target);
  const targetSize = Math.max(0, target.length - 1);
  const lines = content.split('\n').map((line) => normaliseQuotes(normaliseLine(line)));
  const windowSize = Math.min(wanted.length, lines.length);
  let best: SimilarRegion | undefined;
  const windows = Math.min(lines.length - windowSize + 1, maxWindows);
  for (let i = 0; i < windows; i++) {
    const similarity = diceSimilarity(targetBigrams, targetSize, lines.slice(i, i + windowSize).join('\n'));
    if (!best || similarity > best.similarity) best = { startLine: i + 1, endLine: i + windowSize, similarity };
  }
  return best;
}

/** The error for an old_text that matched nowhere, showing the most similar region so the model can copy it exactly. */
export function notFoundMessage(displayPath: string, content: string, oldText: string): string {
  const region = closestRegion(content, oldText);
  const head = `old_text was not found in ${displayPath} (also tried ignoring whitespace and quote style).`;
  if (!region || region.similarity < 0.3) return `${head} Read the file again and copy the text exactly.`;
  const shown = content
    .split('\n')
    .slice(region.startLine - 1, Math.min(region.endLine, region.startLine + 29))
    .map((line, i) => `${region.startLine + i}| ${line}`)
    .join('\n');
  const percent = Math.round(region.similarity * 100);
  return `${head}\nThe most similar text (lines ${region.startLine}–${region.endLine}, ${percent}% similar) is:\n${shown}\nCopy old_text exactly from the file.`;
}
