import { describe, expect, it } from 'vitest';
import type { MarkupFlavour } from '../../src/channels/markup/flavours.js';
import { renderMarkdown } from '../../src/channels/markup/render.js';
import { splitMarkdown } from '../../src/channels/markup/split.js';
import { assertTelegramHtml, visibleText } from './telegram/telegram-html.js';

const render = (flavour: MarkupFlavour) => (markdown: string) => renderMarkdown(markdown, flavour);

describe('splitMarkdown', () => {
  it('keeps a reply that fits in one part', () => {
    expect(splitMarkdown('Hello **world**', 100, render('telegram-html'))).toEqual(['Hello **world**']);
    expect(splitMarkdown('   ', 100, render('telegram-html'))).toEqual([]);
  });

  it('cuts between paragraphs, never inside one that fits', () => {
    const paragraphs = Array.from({ length: 10 }, (_, i) => `Paragraph ${i}: ${'word '.repeat(15).trim()}.`);
    const parts = splitMarkdown(paragraphs.join('\n\n'), 250, render('telegram-html'));
    expect(parts.length).toBeGreaterThan(1);
    for (const part of parts) {
      expect(renderMarkdown(part, 'telegram-html').length).toBeLessThanOrEqual(250);
      for (const paragraph of part.split('\n\n')) expect(paragraphs).toContain(paragraph);
    }
    expect(parts.join('\n\n')).toBe(paragraphs.join('\n\n'));
  });

  it('closes a code block at the end of a part and reopens it, with its language, in the next', () => {
    const code = Array.from({ length: 60 }, (_, i) => `print("line ${i} <tag>")`);
    const markdown = `Intro text.\n\n\`\`\`python\n${code.join('\n')}\n\`\`\`\n\nOutro.`;
    const parts = splitMarkdown(markdown, 600, render('telegram-html'));
    expect(parts.length).toBeGreaterThanOrEqual(3);
    const codeParts = parts.filter((part) => part.includes('print('));
    for (const part of codeParts) {
      expect(part).toMatch(/```python\n[\s\S]*\n```$/m);
      const html = renderMarkdown(part, 'telegram-html');
      assertTelegramHtml(html);
      expect(html.length).toBeLessThanOrEqual(600);
      expect(html).toContain('<pre><code class="language-python">');
    }
    const text = parts.map((part) => visibleText(renderMarkdown(part, 'telegram-html'))).join('\n');
    for (const line of code) expect(text).toContain(line);
    expect(text.indexOf('Intro')).toBeLessThan(text.indexOf('line 0 '));
    expect(text.indexOf('line 59')).toBeLessThan(text.indexOf('Outro'));
  });

  it('repeats a table header in every part of a long table', () => {
    const rows = Array.from({ length: 40 }, (_, i) => `| item ${i} | ${i * 10} |`);
    const markdown = ['| name | value |', '|---|---|', ...rows].join('\n');
    const parts = splitMarkdown(markdown, 300, render('slack-mrkdwn'));
    expect(parts.length).toBeGreaterThan(1);
    for (const part of parts) {
      expect(part.startsWith('| name | value |\n|---|---|')).toBe(true);
      expect(renderMarkdown(part, 'slack-mrkdwn').length).toBeLessThanOrEqual(300);
    }
  });

  it('cuts list items apart, then lines, then words, and a word only as the last resort', () => {
    const list = Array.from({ length: 30 }, (_, i) => `- item number ${i}`).join('\n');
    for (const part of splitMarkdown(list, 120, render('markdown'))) {
      expect(part.split('\n').every((line) => /^- item number \d+$/.test(line))).toBe(true);
    }
    const sentence = 'alpha beta gamma delta '.repeat(20).trim();
    const words = splitMarkdown(sentence, 50, render('plain'));
    expect(words.join(' ')).toBe(sentence);
    expect(words.every((part) => part.length <= 50)).toBe(true);
    const word = 'x'.repeat(130);
    expect(splitMarkdown(word, 50, render('plain'))).toEqual(['x'.repeat(50), 'x'.repeat(50), 'x'.repeat(30)]);
  });

  it('measures the rendered size: HTML escapes count against the limit', () => {
    const markdown = '<<<<<<<<<< '.repeat(40).trim();
    for (const part of splitMarkdown(markdown, 100, render('telegram-html'))) {
      expect(renderMarkdown(part, 'telegram-html').length).toBeLessThanOrEqual(100);
    }
  });

  it('never breaks a surrogate pair', () => {
    const emoji = '😀'.repeat(40);
    const parts = splitMarkdown(emoji, 15, render('plain'));
    expect(parts.join('')).toBe(emoji);
    for (const part of parts) expect(part).not.toMatch(/^[\uDC00-\uDFFF]|[\uD800-\uDBFF]$/);
  });
});
