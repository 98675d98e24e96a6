import { describe, expect, it } from 'vitest';
import { estimateTextTokens, IMAGE_TOKENS, TokenCounter } from '../../src/memory/tokens.js';
import type { ChatMessage } from '../../src/providers/types.js';

describe('token estimation', () => {
  it('over-estimates ordinary text and counts non-ASCII characters one each', () => {
    expect(estimateTextTokens('abcdef')).toBe(2);
    expect(estimateTextTokens('你好')).toBe(2);
  });

  it('counts text, tool-call arguments, reasoning and images', () => {
    const counter = new TokenCounter();
    const plain: ChatMessage = { role: 'assistant', content: 'x'.repeat(30) };
    const rich: ChatMessage = {
      role: 'assistant',
      content: [
        { type: 'text', text: 'x'.repeat(30) },
        { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } },
      ],
      reasoning_content: 'y'.repeat(30),
      tool_calls: [{ id: 'c', type: 'function', function: { name: 'f', arguments: 'z'.repeat(30) } }],
    };
    expect(counter.cheapMessage(rich)).toBeGreaterThan(counter.cheapMessage(plain) + IMAGE_TOKENS + 19);
  });

  it('caches per message object and uses the real tokenizer only above the threshold', async () => {
    const counter = new TokenCounter({ preciseAbove: 0.6 });
    const messages: ChatMessage[] = Array.from({ length: 50 }, (_, i) => ({
      role: 'user',
      content: `Sentence number ${i} about the weather in Lisbon, which is sunny today. `.repeat(5),
    }));
    const cheap = counter.cheapMessages(messages);
    expect(await counter.countMessages(messages, cheap * 10)).toEqual({ tokens: cheap, precise: false });
    const near = await counter.countMessages(messages, cheap);
    expect(near.precise).toBe(true);
    expect(near.tokens).toBeLessThan(cheap);

    // Cached: mutating the content of an already-counted message object does not change its count.
    (messages[0] as ChatMessage).content = 'changed';
    expect(counter.cheapMessages(messages)).toBe(cheap);
    expect((await counter.countMessages(messages, cheap)).tokens).toBe(near.tokens);
  });

  it('counts special-token text as plain text instead of throwing', async () => {
    const counter = new TokenCounter();
    expect(await counter.preciseText('hi <|endoftext|> there')).toBeGreaterThan(3);
  });
});
