/**
 * HTML → readable Markdown or text: @mozilla/readability picks the article out of a linkedom document (dropping
 * nav, ads, sidebars, footers), then turndown renders Markdown, or a block-aware walk renders plain text.
 */
import { Readability } from '@mozilla/readability';
import { parseHTML } from 'linkedom';
import TurndownService from 'turndown';

export type ExtractMode = 'markdown' | 'text';

export interface ExtractedPage {
  text: string;
  /** `readability` when an article was found, `html` when the whole page body was converted instead. */
  extractor: 'readability' | 'html';
  title?: string;
}

/** The slice of the DOM the text walk needs; linkedom's nodes satisfy it. */
interface TextNodeLike {
  nodeType: number;
  nodeName: string;
  textContent: string | null;
  childNodes: ArrayLike<TextNodeLike>;
}

/** The slice of linkedom's document the extractor uses (its typings lean on the DOM lib, which we do not load). */
interface ElementLike {
  textContent: string | null;
  innerHTML: string;
  getAttribute(name: string): string | null;
  remove(): void;
}
interface DocumentLike {
  body: ElementLike | null;
  querySelector(selector: string): ElementLike | null;
  querySelectorAll(selector: string): Iterable<ElementLike>;
}

const NOISE_SELECTOR = 'script, style, noscript, template, iframe, svg, canvas, form, button';
const CHROME_SELECTOR = 'nav, header, footer, aside, [role="navigation"], [role="banner"], [role="contentinfo"]';

const turndown = createTurndown();

function createTurndown(): TurndownService {
  const service = new TurndownService({
    headingStyle: 'atx',
    codeBlockStyle: 'fenced',
    bulletListMarker: '-',
    emDelimiter: '*',
  });
  service.remove(['script', 'style', 'noscript', 'iframe', 'form', 'button']);
  // turndown pads list markers to four columns (`-   item`); one space is what people and models write.
  service.addRule('compactListItem', {
    filter: 'li',
    replacement(content, node) {
      const parent = node.parentNode as { nodeName?: string; getAttribute?(name: string): string | null } | null;
      let prefix = '- ';
      if (parent?.nodeName === 'OL') {
        const start = Number(parent.getAttribute?.('start') ?? '1') || 1;
        const siblings = Array.from((node.parentNode as { children?: ArrayLike<unknown> }).children ?? []);
        prefix = `${start + siblings.indexOf(node)}. `;
      }
      const body = content
        .replace(/^\n+/, '')
        .replace(/\n+$/, '\n')
        .replace(/\n(?!$)/g, `\n${' '.repeat(prefix.length)}`);
      return `${prefix}${body.trimEnd()}${node.nextSibling ? '\n' : ''}`;
    },
  });
  return service;
}

function loadDocument(html: string, pageUrl: string): DocumentLike {
  const { document } = parseHTML(html) as unknown as { document: DocumentLike };
  // linkedom has no URL for the document; readability reads these to make relative links absolute.
  Object.defineProperty(document, 'baseURI', { value: pageUrl, configurable: true });
  Object.defineProperty(document, 'documentURI', { value: pageUrl, configurable: true });
  return document;
}

function removeAll(document: DocumentLike, selector: string): void {
  for (const element of Array.from(document.querySelectorAll(selector))) element.remove();
}

/** Code-block classes like `language-ts` that readability would otherwise strip (turndown reads them for fences). */
function codeLanguageClasses(document: DocumentLike): string[] {
  const classes = new Set<string>();
  for (const element of document.querySelectorAll('pre [class], pre[class]')) {
    for (const name of (element.getAttribute('class') ?? '').split(/\s+/)) {
      if (/^(?:language|lang)-/.test(name)) classes.add(name);
    }
  }
  return [...classes];
}

const BLOCK_TAGS = new Set([
  'ADDRESS',
  'ARTICLE',
  'ASIDE',
  'BLOCKQUOTE',
  'BR',
  'DD',
  'DIV',
  'DL',
  'DT',
  'FIGCAPTION',
  'FIGURE',
  'FOOTER',
  'H1',
  'H2',
  'H3',
  'H4',
  'H5',
  'H6',
  'HEADER',
  'HR',
  'LI',
  'MAIN',
  'OL',
  'P',
  'PRE',
  'SECTION',
  'TABLE',
  'TR',
  'UL',
]);

// Stand-ins for whitespace inside <pre>, so the clean-up below cannot collapse code indentation.
const PRE_NEWLINE = '\uE000';
const PRE_SPACE = '\uE001';

/** Plain text with a line break around each block element and preformatted text kept as is. */
export function htmlToText(html: string): string {
  const { document } = parseHTML(`<!doctype html><html><body>${html}</body></html>`) as unknown as {
    document: { body: TextNodeLike };
  };
  const out: string[] = [];
  const walk = (node: TextNodeLike, pre: boolean) => {
    const text = node.textContent ?? '';
    if (node.nodeType === 3) {
      out.push(pre ? text.replace(/\n/g, PRE_NEWLINE).replace(/[ \t]/g, PRE_SPACE) : text.replace(/\s+/g, ' '));
      return;
    }
    if (node.nodeType !== 1) return;
    const block = BLOCK_TAGS.has(node.nodeName);
    if (block) out.push('\n');
    if (node.nodeName === 'LI') out.push('- ');
    if (node.nodeName === 'TD' || node.nodeName === 'TH') out.push(' ');
    for (const child of Array.from(node.childNodes)) walk(child, pre || node.nodeName === 'PRE');
    // No break after an item: the next item (or the list's end) adds one, so items stay on consecutive lines.
    if (block && node.nodeName !== 'LI') out.push('\n');
  };
  walk(document.body, false);
  return out
    .join('')
    .replace(/ *\n */g, '\n')
    .replace(/ {2,}/g, ' ')
    .replace(/\n{3,}/g, '\n\n')
    .replaceAll(PRE_NEWLINE, '\n')
    .replaceAll(PRE_SPACE, ' ')
    .trim();
}

function render(html: string, mode: ExtractMode, title: string | undefined): string {
  const body = mode === 'markdown' ? turndown.turndown(html).trim() : htmlToText(html);
  if (!title) return body;
  const firstLine = body
    .split('\n', 1)[0]
    ?.replace(/^#+\s*/, '')
    .trim();
  if (firstLine === title.trim()) return body;
  return mode === 'markdown' ? `# ${title}\n\n${body}` : `${title}\n\n${body}`;
}

/** The readable content of an HTML page, as Markdown or text. Never throws on odd markup. */
export function extractHtml(html: string, pageUrl: string, mode: ExtractMode): ExtractedPage {
  try {
    const document = loadDocument(html, pageUrl);
    removeAll(document, NOISE_SELECTOR);
    const article = new Readability(document, { classesToPreserve: codeLanguageClasses(document) }).parse();
    if (article?.content && (article.textContent ?? '').trim().length > 0) {
      const title = article.title?.trim() || undefined;
      return { text: render(article.content, mode, title), extractor: 'readability', ...(title ? { title } : {}) };
    }
  } catch {
    // Readability gives up on some documents; the whole-body conversion below still yields something useful.
  }
  const document = loadDocument(html, pageUrl);
  removeAll(document, `${NOISE_SELECTOR}, ${CHROME_SELECTOR}`);
  const title = document.querySelector('title')?.textContent?.trim() || undefined;
  const bodyHtml = document.body?.innerHTML ?? html;
  return { text: render(bodyHtml, mode, title), extractor: 'html', ...(title ? { title } : {}) };
}
