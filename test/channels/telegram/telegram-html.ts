/**
 * A strict checker for Telegram's `parse_mode: HTML`, as the Bot API applies it: only its tags, properly nested,
 * only its entities, no bare `<` or `&`. The fake Bot API answers 400 "can't parse entities" when this throws.
 */

const TAGS = new Set([
  'b',
  'strong',
  'i',
  'em',
  'u',
  'ins',
  's',
  'strike',
  'del',
  'span',
  'tg-spoiler',
  'a',
  'code',
  'pre',
  'blockquote',
  'tg-emoji',
]);
const ENTITY = /^&(?:lt|gt|amp|quot|#\d+|#x[0-9a-f]+);/i;

export function assertTelegramHtml(html: string): void {
  const open: string[] = [];
  let i = 0;
  while (i < html.length) {
    const char = html[i];
    if (char === '&') {
      const entity = ENTITY.exec(html.slice(i, i + 12));
      if (!entity) throw new Error(`can't parse entities: bare & at ${i}`);
      i += entity[0].length;
      continue;
    }
    if (char !== '<') {
      i += 1;
      continue;
    }
    const end = html.indexOf('>', i);
    if (end === -1) throw new Error(`can't parse entities: unclosed tag at ${i}`);
    const tag = html.slice(i + 1, end);
    const closing = tag.startsWith('/');
    const name = (closing ? tag.slice(1) : tag).split(/\s/, 1)[0]?.toLowerCase() ?? '';
    if (!TAGS.has(name)) throw new Error(`can't parse entities: unsupported start tag "${name}" at ${i}`);
    if (closing) {
      const expected = open.pop();
      if (expected !== name) throw new Error(`can't parse entities: can't find end tag corresponding to <${expected}>`);
    } else {
      if (name === 'a' && !/^a href="[^"]*"$/.test(tag)) throw new Error(`can't parse entities: bad <a> at ${i}`);
      if (name === 'blockquote' && open.includes('blockquote'))
        throw new Error("can't parse entities: nested blockquotes");
      open.push(name);
    }
    i = end + 1;
  }
  if (open.length > 0) throw new Error(`can't parse entities: unclosed <${open.join('>, <')}>`);
}

/** The text a user reads: tags removed, entities decoded. */
export function visibleText(html: string): string {
  return html
    .replace(/<[^>]+>/g, '')
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&#(\d+);/g, (_, code: string) => String.fromCodePoint(Number(code)))
    .replace(/&amp;/g, '&');
}
