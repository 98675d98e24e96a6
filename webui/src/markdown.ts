/**
 * Model Markdown → safe HTML: marked renders, highlight.js colours code blocks (each gets a language label and a copy
 * button), DOMPurify removes anything that could run script. Links open in a new tab without a referrer.
 */
import DOMPurify from 'dompurify';
import hljs from 'highlight.js/lib/core';
import bash from 'highlight.js/lib/languages/bash';
import c from 'highlight.js/lib/languages/c';
import cpp from 'highlight.js/lib/languages/cpp';
import css from 'highlight.js/lib/languages/css';
import diff from 'highlight.js/lib/languages/diff';
import go from 'highlight.js/lib/languages/go';
import java from 'highlight.js/lib/languages/java';
import javascript from 'highlight.js/lib/languages/javascript';
import json from 'highlight.js/lib/languages/json';
import markdown from 'highlight.js/lib/languages/markdown';
import python from 'highlight.js/lib/languages/python';
import rust from 'highlight.js/lib/languages/rust';
import shell from 'highlight.js/lib/languages/shell';
import sql from 'highlight.js/lib/languages/sql';
import typescript from 'highlight.js/lib/languages/typescript';
import xml from 'highlight.js/lib/languages/xml';
import yaml from 'highlight.js/lib/languages/yaml';
import { Marked, type Tokens } from 'marked';
import { translate as t } from './i18n/core.js';

const languages = {
  bash,
  c,
  cpp,
  css,
  diff,
  go,
  java,
  javascript,
  json,
  markdown,
  python,
  rust,
  shell,
  sql,
  typescript,
  xml,
  yaml,
};
for (const [name, language] of Object.entries(languages)) hljs.registerLanguage(name, language);
hljs.registerAliases(['sh', 'zsh', 'console'], { languageName: 'bash' });
hljs.registerAliases(['js', 'jsx', 'mjs'], { languageName: 'javascript' });
hljs.registerAliases(['ts', 'tsx'], { languageName: 'typescript' });
hljs.registerAliases(['py'], { languageName: 'python' });
hljs.registerAliases(['html', 'svg'], { languageName: 'xml' });
hljs.registerAliases(['yml'], { languageName: 'yaml' });
hljs.registerAliases(['rs'], { languageName: 'rust' });

const escapeHtml = (text: string) =>
  text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

const marked = new Marked({
  gfm: true,
  breaks: true,
  renderer: {
    // Raw HTML in model text is shown as text: `/skill <name>` or `Array<string>` would otherwise be read as a tag
    // and removed by DOMPurify, taking the word with it.
    html({ text }: Tokens.HTML | Tokens.Tag): string {
      return escapeHtml(text);
    },
    code({ text, lang }: Tokens.Code): string {
      const language = (lang ?? '').trim().split(/\s+/)[0]?.toLowerCase() ?? '';
      const known = language && hljs.getLanguage(language) ? language : '';
      const body = known ? hljs.highlight(text, { language: known, ignoreIllegals: true }).value : escapeHtml(text);
      return (
        `<div class="code-block"><div class="code-head"><span>${escapeHtml(language || 'text')}</span>` +
        `<button type="button" class="copy-code" aria-label="${escapeHtml(t('chat.copyCode'))}">` +
        `${escapeHtml(t('chat.copy'))}</button></div>` +
        `<pre><code class="hljs${known ? ` language-${known}` : ''}">${body}</code></pre></div>`
      );
    },
  },
});

DOMPurify.addHook('afterSanitizeAttributes', (node) => {
  if (node.tagName === 'A' && node.getAttribute('href')) {
    node.setAttribute('target', '_blank');
    node.setAttribute('rel', 'noopener noreferrer');
  }
});

export function renderMarkdown(text: string): string {
  const html = marked.parse(text, { async: false });
  return DOMPurify.sanitize(html, { FORBID_TAGS: ['style', 'form', 'input'], FORBID_ATTR: ['style'] });
}

/** Copies the code of the block whose copy button was clicked (one listener for the whole chat). */
export async function copyCodeFrom(button: HTMLElement): Promise<void> {
  await copyText(button.closest('.code-block')?.querySelector('code')?.textContent ?? '');
  button.textContent = t('chat.copied');
  setTimeout(() => {
    button.textContent = t('chat.copy');
  }, 1500);
}

/** Text to the clipboard; where the Clipboard API is refused (plain http on another host), the old way. */
export async function copyText(text: string): Promise<void> {
  try {
    await navigator.clipboard.writeText(text);
  } catch {
    const area = document.createElement('textarea');
    area.value = text;
    document.body.append(area);
    area.select();
    document.execCommand('copy');
    area.remove();
  }
}
