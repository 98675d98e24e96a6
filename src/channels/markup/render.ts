/**
 * Markdown (what the model writes) → the markup of one platform. marked's lexer parses; the walk below writes
 * through a FlavourWriter. The output comes from a token tree, so tags always nest and close: half-written Markdown
 * (an open ``` while streaming, a stray `**`) still renders to markup the platform accepts.
 */
import { lexer, type MarkedToken, type Token, type Tokens } from 'marked';
import { FLAVOURS, type FlavourWriter, type MarkupFlavour } from './flavours.js';

export type { MarkupFlavour } from './flavours.js';

const SAFE_LINK = /^(https?:|mailto:|tg:)/i;
const ENTITIES: Record<string, string> = { '&amp;': '&', '&lt;': '<', '&gt;': '>', '&quot;': '"', '&#39;': "'" };

export function renderMarkdown(markdown: string, flavour: MarkupFlavour): string {
  return renderWith(markdown, FLAVOURS[flavour]);
}

/** Markdown through a platform's own writer (Signal marks styled ranges in plain text with one). */
export function renderWith(markdown: string, writer: FlavourWriter): string {
  return new Walker(writer).blocks(lexer(markdown), 0).trim();
}

class Walker {
  constructor(private readonly writer: FlavourWriter) {}

  blocks(tokens: readonly Token[], quoteDepth: number, separator = '\n\n'): string {
    return tokens
      .map((token) => this.block(token as MarkedToken, quoteDepth))
      .filter((part) => part !== '')
      .join(separator);
  }

  private block(token: MarkedToken, quoteDepth: number): string {
    const w = this.writer;
    switch (token.type) {
      case 'space':
      case 'def':
        return '';
      case 'heading':
        return w.heading(this.inline(token.tokens), token.depth);
      case 'paragraph':
        return w.paragraph ? w.paragraph(this.inline(token.tokens)) : this.inline(token.tokens);
      case 'text':
        return token.tokens ? this.inline(token.tokens) : w.text(decode(token.text));
      case 'code':
        return w.codeBlock(token.text.replace(/\n$/, ''), token.lang || undefined);
      case 'blockquote':
        return w.quote(this.blocks(token.tokens, quoteDepth + 1), quoteDepth > 0);
      case 'list':
        return this.list(token, quoteDepth);
      case 'table':
        return w.preformatted(tableText(token, (cell) => plainText(cell.tokens)));
      case 'hr':
        return w.rule;
      case 'html':
        return w.text(token.text.trimEnd());
      default:
        return w.text(token.raw.trimEnd());
    }
  }

  private list(token: Tokens.List, quoteDepth: number): string {
    const start = typeof token.start === 'number' ? token.start : 1;
    const items = token.items.map((item) => this.blocks(item.tokens, quoteDepth, item.loose ? '\n\n' : '\n'));
    return this.writer.list(items, token.ordered, start);
  }

  inline(tokens: readonly Token[]): string {
    return tokens.map((token) => this.inlineToken(token as MarkedToken)).join('');
  }

  private inlineToken(token: MarkedToken): string {
    const w = this.writer;
    switch (token.type) {
      case 'text':
        return token.tokens ? this.inline(token.tokens) : w.text(decode(token.text));
      case 'escape':
        return w.text(token.text);
      case 'strong':
        return w.bold(this.inline(token.tokens));
      case 'em':
        return w.italic(this.inline(token.tokens));
      case 'del':
        return w.strike(this.inline(token.tokens));
      case 'codespan':
        return w.inlineCode(decode(token.text));
      case 'br':
        return w.lineBreak;
      case 'link': {
        const inner = this.inline(token.tokens);
        return SAFE_LINK.test(token.href) ? w.link(inner, token.href) : inner;
      }
      case 'image': {
        const label = w.text(token.text || 'image');
        return SAFE_LINK.test(token.href) ? w.link(label, token.href) : label;
      }
      case 'checkbox':
        return token.checked ? '☑ ' : '☐ ';
      case 'html':
        return w.text(token.text);
      default:
        return w.text(token.raw);
    }
  }
}

function decode(text: string): string {
  return text.replace(/&(?:amp|lt|gt|quot|#39);/g, (entity) => ENTITIES[entity] ?? entity);
}

/** The visible text of inline tokens, without any markup. */
function plainText(tokens: readonly Token[]): string {
  return tokens
    .map((token) => {
      const t = token as MarkedToken;
      if ('tokens' in t && Array.isArray(t.tokens)) return plainText(t.tokens);
      if (t.type === 'codespan' || t.type === 'escape' || t.type === 'text') return decode(t.text);
      return t.raw;
    })
    .join('');
}

/** A pipe table as aligned columns, for a fixed-width block. */
function tableText(table: Tokens.Table, cellText: (cell: Tokens.TableCell) => string): string {
  const rows = [table.header, ...table.rows].map((row) => row.map((cell) => cellText(cell).trim()));
  const columns = Math.max(...rows.map((row) => row.length));
  const widths = Array.from({ length: columns }, (_, c) => Math.max(...rows.map((row) => (row[c] ?? '').length)));
  const line = (row: string[]) =>
    widths
      .map((width, c) => (row[c] ?? '').padEnd(width))
      .join('  ')
      .trimEnd();
  const [header = [], ...body] = rows;
  return [line(header), widths.map((width) => '─'.repeat(width)).join('  '), ...body.map(line)].join('\n');
}
