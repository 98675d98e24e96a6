/**
 * The markup each platform speaks, as a set of small writers the Markdown walker calls. Every writer escapes what it
 * must, so any Markdown (also half-finished Markdown from a stream) yields markup the platform accepts.
 */

export type MarkupFlavour = 'telegram-html' | 'slack-mrkdwn' | 'markdown' | 'html' | 'plain' | 'whatsapp';

export interface FlavourWriter {
  /** Escapes literal text. */
  text(value: string): string;
  bold(inner: string): string;
  italic(inner: string): string;
  strike(inner: string): string;
  inlineCode(code: string): string;
  codeBlock(code: string, lang: string | undefined): string;
  /** `href` is already checked to be a web, mail or platform link. */
  link(inner: string, href: string): string;
  heading(inner: string, depth: number): string;
  /** `inner` is rendered block content; `nested` is true inside another quote (Telegram cannot nest them). */
  quote(inner: string, nested: boolean): string;
  /** Fixed-width text such as a rendered table. */
  preformatted(text: string): string;
  rule: string;
  /** Rendered items of one list. */
  list(items: string[], ordered: boolean, start: number): string;
  /** Wraps a paragraph (HTML needs `<p>`; chat markups separate paragraphs by a blank line). */
  paragraph?(inner: string): string;
  /** A hard line break inside a paragraph. */
  lineBreak: string;
}

/** `• item` / `1. item` lines, continuation lines indented under the text. */
function textList(bullet: string) {
  return (items: string[], ordered: boolean, start: number): string =>
    items
      .map((item, i) => {
        const marker = ordered ? `${start + i}. ` : bullet;
        return marker + item.split('\n').join(`\n${' '.repeat(marker.length)}`);
      })
      .join('\n');
}

const escapeHtml = (value: string): string => value.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
const escapeAttribute = (value: string): string => escapeHtml(value).replace(/"/g, '&quot;');

/** Telegram Bot API `parse_mode: HTML`: b, i, s, code, pre, a, blockquote; no nesting of blockquotes. */
const telegramHtml: FlavourWriter = {
  text: escapeHtml,
  bold: (inner) => `<b>${inner}</b>`,
  italic: (inner) => `<i>${inner}</i>`,
  strike: (inner) => `<s>${inner}</s>`,
  inlineCode: (code) => `<code>${escapeHtml(code)}</code>`,
  codeBlock: (code, lang) =>
    lang && /^[\w+#.-]+$/.test(lang)
      ? `<pre><code class="language-${lang}">${escapeHtml(code)}</code></pre>`
      : `<pre>${escapeHtml(code)}</pre>`,
  link: (inner, href) => `<a href="${escapeAttribute(href)}">${inner}</a>`,
  heading: (inner) => `<b>${inner}</b>`,
  quote: (inner, nested) => (nested ? inner : `<blockquote>${inner}</blockquote>`),
  preformatted: (text) => `<pre>${escapeHtml(text)}</pre>`,
  rule: '──────────',
  list: textList('• '),
  lineBreak: '\n',
};

/** Slack mrkdwn: only &, < and > need escaping; links are `<url|text>`. */
const slackMrkdwn: FlavourWriter = {
  text: escapeHtml,
  bold: (inner) => `*${inner}*`,
  italic: (inner) => `_${inner}_`,
  strike: (inner) => `~${inner}~`,
  inlineCode: (code) => `\`${escapeHtml(code.replace(/`/g, "'"))}\``,
  codeBlock: (code) => `\`\`\`\n${escapeHtml(code.replace(/```/g, "'''"))}\n\`\`\``,
  link: (inner, href) => `<${href.replace(/[<>|]/g, encodeURIComponent)}|${inner.replace(/[|>]/g, ' ')}>`,
  heading: (inner) => `*${inner}*`,
  quote: (inner) => prefixLines(inner, '> '),
  preformatted: (text) => `\`\`\`\n${escapeHtml(text)}\n\`\`\``,
  rule: '──────────',
  list: textList('• '),
  lineBreak: '\n',
};

