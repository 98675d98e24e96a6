/** A turn that could not be saved tells the chat what happened and what to do, without the server's paths. */
import { describe, expect, it } from 'vitest';
import { TurnNotSavedError } from '../../src/agent/save-errors.js';
import { MessageBus } from '../../src/bus/message-bus.js';
import { Dispatcher } from '../../src/gateway/dispatcher.js';
import { FileWriteError } from '../../src/util/errors.js';

async function replyTo(error: Error): Promise<string> {
  const bus = new MessageBus();
  const loop = { processMessage: () => Promise.reject(error) };
  const dispatcher = new Dispatcher({ bus, loop, maxConcurrent: 1 });
  dispatcher.start();
  bus.publishInbound({ channel: 'test', senderId: 'u', chatId: 'c', content: 'hello' });
  const reply = await bus.consumeOutbound();
  await dispatcher.drain(1_000);
  return reply.content;
}

const at = '/home/me/.nanobot/sessions/0123/dGVzdDpj.jsonl';

describe('Dispatcher: a turn whose save failed', () => {
  it.each([
    [
      'your message',
      'ENOSPC',
      /^Sorry, I could not save your message: disk full \(ENOSPC\) on the server; free space and resend\.$/,
    ],
    [
      'the answer',
      'EDQUOT',
      /^Sorry, I could not save the answer: disk quota exceeded \(EDQUOT\) on the server; free space/,
    ],
    [
      'your message',
      'EROFS',
      /read-only file system \(EROFS\) on the server; make the sessions folder writable and resend/,
    ],
    ['your message', 'EACCES', /permission denied \(EACCES\) on the server; make the sessions folder writable/],
    ['the answer', 'EIO', /I\/O error \(EIO\) on the server; check the disk and resend/],
  ] as const)('%s, %s: says so in the chat, without the path', async (what, code, expected) => {
    const content = await replyTo(new TurnNotSavedError(what, new FileWriteError(code, at)));
    expect(content).toMatch(expected);
    expect(content).not.toContain('/home/me');
  });

  it('any other failure keeps the generic reply', async () => {
    expect(await replyTo(new Error(`boom at ${at}`))).toBe(
      'Sorry, something went wrong while answering; the details are in the gateway log.',
    );
  });
});
