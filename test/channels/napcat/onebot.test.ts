/** The OneBot v11 pieces alone: the socket's echo matching and timeouts, and reading messages in both forms. */

import { afterEach, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { ActionFailed, OneBotSocket } from '../../../src/channels/napcat/onebot.js';
import { escapeCqText, parseCqString, readMessage, summarize } from '../../../src/channels/napcat/segments.js';
import { type FakeOneBot, SELF, startFakeOneBot } from './fake-onebot.js';

const fakes: FakeOneBot[] = [];
const sockets: OneBotSocket[] = [];
afterEach(async () => {
  for (const socket of sockets.splice(0)) socket.close();
  for (const fake of fakes.splice(0)) await fake.close();
});

async function connected(onClose: (err: Error) => void = () => undefined) {
  const bot = await startFakeOneBot();
  fakes.push(bot);
  const events: unknown[] = [];
  const socket = new OneBotSocket({
    WebSocket,
    url: bot.url,
    accessToken: bot.token,
    onEvent: (event) => events.push(event),
    onClose,
  });
  sockets.push(socket);
  await socket.open();
  return { bot, socket, events };
}

describe('OneBotSocket', () => {
  it('matches answers to calls by echo, also when they arrive out of order', async () => {
    const { bot, socket } = await connected();
    bot.delays.set('get_login_info', 150);
    const slow = socket.call('get_login_info', {});
    const fast = socket.call('get_group_member_info', { group_id: 1, user_id: 7 });
    await expect(fast).resolves.toMatchObject({ nickname: 'member7' });
    await expect(slow).resolves.toEqual({ user_id: SELF.id, nickname: SELF.nickname });
  });

  it('a call the server never answers fails after its timeout; a failure answer names the action and retcode', async () => {
    const { bot, socket } = await connected();
    bot.silent.add('send_msg');
    await expect(socket.call('send_msg', {}, 100)).rejects.toThrow('OneBot action send_msg got no answer in 0.1 s');
    const failed = socket.call('no_such_action', {});
    await expect(failed).rejects.toBeInstanceOf(ActionFailed);
    await expect(failed).rejects.toThrow(/no_such_action failed \(retcode 1404/);
  });

  it('a dropped connection fails the calls in flight and is reported once', async () => {
    const closes: Error[] = [];
    const { bot, socket } = await connected((err) => closes.push(err));
    bot.silent.add('send_msg');
    const pending = socket.call('send_msg', {});
    bot.drop();
    await expect(pending).rejects.toThrow(/lost the connection/);
    expect(closes).toHaveLength(1);
    await expect(socket.call('get_login_info', {})).rejects.toThrow('not connected');
  });

  it('passes on events (heartbeats included) and ignores frames that are neither', async () => {
    const { bot, events } = await connected();
    bot.push('garbage');
    bot.push({ echo: 'nobody', status: 'ok' });
    await new Promise((resolve) => setTimeout(resolve, 250));
    expect(events.some((e) => (e as { meta_event_type?: string }).meta_event_type === 'heartbeat')).toBe(true);
  });
});

describe('OneBot messages', () => {
  it('reads CQ-code strings: codes with escaped parameters, text unescaped', () => {
    expect(
      parseCqString('hi [CQ:at,qq=42] look&#91;1&#93; [CQ:image,file=a&#44;b.png,url=https://x/y?a=1&amp;b=2]'),
    ).toEqual([
      { type: 'text', data: { text: 'hi ' } },
      { type: 'at', data: { qq: '42' } },
      { type: 'text', data: { text: ' look[1] ' } },
      { type: 'image', data: { file: 'a,b.png', url: 'https://x/y?a=1&b=2' } },
    ]);
    expect(parseCqString(escapeCqText('[CQ:at,qq=all] & more'))).toEqual([
      { type: 'text', data: { text: '[CQ:at,qq=all] & more' } },
    ]);
  });

  it('reads the array form, numbers as strings, and drops malformed segments', () => {
    expect(readMessage([{ type: 'at', data: { qq: 42 } }, { nope: true }, 'x', { type: 'text', data: null }])).toEqual([
      { type: 'at', data: { qq: '42' } },
      { type: 'text', data: {} },
    ]);
  });

  it('summarizes: the bot’s at is a mention (not @all, not another number), replies and media are picked out', () => {
    const read = summarize(
      readMessage([
        { type: 'reply', data: { id: '99' } },
        { type: 'at', data: { qq: '42' } },
        { type: 'at', data: { qq: 'all' } },
        { type: 'at', data: { qq: '7' } },
        { type: 'text', data: { text: ' hello' } },
        { type: 'image', data: { file: 'abc.png', url: 'https://cdn.example/abc', file_size: '12' } },
        { type: 'file', data: { file: 'doc.pdf', file_id: 'f1' } },
      ]),
      '42',
    );
    expect(read).toEqual({
      text: '@all@7 hello',
      mentionsBot: true,
      replyTo: '99',
      media: [
        { kind: 'image', url: 'https://cdn.example/abc', name: 'abc.png', size: 12, fileId: 'abc.png' },
        { kind: 'file', name: 'doc.pdf', fileId: 'f1' },
      ],
    });
    expect(summarize(readMessage([{ type: 'at', data: { qq: 'all' } }]), '42').mentionsBot).toBe(false);
  });
});
