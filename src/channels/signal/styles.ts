/**
 * Signal has no markup: a message is plain text plus styled ranges (`start:length:STYLE`, in UTF-16 code units, as
 * signal-cli's `textStyle` takes them). The part's Markdown is rendered like the plain flavour, with each styled run
 * wrapped in private-use marks; the marks are then taken out and become ranges. Bold, italic, strikethrough and
 * monospace (code, tables) come through; links read `text (url)` as in plain text.
 */
import { FLAVOURS, type FlavourWriter } from '../markup/flavours.js';
import { renderWith } from '../markup/render.js';

const STYLES = ['BOLD', 'ITALIC', 'STRIKETHROUGH', 'MONOSPACE'] as const;
type Style = (typeof STYLES)[number];
/** Open mark of style i is U+E000 + 2i, its close mark the next code point. */
const MARK_BASE = 0xe000;
const MARKS = /[\uE000-\uE007]/g;
/** More ranges than this and the rest of the message goes unstyled (Signal limits a message's ranges). */
const MAX_RANGES = 200;

const wrap = (style: Style) => {
  const i = STYLES.indexOf(style);
  const open = String.fromCharCode(MARK_BASE + 2 * i);
  const close = String.fromCharCode(MARK_BASE + 2 * i + 1);
  return (inner: string) => (inner ? `${open}${inner}${close}` : inner);
};

const marking: FlavourWriter = {
  ...FLAVOURS.plain,
  text: (value) => value.replace(MARKS, ''),
  bold: wrap('BOLD'),
  italic: wrap('ITALIC'),
  strike: wrap('STRIKETHROUGH'),
  inlineCode: (code) => wrap('MONOSPACE')(code.replace(MARKS, '')),
  codeBlock: (code) => wrap('MONOSPACE')(code.replace(MARKS, '')),
  heading: wrap('BOLD'),
  preformatted: (text) => wrap('MONOSPACE')(text.replace(MARKS, '')),
};

/**
 * The text to send and its styles. `plain` is what the framework rendered (and measured against the length limit):
 * when the marked rendering does not come out as exactly that text, the plain text goes without styles.
 */
export function styledText(markdown: string, plain: string): { text: string; styles: string[] } {
  const marked = renderWith(markdown.replace(MARKS, ''), marking);
  const styles: string[] = [];
  const open = new Map<Style, { start: number; depth: number }>();
  let text = '';
  for (const char of marked) {
    const code = char.charCodeAt(0);
    if (char.length !== 1 || code < MARK_BASE || code > MARK_BASE + 7) {
      text += char;
      continue;
    }
    const style = STYLES[(code - MARK_BASE) >> 1] as Style;
    const current = open.get(style);
    if ((code - MARK_BASE) % 2 === 0) {
      if (current) current.depth += 1;
      else open.set(style, { start: text.length, depth: 1 });
    } else if (current && --current.depth === 0) {
      open.delete(style);
      if (text.length > current.start && styles.length < MAX_RANGES)
        styles.push(`${current.start}:${text.length - current.start}:${style}`);
    }
  }
  return text === plain ? { text, styles } : { text: plain, styles: [] };
}
