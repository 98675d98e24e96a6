/**
 * Exact token counts with bounded work, whatever the text. BPE tokenizers split text into pieces (words, number
 * groups, punctuation runs, whitespace runs) and merge within each piece in time quadratic in its length, on the main
 * thread: one 160,000-letter "word" took 24 s. So the exact tokenizer only ever sees windows of at most
 * `windowChars`, cut where its own pre-tokenizer would cut (before a space or tab that follows a non-space), and only
 * `maxExactChars` of any one text: a longer text is measured on evenly spread windows and scaled up.
 *
 * For ordinary text (under the cap, no piece longer than a window) the sum of the windows equals the whole count,
 * so budgets and the prompt-cache logic see the same numbers as before. A long unbroken run is cut at punctuation,
 * else hard (never inside a surrogate pair); each such cut can move the count by about one token.
 */

export type ExactCount = (text: string) => number;

export interface CountLimits {
  /** Longest text one exact call sees. */
  windowChars: number;
  /** Most characters of one text the exact tokenizer sees in total. */
  maxExactChars: number;
}

export const DEFAULT_COUNT_LIMITS: CountLimits = { windowChars: 1024, maxExactChars: 64 * 1024 };

/** Token count of `text` using `exact` on bounded windows only (see the file comment). */
export function boundedTokenCount(text: string, exact: ExactCount, limits: CountLimits = DEFAULT_COUNT_LIMITS): number {
  const window = Math.max(16, Math.floor(limits.windowChars));
  if (text.length <= limits.maxExactChars) {
    let tokens = 0;
    for (let start = 0; start < text.length; ) {
      const end = cutAt(text, start, window);
      tokens += exact(text.slice(start, end));
      start = end;
    }
    return tokens;
  }
  // Evenly spread samples, the same ones for the same text, so a count is stable from turn to turn.
  const samples = Math.max(1, Math.floor(limits.maxExactChars / window));
  let sampledTokens = 0;
  let sampledChars = 0;
  for (let k = 0; k < samples; k++) {
    const start = alignStart(text, Math.floor((k * text.length) / samples));
    const end = cutAt(text, start, window);
    if (end <= start) continue;
    sampledTokens += exact(text.slice(start, end));
    sampledChars += end - start;
  }
  return sampledChars === 0 ? 0 : Math.round((sampledTokens * text.length) / sampledChars);
}

/** End of the window starting at `start`: the best cut in its second half, else its end. */
function cutAt(text: string, start: number, window: number): number {
  const end = start + window;
  if (end >= text.length) return text.length;
  const floor = start + Math.floor(window / 2);
  for (let i = end; i > floor; i--) if (isPieceBoundary(text, i)) return i;
  for (let i = end; i > floor; i--) if (isPunctuationBoundary(text, i)) return i;
  return isLowSurrogate(text.charCodeAt(end)) ? end - 1 : end;
}

/** A window starting inside a surrogate pair would count half a character. */
function alignStart(text: string, index: number): number {
  return index > 0 && index < text.length && isLowSurrogate(text.charCodeAt(index)) ? index + 1 : index;
}

/**
 * True where cl100k/o200k's pre-tokenizer always starts a new piece: before a space or tab that follows a non-space
 * (no piece takes in whitespace after a non-space character), or before a line break that follows an ASCII letter or
 * digit (punctuation pieces may swallow trailing line breaks, so not after those).
 */
function isPieceBoundary(text: string, i: number): boolean {
  const here = text.charCodeAt(i);
  const before = text.charCodeAt(i - 1);
  if (isSpace(before)) return false;
  if (here === 0x20 || here === 0x09) return true;
  return (here === 0x0a || here === 0x0d) && isAsciiAlnum(before);
}

/** Inside an unbroken run: before ASCII punctuation that follows an ASCII letter or digit (not `'`: contractions). */
function isPunctuationBoundary(text: string, i: number): boolean {
  const here = text.charCodeAt(i);
  return isAsciiPunctuation(here) && here !== 0x27 && isAsciiAlnum(text.charCodeAt(i - 1));
}

function isSpace(code: number): boolean {
  return code === 0x20 || (code >= 0x09 && code <= 0x0d) || code === 0xa0 || code === 0x3000 || code === 0xfeff;
}

function isAsciiAlnum(code: number): boolean {
  return (code >= 0x30 && code <= 0x39) || (code >= 0x41 && code <= 0x5a) || (code >= 0x61 && code <= 0x7a);
}

function isAsciiPunctuation(code: number): boolean {
  return code > 0x20 && code < 0x7f && !isAsciiAlnum(code);
}

function isLowSurrogate(code: number): boolean {
  return code >= 0xdc00 && code <= 0xdfff;
}