/** CommonMark as Discord and Matrix bodies read it: tables become code blocks, the rest round-trips. */
const markdown: FlavourWriter = {
  text: (value) => value.replace(/([\\*_~`|])/g, '\\$1'),
  bold: (inner) => `**${inner}**`,
  italic: (inner) => `*${inner}*`,
  strike: (inner) => `~~${inner}~~`,
  inlineCode: (code) => (code.includes('`') ? `\`\` ${code} \`\`` : `\`${code}\``),
  codeBlock: (code, lang) => `${fenceFor(code)}${lang ?? ''}\n${code}\n${fenceFor(code)}`,
  link: (inner, href) => `[${inner}](<${href}>)`,
  heading: (inner, depth) => `${'#'.repeat(Math.min(depth, 3))} ${inner}`,
  quote: (inner) => prefixLines(inner, '> '),
  preformatted: (text) => `${fenceFor(text)}\n${text}\n${fenceFor(text)}`,
  rule: '───',
  list: textList('- '),
  lineBreak: '\n',
};

/** Safe HTML for Matrix `formatted_body` and similar. */
const html: FlavourWriter = {
  text: (value) => escapeHtml(value).replace(/\n/g, '<br>'),
  bold: (inner) => `<strong>${inner}</strong>`,
  italic: (inner) => `<em>${inner}</em>`,
  strike: (inner) => `<del>${inner}</del>`,
  inlineCode: (code) => `<code>${escapeHtml(code)}</code>`,
  codeBlock: (code, lang) =>
    lang && /^[\w+#.-]+$/.test(lang)
      ? `<pre><code class="language-${lang}">${escapeHtml(code)}</code></pre>`
      : `<pre><code>${escapeHtml(code)}</code></pre>`,
  link: (inner, href) => `<a href="${escapeAttribute(href)}">${inner}</a>`,
  heading: (inner, depth) => `<h${Math.min(depth, 6)}>${inner}</h${Math.min(depth, 6)}>`,
  quote: (inner) => `<blockquote>${inner}</blockquote>`,
  preformatted: (text) => `<pre>${escapeHtml(text)}</pre>`,
  rule: '<hr>',
  paragraph: (inner) => `<p>${inner}</p>`,
  lineBreak: '<br>',
  list: (items, ordered, start) => {
    const tag = ordered ? 'ol' : 'ul';
    const startAttribute = ordered && start !== 1 ? ` start="${start}"` : '';
    return `<${tag}${startAttribute}>${items.map((item) => `<li>${item}</li>`).join('')}</${tag}>`;
  },
};

/**
 * WhatsApp: *bold*, _italic_, ~strike~, `code`, ```blocks```, `> ` quotes. Nothing can be escaped, so literal text
 * stays as written; links show their address.
 */
const whatsapp: FlavourWriter = {
  text: (value) => value,
  bold: (inner) => `*${inner}*`,
  italic: (inner) => `_${inner}_`,
  strike: (inner) => `~${inner}~`,
  inlineCode: (code) => `\`${code.replace(/`/g, "'")}\``,
  codeBlock: (code) => `\`\`\`\n${code.replace(/```/g, "'''")}\n\`\`\``,
  link: (inner, href) => (inner === href ? href : `${inner} (${href})`),
  heading: (inner) => `*${inner}*`,
  quote: (inner) => prefixLines(inner, '> '),
  preformatted: (text) => `\`\`\`\n${text.replace(/```/g, "'''")}\n\`\`\``,
  rule: '──────────',
  list: textList('• '),
  lineBreak: '\n',
};

/** No markup at all: for platforms that show text as typed (SMS-like, email plain part). */
const plain: FlavourWriter = {
  text: (value) => value,
  bold: (inner) => inner,
  italic: (inner) => inner,
  strike: (inner) => inner,
  inlineCode: (code) => code,
  codeBlock: (code) => code,
  link: (inner, href) => (inner === href ? href : `${inner} (${href})`),
  heading: (inner) => inner,
  quote: (inner) => prefixLines(inner, '> '),
  preformatted: (text) => text,
  rule: '──────────',
  list: textList('• '),
  lineBreak: '\n',
};

export const FLAVOURS: Record<MarkupFlavour, FlavourWriter> = {
  'telegram-html': telegramHtml,
  'slack-mrkdwn': slackMrkdwn,
  markdown,
  html,
  plain,
  whatsapp,
};

function prefixLines(text: string, prefix: string): string {
  return text
    .split('\n')
    .map((line) => `${prefix}${line}`.trimEnd())
    .join('\n');
}

/** A fence longer than any backtick run inside the code. */
function fenceFor(code: string): string {
  const longest = Math.max(2, ...(code.match(/`+/g) ?? []).map((run) => run.length));
  return '`'.repeat(longest + 1);
}
