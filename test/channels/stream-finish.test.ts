/**
 * MessageStream and a platform whose streamed messages stay open until closed (WeCom): the first text of a stream is
 * sent with `streaming`, and `finishStream` gets every message of the reply, in order, once its final text is in.
 */
import { describe, expect, it } from 'vitest';
import type { OutgoingPart, ReplyTarget, SendOptions } from '../../src/channels/platform.js';
import { MessageStream } from '../../src/channels/streaming.js';
import { silentLogger } from '../../src/util/log.js';
import { MemoryPlatform } from './memory-platform.js';

class ClosingPlatform extends MemoryPlatform {
  readonly opened: { id: string; streaming: boolean }[] = [];
  readonly finished: { ids: readonly string[]; texts: string[] }[] = [];

  override async sendText(target: ReplyTarget, part: OutgoingPart, options?: SendOptions): Promise<string> {
    const id = await super.sendText(target, part, options);
    this.opened.push({ id, streaming: options?.streaming === true });
    return id;
  }

  async finishStream(_target: ReplyTarget, messageIds: readonly string[]): Promise<void> {
    this.finished.push({
      ids: messageIds,
      texts: messageIds.map((id) => this.messages.find((m) => m.id === id)?.text ?? ''),
    });
  }
}

const render = (limit: number) => (markdown: string) => {
  const parts: OutgoingPart[] = [];
  for (let i = 0; i < markdown.length; i += limit) {
    const text = markdown.slice(i, i + limit);
    parts.push({ text, markdown: text });
  }
  return parts.length ? parts : [{ text: '', markdown: '' }];
};

describe('a stream on a platform that closes its streamed messages', () => {
  it('opens with streaming, then finishes every part once, after the final text', async () => {
    const platform = new ClosingPlatform({ editMessages: true });
    const stream = new MessageStream({
      platform,
      target: { chatId: 'c' },
      render: render(10),
      intervalMs: 0,
      log: silentLogger,
    });
    stream.append('hello ');
    await stream.finish('hello world, and more');
    expect(platform.opened.every((o) => o.streaming)).toBe(true);
    expect(platform.finished).toHaveLength(1);
    expect(platform.finished[0]?.ids).toEqual(platform.opened.map((o) => o.id));
    expect(platform.finished[0]?.texts.join('')).toBe('hello world, and more');
  });

  it('a platform without finishStream is not asked to close anything', async () => {
    const platform = new MemoryPlatform({ editMessages: true });
    const stream = new MessageStream({
      platform,
      target: { chatId: 'c' },
      render: render(100),
      intervalMs: 0,
      log: silentLogger,
    });
    await stream.finish('done');
    expect(platform.messages.map((m) => m.text)).toEqual(['done']);
  });
});
