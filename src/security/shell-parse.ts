/**
 * A small POSIX-shell lexer for the exec guard. It does not run anything; it splits a command line into
 * simple-command segments (on `;` `&&` `||` `|` `&` newlines and parentheses), unquotes words, separates
 * redirections, and lifts the bodies of `$(...)`, backticks and `<(...)` out as segments of their own, so
 * a rule checked per segment also sees what a substitution would run. Best effort: on a syntax error the
 * shell refuses to run the command anyway, so the lexer just stops where the input stops.
 */

export interface ShellWord {
  /** The word with quotes and escapes removed; substitutions are kept as their source text. */
  value: string;
  /** True when any part of the word was quoted or escaped. */
  quoted: boolean;
}

export interface ShellRedirect {
  /** The operator: `>`, `>>`, `>|`, `&>`, `&>>`, `<`, `<>`, `>&`, `<&`, `<<`, `<<-`, `<<<`. */
  op: string;
  target: ShellWord;
}

export interface ShellSegment {
  /** Source text of the segment, trimmed. */
  raw: string;
  words: ShellWord[];
  redirects: ShellRedirect[];
  /** Here-document bodies fed to this segment's stdin. */
  heredocs: string[];
  /** 0 at top level, deeper inside command substitutions. */
  depth: number;
  /** True when the segment's stdin is a pipe from the segment before it at the same depth (`a | b`: b). */
  pipeIn: boolean;
}

interface SegmentBuilder {
  start: number;
  words: ShellWord[];
  redirects: ShellRedirect[];
  heredocs: string[];
  word: ShellWord | undefined;
  pendingRedirect: string | undefined;
  /** Where the segment's source text ends when a comment follows it. */
  rawEnd?: number;
  pipeIn: boolean;
}

interface PendingHeredoc {
  delimiter: string;
  stripTabs: boolean;
  into: string[];
}

const ANSI_C_ESCAPES: Record<string, string> = { n: '\n', t: '\t', r: '\r', a: '\x07', b: '\b', e: '\x1b', v: '\v' };

class ShellLexer {
  private pos = 0;
  private readonly pendingHeredocs: PendingHeredoc[] = [];
  readonly segments: ShellSegment[] = [];

  constructor(private readonly src: string) {}

  /** Parses a command list until the end of input or, when `nested`, an unmatched `)`. */
  parseList(depth: number, nested: boolean): void {
    const { src } = this;
    let parenDepth = 0;
    let seg = this.newBuilder(this.pos);
    while (this.pos < src.length) {
      const c = src[this.pos] as string;
      const next = src[this.pos + 1];
      if (c === ')' && nested && parenDepth === 0) {
        this.endSegment(seg, this.pos, depth);
        this.pos++;
        return;
      }
      if (c === ' ' || c === '\t') {
        this.endWord(seg);
        this.pos++;
      } else if (c === '\n') {
        seg = this.splitAt(seg, depth, 1);
        this.readHeredocBodies();
        seg.start = this.pos;
      } else if (c === '#' && seg.word === undefined) {
        seg.rawEnd = this.pos;
        while (this.pos < src.length && src[this.pos] !== '\n') this.pos++;
      } else if (c === ';') {
        seg = this.splitAt(seg, depth, next === ';' ? 2 : 1);
      } else if (c === '&' && next === '>') {
        this.startRedirect(seg, src[this.pos + 2] === '>' ? '&>>' : '&>');
      } else if (c === '&' || c === '|') {
        seg = this.splitAt(seg, depth, next === c || (c === '|' && next === '&') ? 2 : 1);
        seg.pipeIn = c === '|' && next !== '|';
      } else if (c === '(') {
        parenDepth++;
        seg = this.splitAt(seg, depth, 1);
      } else if (c === ')') {
        parenDepth = Math.max(0, parenDepth - 1);
        seg = this.splitAt(seg, depth, 1);
      } else if ((c === '<' || c === '>') && next === '(') {
        // Process substitution: its body runs as a command of its own.
        const start = this.pos;
        this.pos += 2;
        this.parseList(depth + 1, true);
        this.append(seg, src.slice(start, this.pos), false);
      } else if (c === '<' || c === '>') {
        const fd = seg.word;
        if (fd && !fd.quoted && /^\d+$/.test(fd.value)) seg.word = undefined;
        this.startRedirect(seg, this.readRedirectOp());
      } else {
        this.readWordPart(seg, depth);
      }
    }
    this.endSegment(seg, this.pos, depth);
  }

