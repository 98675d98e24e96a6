/**
 * Splits a long Markdown reply into parts that each render within a platform's limit. Cuts fall between blocks
 * first (paragraphs, lists, code blocks), then between list items, table rows or lines, then words, and only as a
 * last resort inside a word. A code block cut in two is closed at the end of one part and reopened (with its
 * language) at the start of the next, and a table cut in two repeats its header, so every part stands on its own.
 */
import { lexer, type MarkedToken } from 'marked';

export type RenderFn = (markdown: string) => string;

/** A unit of text, and how to cut it further when it alone is too long. */
interface Piece {
  text: string;
  /** Smaller pieces of this one; absent = cut into lines, words, characters. */
  split?: () => Level;
  /** A block whose lines must be re-wrapped in every part (a code fence, a table header). */
  framed?: { lines: string[]; frame: (lines: string[]) => string };
}

interface Level {
  pieces: Piece[];
  joiner: string;
}

export function splitMarkdown(markdown: string, limit: number, render: RenderFn): string[] {
  return new Splitter(limit, render).run(markdown);
}

class Splitter {
  private readonly parts: string[] = [];
  private current = '';
  private currentSize = 0;

  constructor(
    private readonly limit: number,
    private readonly render: RenderFn,
  ) {}

  run(markdown: string): string[] {
    const whole = markdown.trim();
    if (!whole) return [];
    if (this.fits(whole)) return [whole];
    const pieces = (lexer(whole) as MarkedToken[]).filter((t) => t.type !== 'space' && t.raw.trim()).map(blockPiece);
    this.pack(pieces, '\n\n');
    this.flush();
    return this.parts;
  }

  private size(markdown: string): number {
    return this.render(markdown).length;
  }

  private fits(markdown: string): boolean {
    return this.size(markdown) <= this.limit;
  }

  private joined(addition: string, joiner: string): string {
    return this.current ? `${this.current}${joiner}${addition}` : addition;
  }

  private setCurrent(text: string): void {
    this.current = text;
    this.currentSize = this.size(text);
  }

  private flush(): void {
    const text = this.current.trim();
    if (text) this.parts.push(text);
    this.current = '';
    this.currentSize = 0;
  }

  /**
   * How many items from `from` on fit after the current part: estimated from each item's rendered size (rendering
   * is nearly additive across blocks), then confirmed by rendering the candidate, or bisected when it does not fit.
   */
  private take(
    sizes: number[],
    from: number,
    separator: number,
    overhead: number,
    build: (n: number) => string,
  ): number {
    let size = (this.current ? this.currentSize + separator : 0) + overhead;
    let n = 0;
    while (from + n < sizes.length) {
      const next = size + (n > 0 ? separator : 0) + (sizes[from + n] ?? 0);
      if (next > this.limit) break;
      size = next;
      n += 1;
    }
    if (n === 0) return this.fits(build(1)) ? 1 : 0;
    if (this.fits(build(n))) return n;
    return largestFitting(n - 1, (k) => this.fits(build(k)));
  }

  /** Adds as many pieces as fit to the current part, starting new parts as needed; oversized pieces are cut up. */
  private pack(pieces: Piece[], joiner: string): void {
    const sizes = pieces.map((piece) => this.size(piece.text));
    const build = (from: number) => (n: number) => this.joined(textOf(pieces, from, n, joiner), joiner);
    let i = 0;
    while (i < pieces.length) {
      const taken = this.take(sizes, i, joiner.length, 0, build(i));
      if (taken > 0) {
        this.setCurrent(build(i)(taken));
        i += taken;
        continue;
      }
      if (this.current) {
        this.flush();
        continue;
      }
      const piece = pieces[i] as Piece;
      i += 1;
      if (piece.framed) {
        this.packFramed(piece.framed.lines, piece.framed.frame);
        continue;
      }
      const level = piece.split?.() ?? textLevel(piece.text);
      // A single character wider than the limit (a tiny limit): it goes out alone rather than being lost.
      if (level.pieces.length <= 1) this.parts.push(piece.text);
      else this.pack(level.pieces, level.joiner);
    }
  }

  /** Lines that must sit inside a frame (code fences, a table header) in every part they end up in. */
  private packFramed(lines: string[], frame: (lines: string[]) => string): void {
    const overhead = this.size(frame(['']));
    const sizes = lines.map((line) => this.size(frame([line])) - overhead);
    const build = (from: number) => (n: number) => this.joined(frame(lines.slice(from, from + n)), '\n');
    let i = 0;
    while (i < lines.length) {
      const taken = this.take(sizes, i, 1, overhead, build(i));
      if (taken > 0) {
        this.setCurrent(build(i)(taken));
        i += taken;
        if (i < lines.length) this.flush();
        continue;
      }
      if (this.current) {
        this.flush();
        continue;
      }
      // One line longer than a whole part: cut it by code points (never inside a surrogate pair).
      const chars = Array.from(lines[i] ?? '');
      const cut = Math.max(
        1,
        largestFitting(chars.length, (n) => this.fits(frame([chars.slice(0, n).join('')]))),
      );
      this.parts.push(frame([chars.slice(0, cut).join('')]));
      lines[i] = chars.slice(cut).join('');
      sizes[i] = this.size(frame([lines[i] ?? ''])) - overhead;
      if (lines[i] === '') i += 1;
    }
  }
}

function textOf(pieces: Piece[], from: number, count: number, joiner: string): string {
  return pieces
    .slice(from, from + count)
    .map((p) => p.text)
    .join(joiner);
}

/** The largest n in [0, max] with `ok(n)`, for an `ok` that holds up to some n and fails after (probe, bisect). */
function largestFitting(max: number, ok: (n: number) => boolean): number {
  if (max <= 0 || !ok(1)) return 0;
  let good = 1;
  let bad = max + 1;
  for (let probe = 2; probe <= max; probe *= 2) {
    if (!ok(probe)) {
      bad = probe;
      break;
    }
    good = probe;
  }
  while (bad - good > 1) {
    const middle = Math.floor((good + bad) / 2);
    if (ok(middle)) good = middle;
    else bad = middle;
  }
  return good;
}

function blockPiece(token: MarkedToken): Piece {
  const text = token.raw.replace(/\s+$/, '');
  if (token.type === 'code') {
    const opening = token.codeBlockStyle === 'indented' ? '```' : (text.split('\n', 1)[0] ?? '```').trim();
    const fence = /^(`{3,}|~{3,})/.exec(opening)?.[1] ?? '```';
    const frame = (lines: string[]) => `${opening}\n${lines.join('\n')}\n${fence}`;
    return { text, framed: { lines: token.text.split('\n'), frame } };
  }
  if (token.type === 'table') {
    const [header = '', rule = '', ...rows] = text.split('\n');
    return { text, framed: { lines: rows, frame: (lines) => [header, rule, ...lines].join('\n') } };
  }
  if (token.type === 'list') {
    return {
      text,
      split: () => ({ pieces: token.items.map((item) => ({ text: item.raw.replace(/\s+$/, '') })), joiner: '\n' }),
    };
  }
  return { text };
}

/** Lines, then words, then characters. */
function textLevel(text: string): Level {
  if (text.includes('\n')) return { pieces: text.split('\n').map((line) => ({ text: line })), joiner: '\n' };
  if (text.trim().includes(' ')) return { pieces: text.split(' ').map((word) => ({ text: word })), joiner: ' ' };
  return { pieces: Array.from(text).map((char) => ({ text: char })), joiner: '' };
}
