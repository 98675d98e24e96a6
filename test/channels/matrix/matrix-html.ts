/**
 * Checks for Matrix `formatted_body` HTML as clients render it: only the tags and attributes the spec recommends
 * (others are stripped or shown raw), every tag closed in order, valid entities; and the text a user reads.
 */
const ALLOWED_TAGS = new Set(
  (
    'font del h1 h2 h3 h4 h5 h6 blockquote p a ul ol sup sub li b i u strong em s code hr br div table thead tbody ' +
    'tr th td caption pre span img details summary'
  ).split(' '),
);
const VOID_TAGS = new Set(['br', 'hr', 'img']);
const ALLOWED_ATTRIBUTES: Record<string, Set<string>> = {
  a: new Set(['href', 'target']),
  code: new Set(['class']),
  ol: new Set(['start']),
  img: new Set(['src', 'alt', 'title', 'width', 'height']),
  span: new Set(['data-mx-spoiler', 'data-mx-color', 'data-mx-bg-color']),
  font: new Set(['data-mx-color', 'data-mx-bg-color', 'color']),
};

export function assertMatrixHtml(html: string): void {
  const stack: string[] = [];
  for (const match of html.matchAll(/<(\/?)([a-zA-Z0-9]+)((?:\s+[a-z-]+="[^"]*")*)\s*(\/?)>|<|>/g)) {
    const [token, closing, rawTag, attributes = ''] = match;
    if (token === '<') throw new Error(`stray "<" at ${match.index}: ${html.slice(match.index, match.index + 40)}`);
    if (token === '>') throw new Error(`stray ">" at ${match.index}`);
    const tag = (rawTag ?? '').toLowerCase();
    if (!ALLOWED_TAGS.has(tag)) throw new Error(`tag <${tag}> is not allowed in Matrix HTML`);
    for (const [, name] of attributes.matchAll(/([a-z-]+)="/g)) {
      if (!ALLOWED_ATTRIBUTES[tag]?.has(name ?? '')) throw new Error(`attribute ${name} is not allowed on <${tag}>`);
    }
    if (VOID_TAGS.has(tag)) continue;
    if (closing) {
      const open = stack.pop();
      if (open !== tag) throw new Error(`</${tag}> closes <${open ?? 'nothing'}>`);
    } else stack.push(tag);
  }
  if (stack.length > 0) throw new Error(`unclosed tags: ${stack.join(', ')}`);
  for (const entity of html.matchAll(/&[^;\s]*;?/g)) {
    if (!/^&(amp|lt|gt|quot|#39|#\d+|#x[\da-f]+);$/i.test(entity[0])) throw new Error(`bad entity ${entity[0]}`);
  }
}

export function visibleText(html: string): string {
  return html
    .replace(/<br\s*\/?>/gi, '\n')
    .replace(/<\/(p|li|h[1-6]|pre|blockquote|tr)>/gi, '\n')
    .replace(/<hr\s*\/?>/gi, '\n───\n')
    .replace(/<[^>]+>/g, '')
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&amp;/g, '&')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
}