  private newBuilder(start: number): SegmentBuilder {
    return {
      start,
      words: [],
      redirects: [],
      heredocs: [],
      word: undefined,
      pendingRedirect: undefined,
      pipeIn: false,
    };
  }

  private splitAt(seg: SegmentBuilder, depth: number, width: number): SegmentBuilder {
    this.endSegment(seg, this.pos, depth);
    this.pos += width;
    return this.newBuilder(this.pos);
  }

  private endWord(seg: SegmentBuilder): void {
    const word = seg.word;
    if (!word) return;
    seg.word = undefined;
    if (seg.pendingRedirect === undefined) {
      seg.words.push(word);
      return;
    }
    const op = seg.pendingRedirect;
    seg.pendingRedirect = undefined;
    seg.redirects.push({ op, target: word });
    if (op === '<<' || op === '<<-') {
      this.pendingHeredocs.push({ delimiter: word.value, stripTabs: op === '<<-', into: seg.heredocs });
    }
  }

  private endSegment(seg: SegmentBuilder, end: number, depth: number): void {
    this.endWord(seg);
    if (seg.words.length === 0 && seg.redirects.length === 0) return;
    const raw = this.src.slice(seg.start, seg.rawEnd ?? end).trim();
    const { words, redirects, heredocs, pipeIn } = seg;
    this.segments.push({ raw, words, redirects, heredocs, depth, pipeIn });
  }

  private append(seg: SegmentBuilder, text: string, quoted: boolean): void {
    if (!seg.word) seg.word = { value: '', quoted: false };
    seg.word.value += text;
    if (quoted) seg.word.quoted = true;
  }

  private startRedirect(seg: SegmentBuilder, op: string): void {
    this.endWord(seg);
    if (op.startsWith('&')) this.pos += op.length;
    seg.pendingRedirect = op;
  }

  private readRedirectOp(): string {
    const rest = this.src.slice(this.pos, this.pos + 3);
    const op = ['<<<', '<<-', '>>', '>|', '>&', '<<', '<&', '<>'].find((candidate) => rest.startsWith(candidate));
    const chosen = op ?? (rest[0] as string);
    this.pos += chosen.length;
    return chosen;
  }

  /** Reads one quoted/escaped/plain piece of a word (and any substitution in it). */
  private readWordPart(seg: SegmentBuilder, depth: number): void {
    const { src } = this;
    const c = src[this.pos] as string;
    if (c === "'") {
      const end = src.indexOf("'", this.pos + 1);
      const stop = end === -1 ? src.length : end;
      this.append(seg, src.slice(this.pos + 1, stop), true);
      this.pos = stop + 1;
    } else if (c === '"') {
      this.pos++;
      this.readDoubleQuoted(seg, depth);
    } else if (c === '\\') {
      const escaped = src[this.pos + 1];
      if (escaped !== undefined && escaped !== '\n') this.append(seg, escaped, true);
      this.pos += 2;
    } else if (c === '$') {
      this.readDollar(seg, depth, false);
    } else if (c === '`') {
      this.readBackticks(seg, depth);
    } else {
      this.append(seg, c, false);
      this.pos++;
    }
  }

  private readDoubleQuoted(seg: SegmentBuilder, depth: number): void {
    const { src } = this;
    this.append(seg, '', true);
    while (this.pos < src.length && src[this.pos] !== '"') {
      const c = src[this.pos] as string;
      const next = src[this.pos + 1];
      if (c === '\\' && next !== undefined && '$`"\\\n'.includes(next)) {
        if (next !== '\n') this.append(seg, next, true);
        this.pos += 2;
      } else if (c === '$') {
        this.readDollar(seg, depth, true);
      } else if (c === '`') {
        this.readBackticks(seg, depth);
      } else {
        this.append(seg, c, true);
        this.pos++;
      }
    }
    this.pos++;
  }

