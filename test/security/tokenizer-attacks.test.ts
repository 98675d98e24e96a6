/**
 * Pathological text cannot stall token counting (issue 15, item 5). The exact tokenizer is quadratic in the length of
 * one pre-tokenizer piece and runs on the main thread, so the counter must bound what it sees. These tests count the
 * work (the characters handed to the real tokenizer, injected with a recorder), never the time.
 */
import { countTokens } from 'gpt-tokenizer/encoding/cl100k_base';
import { describe, expect, it } from 'vitest';
import { DEFAULT_COUNT_LIMITS } from '../../src/memory/bounded-count.js';
import { estimateTextTokens, TokenCounter } from '../../src/memory/tokens.js';
import type { ChatMessage } from '../../src/providers/types.js';

const MB = 1024 * 1024;
const { windowChars, maxExactChars } = DEFAULT_COUNT_LIMITS;

let seed = 42;
const random = () => {
  seed = (seed * 1103515245 + 12345) % 2147483648;
  return seed / 2147483648;
};
const randomBytes = (n: number) => Buffer.from(Array.from({ length: n }, () => Math.floor(random() * 256)));
const randomChars = (n: number, from: number, span: number) =>
  Array.from({ length: n }, () => String.fromCharCode(from + Math.floor(random() * span))).join('');
const fill = (unit: string, size: number) => unit.repeat(Math.ceil(size / unit.length)).slice(0, size);

/** Each entry: a name and a text of about the sizes the issue reports (300 KB to 2 MB). */
const corpus: [string, string][] = [
  ['2 MB of one letter', 'a'.repeat(2 * MB)],
  ['300 KB single word', 'x'.repeat(300_000)],
  ['one upper-case letter', 'Z'.repeat(MB)],
  ['alternating letters', fill('ab', MB)],
  ['random lower-case letters', randomChars(MB, 0x61, 26)],
  ['one CJK character', '你'.repeat(MB)],
  ['random CJK', randomChars(MB, 0x4e00, 20_000)],
  ['Hangul', randomChars(MB / 2, 0xac00, 11_000)],
  ['Thai (written without spaces)', fill('ภาษาไทยเป็นภาษาที่ใช้กันในประเทศไทย', MB)],
  ['Arabic letters', randomChars(MB / 2, 0x627, 20)],
  ['emoji', '😀'.repeat(MB / 2)],
  ['emoji ZWJ families', fill('👩‍👩‍👧‍👦', MB)],
  ['flags (regional indicators)', fill('🇵🇹🇯🇵', MB)],
  ['combining marks', fill('a\u0301\u0308', MB)],
  ['zalgo', fill('Z\u0351\u0352\u0357\u035b\u0363\u0364', MB)],
  ['base64 of random bytes', randomBytes(1.5 * MB).toString('base64')],
  ['base64url', randomBytes(MB).toString('base64url')],
  ['hex', randomBytes(MB / 2).toString('hex')],
  ['data URL', `data:image/png;base64,${randomBytes(MB).toString('base64')}`],
  ['random bytes as latin1', randomBytes(MB).toString('latin1')],
  ['random bytes as UTF-8 (replacement chars)', randomBytes(MB).toString('utf8')],
  ['lone surrogates', '\ud800'.repeat(MB / 4) + '\udc00'.repeat(MB / 4)],
  ['punctuation run', '!'.repeat(MB)],
  ['mixed symbols', fill('#$%&*+-/<=>@^_|~', MB)],
  ['digits', '7'.repeat(MB)],
  ['spaces', ' '.repeat(MB)],
  ['tabs', '\t'.repeat(MB)],
  ['newlines', '\n'.repeat(MB)],
  ['CRLF', '\r\n'.repeat(MB / 2)],
  ['non-breaking spaces between letters', fill('a\u00a0', MB)],
  ['ideographic spaces', '\u3000'.repeat(MB / 2)],
  ['zero-width characters', fill('a\u200b\u200c\u200d\ufeff', MB)],
  ['minified code', fill('function(a,b){return a+b;}var x=[1,2,3];', MB)],
  ['one long URL', `https://example.com/${'path/'.repeat(MB / 5)}?q=${'x'.repeat(1000)}`],
  ['JSON without spaces', JSON.stringify(Array.from({ length: 40_000 }, (_, i) => ({ id: i, v: 'x'.repeat(20) })))],
  ['special-token text', fill('<|endoftext|><|im_start|>', MB)],
  ['prose then a 1 MB word then prose', `Hello there, how are you? ${'q'.repeat(MB)} Fine, thanks.`],
  ['many short words', fill('lorem ipsum dolor sit amet ', 2 * MB)],
];

function recordingTokenizer() {
  const calls: number[] = [];
  const tokenizer = (text: string) => {
    calls.push(text.length);
    return countTokens(text, { disallowedSpecial: new Set<string>() });
  };
  return { calls, tokenizer };
}

describe('token counting of pathological text is bounded', () => {
  it.each(corpus)('%s: the exact tokenizer sees only bounded windows, capped per text', async (_name, text) => {
    const { calls, tokenizer } = recordingTokenizer();
    const counter = new TokenCounter({ tokenizer });
    const tokens = await counter.preciseText(text);
    expect(calls.length).toBeGreaterThan(0);
    expect(Math.max(...calls)).toBeLessThanOrEqual(windowChars);
    expect(calls.reduce((sum, n) => sum + n, 0)).toBeLessThanOrEqual(maxExactChars);
    // A sane figure: some tokens, and no more than UTF-8 bytes (byte-level BPE never exceeds one token per byte).
    expect(tokens).toBeGreaterThan(0);
    expect(tokens).toBeLessThanOrEqual(Buffer.byteLength(text, 'utf8'));
  });

  it('a session of pathological messages is measured with bounded work per message, once each', async () => {
    const { calls, tokenizer } = recordingTokenizer();
    const counter = new TokenCounter({ tokenizer });
    const messages: ChatMessage[] = corpus.slice(0, 12).map(([, text], i) => ({
      role: i % 2 ? 'assistant' : 'user',
      content: text,
    }));
    const cheap = counter.cheapMessages(messages);
    const first = await counter.countMessages(messages, cheap);
    expect(first.precise).toBe(true);
    expect(calls.reduce((sum, n) => sum + n, 0)).toBeLessThanOrEqual(messages.length * maxExactChars);
    const before = calls.length;
    expect(await counter.countMessages(messages, cheap)).toEqual(first);
    expect(calls.length).toBe(before);
  });

  it('the cheap estimate is linear too: one pass over the characters', () => {
    for (const [, text] of corpus) expect(estimateTextTokens(text)).toBeGreaterThan(0);
  });
});
