/** The bounded exact count matches the whole-text tokenizer on ordinary text and stays close on everything else. */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { countTokens as cl100k } from 'gpt-tokenizer/encoding/cl100k_base';
import { countTokens as o200k } from 'gpt-tokenizer/encoding/o200k_base';
import { describe, expect, it } from 'vitest';
import { boundedTokenCount, DEFAULT_COUNT_LIMITS } from '../../src/memory/bounded-count.js';

const ROOT = join(import.meta.dirname, '..', '..');
const options = { disallowedSpecial: new Set<string>() };
const encodings = {
  cl100k_base: (text: string) => cl100k(text, options),
  o200k_base: (text: string) => o200k(text, options),
};
const cap = DEFAULT_COUNT_LIMITS.maxExactChars;

const code = readdirSync(join(ROOT, 'src', 'memory'))
  .map((file) => readFileSync(join(ROOT, 'src', 'memory', file), 'utf8'))
  .join('\n')
  .slice(0, cap);
const prose = readFileSync(join(ROOT, 'README.md'), 'utf8').slice(0, cap);
const json = JSON.stringify(JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')), null, 2).repeat(8);
const chat = Array.from(
  { length: 300 },
  (_, i) =>
    `Turn ${i}: could you check https://example.com/a/b?q=${i}&x=y, then run \`npm test -- --grep "case ${i}"\`?\n`,
).join('');

describe.each(Object.entries(encodings))('bounded token count (%s)', (_name, exact) => {
  it.each([
    ['source code', code],
    ['Markdown prose', prose],
    ['pretty JSON', json.slice(0, cap)],
    ['chat with URLs and commands', chat],
  ])('equals the whole-text count on %s', (_what, text) => {
    expect(text.length).toBeGreaterThan(8 * DEFAULT_COUNT_LIMITS.windowChars);
    expect(boundedTokenCount(text, exact)).toBe(exact(text));
  });

  it.each([
    ['Chinese prose (no spaces)', '今天天气很好，我们去公园散步吧。他说：“这是一个测试。”'.repeat(1200)],
    ['Thai (no spaces)', 'ภาษาไทยเป็นภาษาที่ใช้กันในประเทศไทย'.repeat(300)],
    ['one letter', 'a'.repeat(9000)],
    ['one CJK character', '你'.repeat(9000)],
    ['emoji', '😀👩‍👩‍👧'.repeat(1500)],
    ['base64', Buffer.from(Array.from({ length: 7000 }, (_, i) => (i * 7919 + (i >> 3)) % 256)).toString('base64')],
    ['minified code', 'function(a,b){return a+b;}var x=[1,2,3];'.repeat(250)],
    ['punctuation', '!'.repeat(9000)],
    ['spaces then a word', `${' '.repeat(5000)}word`],
  ])('stays within 1% of the whole-text count on %s', (_what, text) => {
    const whole = exact(text);
    expect(Math.abs(boundedTokenCount(text, exact) - whole)).toBeLessThanOrEqual(Math.max(1, whole * 0.01));
  });

  it('estimates a text over the cap from spread samples within 5%, the same figure every time', () => {
    const long = `${prose}\n${code}\n${json}\n${chat}`.repeat(2);
    expect(long.length).toBeGreaterThan(3 * cap);
    const whole = exact(long);
    const estimate = boundedTokenCount(long, exact);
    expect(Math.abs(estimate - whole) / whole).toBeLessThan(0.05);
    expect(boundedTokenCount(long, exact)).toBe(estimate);
  });

  it('never splits a surrogate pair', () => {
    const seen: string[] = [];
    boundedTokenCount('😀'.repeat(200_000), (text) => {
      seen.push(text);
      return exact(text);
    });
    for (const piece of seen) expect(piece).toMatch(/^(?:\p{Extended_Pictographic})+$/u);
  });
});
