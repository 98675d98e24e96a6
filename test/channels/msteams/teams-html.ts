/**
 * What Teams accepts in a text message with textFormat "xml": a small set of HTML tags, properly nested, entities
 * for <, > and &, and a message under Teams' 40 KB (counted in UTF-16). And the text a user reads in it.
 */
const ALLOWED = new Set(['p', 'br', 'strong', 'em', 'strike', 'code', 'pre', 'a', 'blockquote', 'ul', 'ol', 'li']);
const VOID = new Set(['br']);
const MAX_BYTES = 40 * 1024;

export function assertTeamsHtml(html: string): void {
  if (html.length * 2 > MAX_BYTES) throw new Error(`message is ${html.length * 2} bytes in UTF-16, over 40 KB`);
  const open: string[] = [];
  for (const match of html.matchAll(/<(\/?)([a-z0-9]+)([^>]*)>/gi)) {
    const [, closing, rawName, attributes = ''] = match;
    const name = (rawName ?? '').toLowerCase();
    if (!ALLOWED.has(name)) throw new Error(`Teams does not render <${name}> in a text message: ${html.slice(0, 200)}`);
    if (name !== 'a' && name !== 'ol' && attributes.trim()) throw new Error(`unexpected attributes on <${name}>`);
    if (VOID.has(name)) continue;
    if (closing) {
      if (open.pop() !== name) throw new Error(`</${name}> closes nothing open: ${html.slice(0, 200)}`);
    } else open.push(name);
  }
  if (open.length > 0) throw new Error(`unclosed <${open.join('>, <')}>`);
  const stray = html.replace(/<\/?[a-z0-9]+[^>]*>/gi, '');
  if (/[<>]/.test(stray)) throw new Error(`unescaped < or > in ${stray.slice(0, 200)}`);
  if (/&(?!amp;|lt;|gt;|quot;|#39;)/.test(stray)) throw new Error('an unescaped &');
}

export function visibleText(html: string): string {
  return html
    .replace(/<br>/g, '\n')
    .replace(/<\/(p|pre|li|blockquote|ul|ol)>/g, '\n')
    .replace(/<[^>]+>/g, '')
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&amp;/g, '&')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
}
