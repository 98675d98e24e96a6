/** WeCom behaviours beyond the contract, through a real gateway, the official SDK and the fake long connection. */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { wecomChannel } from '../../../src/channels/wecom/index.js';
import { eventually } from '../contract.js';
import { healthOf } from '../gateway-harness.js';
import { BOT_ID, SECRET } from './fake-wecom.js';
import { GROUP, lastUserText, OWNER, quiet, startWecomGateway, type WecomGatewayRun, waitState } from './helpers.js';
import { assertWecomMarkdown } from './wecom-markdown.js';

const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==',
  'base64',
);

const open: WecomGatewayRun[] = [];
afterEach(async () => {
  for (const run of open.splice(0)) await run.close();
});

async function start(settings: Record<string, unknown> = {}, fake: Parameters<typeof startWecomGateway>[1] = {}) {
  const run = await startWecomGateway(settings, fake);
  open.push(run);
  await waitState(run.gateway, 'running');
  return run;
}

describe('wecom gateway', () => {
  it('subscribes with bot_id and secret, and answers with a finished stream reply on the callback’s req_id', async () => {
    const run = await start();
    expect(run.wecom.frames[0]).toMatchObject({ cmd: 'aibot_subscribe', body: { bot_id: BOT_ID, secret: SECRET } });
    run.llm.enqueue({ text: 'It is **4**.' });
    const reqId = run.wecom.userSays({ userId: OWNER, text: '2+2?' });
    await eventually(() => expect(run.wecom.messagesIn(OWNER)).toEqual(['It is **4**.']));
    await eventually(() => expect(run.wecom.messages[0]).toMatchObject({ via: 'reply', finished: true }));
    // The reply streams into one stream message on the callback's req_id, finished by its last frame.
    const replies = run.wecom.frames.filter((f) => f.cmd === 'aibot_respond_msg');
    const streams = replies.map((f) => f.body?.stream as { id: string; finish: boolean });
    expect(replies.every((f) => f.headers?.req_id === reqId && f.body?.msgtype === 'stream')).toBe(true);
    expect(new Set(streams.map((s) => s.id)).size).toBe(1);
    expect(streams.map((s) => s.finish)).toEqual([...streams.slice(1).map(() => false), true]);
    expect(run.logs.join('\n')).not.toContain(SECRET);
  });

  it('shows the answer growing in an open stream message while the model is still writing', async () => {
    const run = await start({ streamEditInterval: 0.05 });
    const words = Array.from({ length: 60 }, (_, i) => `word${i}`).join(' ');
    run.llm.enqueue({ text: words, stallAfterEvents: 6 });
    run.wecom.userSays({ userId: OWNER, text: 'write slowly' });
    await eventually(() => expect(run.wecom.messages[0]?.text ?? '').toMatch(/^word0/));
    expect(run.wecom.messages).toHaveLength(1);
    expect(run.wecom.messages[0]).toMatchObject({ kind: 'stream', finished: false, via: 'reply' });
    expect(words.startsWith(run.wecom.messages[0]?.text ?? '-')).toBe(true);
  });

  it('a long streamed answer goes as several stream messages, each under 20480 bytes and each finished', async () => {
    const run = await start({ streamEditInterval: 0.05 });
    run.llm.enqueue({ text: `${'这是一个很长的回答。'.repeat(900)}\n\nEND` });
    run.wecom.userSays({ userId: OWNER, text: 'write a lot' });
    await eventually(() => expect(run.wecom.messages.every((m) => m.finished)).toBe(true));
    await eventually(() => expect(run.wecom.messagesIn(OWNER).join('')).toContain('END'));
    expect(run.wecom.messages.length).toBeGreaterThanOrEqual(3);
    for (const text of run.wecom.messagesIn(OWNER)) assertWecomMarkdown(text);
    expect(run.wecom.messagesIn(OWNER).join('').replace(/\s/g, '')).toBe(`${'这是一个很长的回答。'.repeat(900)}END`);
  });

  it('answers a group @-message in the group, without the @mention; other members stay unanswered', async () => {
    const run = await start();
    run.llm.enqueue({ text: 'Hi group.' });
    run.wecom.userSays({ userId: OWNER, chatType: 'group', chatId: GROUP, text: '@助手 hello bot' });
    await eventually(() => expect(run.wecom.messagesIn(GROUP)).toEqual(['Hi group.']));
    expect(lastUserText(run)).toContain('hello bot');
    expect(lastUserText(run)).not.toContain('@助手');
    run.wecom.userSays({ userId: 'lisi', chatType: 'group', chatId: GROUP, text: '@助手 me too' });
    await quiet();
    expect(run.wecom.messagesIn(GROUP)).toEqual(['Hi group.']);
    expect(run.wecom.messagesIn('lisi')).toEqual([]);
    expect(run.llm.requests).toHaveLength(1);
  });

  it('decrypts an image and a named file into the media folder; voice arrives as WeCom’s transcript', async () => {
    const run = await start();
    run.llm.enqueue({ text: 'A tiny picture.' }, { text: 'Got the report.' }, { text: 'Heard you.' });
    const image = run.wecom.hostFile(PNG);
    run.wecom.userSays({ userId: OWNER, body: { msgtype: 'image', image } });
    await eventually(() => expect(run.wecom.messagesIn(OWNER)).toEqual(['A tiny picture.']));
    const sent = lastUserText(run);
    expect(sent).toContain(`data:image/png;base64,${PNG.toString('base64')}`);
    const path = /\[image: ([^\]]+)\]/.exec(sent)?.[1] ?? '';
    expect(path.startsWith(join(run.dataDir, 'media', 'wecom'))).toBe(true);
    expect(readFileSync(path)).toEqual(PNG);

    const file = run.wecom.hostFile(Buffer.from('quarterly numbers'));
    run.wecom.userSays({ userId: OWNER, body: { msgtype: 'file', file: { ...file, name: 'Q3 季度报告.txt' } } });
    await eventually(() => expect(run.wecom.messagesIn(OWNER)).toHaveLength(2));
    const filePath = /\[file: ([^\]]+)\]/.exec(lastUserText(run))?.[1] ?? '';
    expect(filePath).toMatch(/-Q3_季度报告\.txt$/);
    expect(readFileSync(filePath, 'utf8')).toBe('quarterly numbers');

    run.wecom.userSays({ userId: OWNER, body: { msgtype: 'voice', voice: { content: '明天开会吗' } } });
    await eventually(() => expect(run.wecom.messagesIn(OWNER)).toHaveLength(3));
    expect(lastUserText(run)).toContain('[voice] 明天开会吗');
  });

  it('reads a mixed message: its text and its images', async () => {
    const run = await start();
    run.llm.enqueue({ text: 'Nice.' });
    const image = run.wecom.hostFile(PNG);
    run.wecom.userSays({
      userId: OWNER,
      body: {
        msgtype: 'mixed',
        mixed: {
          msg_item: [
            { msgtype: 'text', text: { content: 'look at this' } },
            { msgtype: 'image', image },
          ],
        },
      },
    });
    await eventually(() => expect(run.wecom.messagesIn(OWNER)).toEqual(['Nice.']));
    expect(lastUserText(run)).toContain('look at this');
    expect(lastUserText(run)).toContain(`data:image/png;base64,${PNG.toString('base64')}`);
  });

  it('sends the message tool’s files: chunked upload over the connection, then a media reply', async () => {
    const run = await start();
    writeFileSync(join(run.workspace, 'chart.png'), PNG);
    writeFileSync(join(run.workspace, 'report.txt'), 'quarterly numbers');
    run.llm.enqueue(
      {
        toolCalls: [{ name: 'message', arguments: { content: 'Here they are.', media: ['chart.png', 'report.txt'] } }],
      },
      { text: 'Sent them.' },
    );
    run.wecom.userSays({ userId: OWNER, text: 'the files, please' });
    await eventually(() =>
      expect(run.wecom.messages.map((m) => m.kind)).toEqual(['image', 'file', 'stream', 'stream']),
    );
    const [png, txt] = run.wecom.messages.map((m) => run.wecom.uploads.get(m.mediaId ?? ''));
    expect(png).toMatchObject({ type: 'image', filename: 'chart.png', data: PNG });
    expect(txt).toMatchObject({ type: 'file', filename: 'report.txt', data: Buffer.from('quarterly numbers') });
    expect(run.wecom.messages.map((m) => m.via)).toEqual(['reply', 'reply', 'reply', 'reply']);
    expect(run.wecom.messagesIn(OWNER).slice(2)).toEqual(['Here they are.', 'Sent them.']);
  });

  it('pushes with aibot_send_msg when the callback can no longer be answered, and to a chat with no callback', async () => {
    const run = await start();
    run.llm.enqueue({ text: 'first' });
    run.wecom.userSays({ userId: OWNER, text: 'hi' });
    await eventually(() => expect(run.wecom.messagesIn(OWNER)).toEqual(['first']));
    run.wecom.expireCallbacks();
    run.gateway.bus.publishOutbound({ channel: 'wecom', chatId: OWNER, content: 'a reminder' });
    await eventually(() => expect(run.wecom.messagesIn(OWNER)).toEqual(['first', 'a reminder']));
    expect(run.wecom.messages[1]).toMatchObject({ kind: 'markdown', via: 'push' });
    run.gateway.bus.publishOutbound({ channel: 'wecom', chatId: GROUP, content: 'to the group' });
    await eventually(() => expect(run.wecom.messagesIn(GROUP)).toEqual(['to the group']));
    expect(run.wecom.messages[2]).toMatchObject({ kind: 'markdown', via: 'push' });
  });

  it('sends welcomeMessage on enter_chat to someone allowFrom names, and nothing to a stranger', async () => {
    const run = await start({ welcomeMessage: '你好，我是助手' });
    run.wecom.enterChat(OWNER);
    await eventually(() => expect(run.wecom.welcomes).toEqual([{ chatId: OWNER, content: '你好，我是助手' }]));
    run.wecom.enterChat('stranger');
    await quiet();
    expect(run.wecom.welcomes).toHaveLength(1);
    expect(run.llm.requests).toHaveLength(0);
  });

  it('after another connection takes the bot over, waits instead of taking it back at once', async () => {
    const run = await start();
    expect(run.wecom.subscribes()).toBe(1);
    run.wecom.kick();
    await eventually(async () => expect((await healthOf(run.gateway)).channels.wecom).not.toBe('running'));
    await quiet();
    expect(run.wecom.subscribes()).toBe(1);
    expect(run.logs.join('\n')).toContain('another connection of this bot took over');
  });

  it('a refused secret stops the channel with a setup error that names the keys, not the secret', async () => {
    const run = await startWecomGateway({ secret: 'wrong-secret-value' });
    open.push(run);
    await eventually(async () => {
      const details = (await healthOf(run.gateway)).channelDetails.wecom;
      expect(details?.state).toBe('error');
      expect(details?.error).toContain('channels.wecom.secret');
    }, 10_000);
    expect(run.logs.join('\n')).not.toContain('wrong-secret-value');
  });

  it('setup errors name the key: no botId, a plain ws:// endpoint on another machine', () => {
    expect(() => wecomChannel.parse({ secret: 's' })).toThrow(/channels\.wecom\.botId/);
    expect(() => wecomChannel.parse({ botId: 'b' })).toThrow(/channels\.wecom\.secret/);
    expect(() => wecomChannel.parse({ botId: 'b', secret: 's', wsUrl: 'ws://wecom.example.com' })).toThrow(
      /channels\.wecom\.wsUrl must be a wss/,
    );
    // Upstream's snake_case keys are accepted by the config loader; the schema reads camelCase.
    expect(wecomChannel.parse({ botId: 'b', secret: 's', welcomeMessage: 'hi' })).toMatchObject({
      botId: 'b',
      welcomeMessage: 'hi',
      wsUrl: 'wss://openws.work.weixin.qq.com',
    });
  });
});
