import { describe, expect, it } from 'vitest';
import { renderMarkdown } from '../../src/channels/markup/render.js';
import { assertTelegramHtml } from './telegram/telegram-html.js';

const SAMPLE = [
  '# Plan',
  'Use **bold**, _italic_, ~~gone~~ and `a < b && c`.',
  'See [the docs](https://example.com/a?x=1&y="2") or [this](javascript:alert(1)).',
  '```python\nif a < b:\n    print("x & y")\n```',
  '- one\n- two\n  - nested',
  '1. first\n2. second',
  '> quoted\n> > deeper',
  '| name | size |\n|------|------|\n| a    | 10   |',
  'Raw <b>html</b> & an &amp; entity',
].join('\n\n');

describe('renderMarkdown', () => {
  it('writes Telegram HTML that Telegram accepts: its tags only, escaped text, safe links only', () => {
    const html = renderMarkdown(SAMPLE, 'telegram-html');
    assertTelegramHtml(html);
    expect(html).toContain('<b>Plan</b>');
    expect(html).toContain('<b>bold</b>, <i>italic</i>, <s>gone</s> and <code>a &lt; b &amp;&amp; c</code>');
    expect(html).toContain('<a href="https://example.com/a?x=1&amp;y=&quot;2&quot;">the docs</a>');
    expect(html).not.toContain('javascript');
    expect(html).toContain('<pre><code class="language-python">if a &lt; b:\n    print("x &amp; y")</code></pre>');
    expect(html).toContain('• one\n• two\n  • nested');
    expect(html).toContain('1. first\n2. second');
    // Telegram cannot nest quotes: the inner one is flattened into the outer.
    expect(html).toContain('<blockquote>quoted\n\ndeeper</blockquote>');
    expect(html).toContain('<pre>name  size\n────  ────\na     10</pre>');
    expect(html).toContain('Raw &lt;b&gt;html&lt;/b&gt; &amp; an &amp; entity');
  });

  it('keeps half-written Markdown valid (a stream cut mid-way)', () => {
    for (const partial of [
      '**bold but unfinished',
      '```js\nconst a = 1;',
      'a [link](http://x',
      '> quote\n\n- item `co',
    ]) {
      expect(() => assertTelegramHtml(renderMarkdown(partial, 'telegram-html'))).not.toThrow();
    }
    expect(renderMarkdown('```js\nconst a = 1 < 2;', 'telegram-html')).toBe(
      '<pre><code class="language-js">const a = 1 &lt; 2;</code></pre>',
    );
  });

  it('writes Slack mrkdwn', () => {
    const text = renderMarkdown(SAMPLE, 'slack-mrkdwn');
    expect(text).toContain('*Plan*');
    expect(text).toContain('*bold*, _italic_, ~gone~ and `a &lt; b &amp;&amp; c`');
    expect(text).toContain('<https://example.com/a?x=1&y="2"|the docs>');
    expect(text).toContain('```\nif a &lt; b:');
    expect(text).toContain('> quoted');
  });

  it('writes Markdown for Discord and Matrix bodies: tables as code, the rest as Markdown', () => {
    const text = renderMarkdown(SAMPLE, 'markdown');
    expect(text).toContain('# Plan');
    expect(text).toContain('**bold**, *italic*, ~~gone~~');
    expect(text).toContain('- one\n- two\n  - nested');
    expect(text).toContain('```\nname  size\n────  ────\na     10\n```');
    expect(text).toContain('```python\nif a < b:');
  });

  it('writes safe HTML for Matrix formatted bodies', () => {
    const html = renderMarkdown(SAMPLE, 'html');
    expect(html).toContain('<h1>Plan</h1>');
    expect(html).toContain('<p>Use <strong>bold</strong>, <em>italic</em>, <del>gone</del>');
    expect(html).toContain('<ul><li>one</li><li>two');
    expect(html).toContain('<ol><li>first</li><li>second</li></ol>');
    expect(html).not.toContain('<b>html</b>');
  });

  it('writes plain text with links spelled out', () => {
    const text = renderMarkdown('**Hi** [docs](https://x.y) `code`', 'plain');
    expect(text).toBe('Hi docs (https://x.y) code');
  });
});