  private readDollar(seg: SegmentBuilder, depth: number, inDoubleQuotes: boolean): void {
    const { src } = this;
    const start = this.pos;
    const next = src[this.pos + 1];
    if (next === '(' && src[this.pos + 2] === '(') {
      this.pos = this.matchingClose(this.pos + 1, '(', ')');
    } else if (next === '(') {
      this.pos += 2;
      this.parseList(depth + 1, true);
    } else if (next === '{') {
      this.pos = this.matchingClose(this.pos + 1, '{', '}');
    } else if (next === "'" && !inDoubleQuotes) {
      this.pos += 2;
      this.append(seg, this.readAnsiC(), true);
      return;
    } else {
      this.pos++;
    }
    this.append(seg, src.slice(start, this.pos), inDoubleQuotes);
  }

  private readAnsiC(): string {
    const { src } = this;
    let out = '';
    while (this.pos < src.length && src[this.pos] !== "'") {
      const c = src[this.pos] as string;
      if (c !== '\\') {
        out += c;
        this.pos++;
        continue;
      }
      const e = src[this.pos + 1] ?? '';
      const hex = /^x([0-9a-fA-F]{1,2})/.exec(src.slice(this.pos + 1, this.pos + 4));
      const octal = /^[0-7]{1,3}/.exec(src.slice(this.pos + 1, this.pos + 4));
      if (hex?.[1]) {
        out += String.fromCharCode(Number.parseInt(hex[1], 16));
        this.pos += 1 + hex[0].length;
      } else if (octal) {
        out += String.fromCharCode(Number.parseInt(octal[0], 8));
        this.pos += 1 + octal[0].length;
      } else {
        out += ANSI_C_ESCAPES[e] ?? e;
        this.pos += 2;
      }
    }
    this.pos++;
    return out;
  }

  private readBackticks(seg: SegmentBuilder, depth: number): void {
    const { src } = this;
    const start = this.pos;
    let end = this.pos + 1;
    while (end < src.length && src[end] !== '`') end += src[end] === '\\' ? 2 : 1;
    const inner = src.slice(start + 1, end).replace(/\\([`\\$])/g, '$1');
    const nested = new ShellLexer(inner);
    nested.parseList(depth + 1, false);
    this.segments.push(...nested.segments);
    this.pos = end + 1;
    this.append(seg, src.slice(start, Math.min(this.pos, src.length)), false);
  }

  /** Index just past the bracket matching the one at `open`, skipping quoted text. */
  private matchingClose(open: number, openChar: string, closeChar: string): number {
    const { src } = this;
    let level = 0;
    for (let i = open; i < src.length; i++) {
      const c = src[i];
      if (c === '\\') {
        i++;
      } else if (c === "'") {
        const end = src.indexOf("'", i + 1);
        i = end === -1 ? src.length : end;
      } else if (c === openChar) {
        level++;
      } else if (c === closeChar && --level === 0) {
        return i + 1;
      }
    }
    return src.length;
  }

  /** After a newline: consumes here-document bodies announced on the line just ended. */
  private readHeredocBodies(): void {
    const { src } = this;
    while (this.pendingHeredocs.length > 0) {
      const doc = this.pendingHeredocs.shift() as PendingHeredoc;
      const lines: string[] = [];
      while (this.pos < src.length) {
        const lineEnd = src.indexOf('\n', this.pos);
        const stop = lineEnd === -1 ? src.length : lineEnd;
        const line = src.slice(this.pos, stop);
        this.pos = stop + 1;
        const candidate = doc.stripTabs ? line.replace(/^\t+/, '') : line;
        if (candidate === doc.delimiter) break;
        lines.push(line);
      }
      doc.into.push(lines.join('\n'));
    }
  }
}

/** Splits a shell command line into segments, including those inside substitutions. */
export function parseShellCommand(command: string): ShellSegment[] {
  const lexer = new ShellLexer(command);
  lexer.parseList(0, false);
  return lexer.segments;
}
