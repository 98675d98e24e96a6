/** NapCat behaviours beyond the contract, through a real gateway, `ws` and the fake OneBot v11 implementation. */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { napcatChannel } from '../../../src/channels/napcat/index.js';
import { eventually } from '../contract.js';
import { SELF, startFakeOneBot } from './fake-onebot.js';
import {
  GROUP,
  lastUserText,
  type NapcatGateway,
  OWNER,
  OWNER_CHAT,
  quiet,
  startNapcatGateway,
  waitState,
} from './helpers.js';

const open: NapcatGateway[] = [];
afterEach(async () => {
  for (const run of open.splice(0)) await run.close();
});

async function start(settings: Record<string, unknown> = {}) {
  const run = await startNapcatGateway(settings);
  open.push(run);
  await waitState(run.gateway, 'running');
  return run;
}

const PNG = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 1, 2, 3]);

describe('napcat channel', () => {
  it('connects with the access token as a Bearer header and learns its QQ number from get_login_info', async () => {
    const run = await start();
    expect(run.bot.upgrades[0]?.authorization).toBe(`Bearer ${run.bot.token}`);
    expect(run.bot.actions[0]).toEqual({ action: 'get_login_info', params: {} });
  });

  it('in a group answers only when @mentioned (the at segment with its self_id) or when a reply quotes its message', async () => {
    const run = await start();
    run.bot.userSays({ chatId: GROUP, userId: OWNER, nickname: 'Alice', text: 'just chatting among humans' });
    run.bot.userSays({
      chatId: GROUP,
      userId: OWNER,
      segments: [
        { type: 'at', data: { qq: 'all' } },
        { type: 'text', data: { text: ' everyone, lunch?' } },
      ],
    });
    await quiet();
    expect(run.llm.requests).toHaveLength(0);

    run.llm.enqueue({ text: 'It is **4**.' }, { text: 'That is 6.' });
    run.bot.userSays({ chatId: GROUP, userId: OWNER, nickname: 'Alice', text: '@bot what is 2+2?' });
    await eventually(() => expect(run.bot.messagesIn(GROUP)).toEqual(['It is 4.']));
    expect(lastUserText(run)).toContain('Alice: what is 2+2?');
    expect(lastUserText(run)).not.toContain(String(SELF.id));

    const botMessage = String(run.bot.sent[0]?.messageId);
    run.bot.userSays({
      chatId: GROUP,
      userId: OWNER,
      nickname: 'Alice',
      segments: [
        { type: 'reply', data: { id: botMessage } },
        { type: 'text', data: { text: 'and 3+3?' } },
      ],
    });
    await eventually(() => expect(run.bot.messagesIn(GROUP)).toEqual(['It is 4.', 'That is 6.']));
    expect(lastUserText(run)).toContain('Alice: and 3+3?');
  });

  it('groupPolicyOverrides opens one group; an upstream numeric groupPolicy of 1 means open', async () => {
    const run = await start({ groupPolicyOverrides: { '424242': 'open' } });
    run.llm.enqueue({ text: 'Heard you.' });
    run.bot.userSays({ chatId: GROUP, userId: OWNER, text: 'no mention here' });
    await eventually(() => expect(run.bot.messagesIn(GROUP)).toEqual(['Heard you.']));
    run.bot.userSays({ chatId: 'group:515151', userId: OWNER, text: 'nor here' });
    await quiet();
    expect(run.llm.requests).toHaveLength(1);

    expect(napcatChannel.parse({ wsUrl: 'ws://127.0.0.1:3001', groupPolicy: 1 })).toMatchObject({
      groupPolicy: 'open',
    });
    expect(napcatChannel.parse({ wsUrl: 'ws://127.0.0.1:3001', groupPolicy: 0.3 })).toMatchObject({
      groupPolicy: 'mention',
    });
  });

  it('reads messages in the CQ-code string form too: codes become segments, escaped brackets stay text', async () => {
    const run = await start();
    run.llm.enqueue({ text: 'Brackets seen.' });
    run.bot.userSays({
      chatId: GROUP,
      userId: OWNER,
      nickname: 'Bob',
      asString: `[CQ:at,qq=${SELF.id}] what does &#91;CQ:face,id=1&#93; mean &amp; why?`,
    });
    await eventually(() => expect(run.bot.messagesIn(GROUP)).toEqual(['Brackets seen.']));
    expect(lastUserText(run)).toContain('Bob: what does [CQ:face,id=1] mean & why?');
  });

  it('downloads an image from the URL the implementation gives, and a file it names only by id (get_file)', async () => {
    const run = await start();
    run.llm.enqueue({ text: 'A tiny picture.' }, { text: 'Got the notes.' });
    const url = run.bot.serve('cat.png', PNG);
    run.bot.userSays({
      chatId: OWNER_CHAT,
      userId: OWNER,
      segments: [
        { type: 'text', data: { text: 'what is this?' } },
        { type: 'image', data: { file: 'cat.png', url, file_size: String(PNG.length) } },
      ],
    });
    await eventually(() => expect(run.bot.messagesIn(OWNER_CHAT)).toEqual(['A tiny picture.']));
    const sent = lastUserText(run);
    expect(sent).toContain('what is this?');
    expect(sent).toContain(`data:image/png;base64,${PNG.toString('base64')}`);
    const path = /\[image: ([^\]]+)\]/.exec(sent)?.[1] ?? '';
    expect(path.startsWith(join(run.dataDir, 'media', 'napcat'))).toBe(true);
    expect(readFileSync(path)).toEqual(PNG);

    run.bot.serve('notes-file-id', Buffer.from('meeting notes'));
    run.bot.userSays({
      chatId: OWNER_CHAT,
      userId: OWNER,
      segments: [{ type: 'file', data: { file: 'notes.txt', file_id: 'notes-file-id', file_size: 13 } }],
    });
    await eventually(() => expect(run.bot.messagesIn(OWNER_CHAT)).toEqual(['A tiny picture.', 'Got the notes.']));
    expect(run.bot.actions.map((a) => a.action)).toContain('get_file');
    const notes = /\[file: ([^\]]+)\]/.exec(lastUserText(run))?.[1] ?? '';
    expect(notes).toMatch(/notes\.txt$/);
    expect(readFileSync(notes, 'utf8')).toBe('meeting notes');
  });

  it('sends the message tool’s files as image and file segments in base64; upload_private_file when file segments fail', async () => {
    const run = await start();
    writeFileSync(join(run.workspace, 'chart.png'), PNG);
    writeFileSync(join(run.workspace, 'report.txt'), 'quarterly numbers');
    run.llm.enqueue(
      {
        toolCalls: [{ name: 'message', arguments: { content: 'Here they are.', media: ['chart.png', 'report.txt'] } }],
      },
      { text: 'Sent them.' },
    );
    run.bot.userSays({ chatId: OWNER_CHAT, userId: OWNER, text: 'the files, please' });
    await eventually(() =>
      expect(run.bot.messagesIn(OWNER_CHAT)).toEqual(['[image]', '[file]', 'Here they are.', 'Sent them.']),
    );
    const [image, file] = run.bot.sent;
    expect(image?.segments[0]?.data.file).toBe(`base64://${PNG.toString('base64')}`);
    expect(file?.segments[0]?.data).toEqual({
      file: `base64://${Buffer.from('quarterly numbers').toString('base64')}`,
      name: 'report.txt',
    });

    run.bot.unsupported.add('file-segment');
    run.llm.enqueue(
      { toolCalls: [{ name: 'message', arguments: { content: 'Again.', media: ['report.txt'] } }] },
      { text: 'Done.' },
    );
    run.bot.userSays({ chatId: OWNER_CHAT, userId: OWNER, text: 'once more' });
    await eventually(() => expect(run.bot.messagesIn(OWNER_CHAT).slice(4)).toEqual(['[file]', 'Again.', 'Done.']));
    expect(run.bot.actions.find((a) => a.action === 'upload_private_file')?.params).toMatchObject({
      user_id: OWNER,
      name: 'report.txt',
    });
  });

  it('quotes the user’s message with a reply segment when replyToMessage is on (first part only)', async () => {
    const run = await start({ replyToMessage: true });
    run.llm.enqueue({ text: 'Quoted answer.' });
    const id = run.bot.userSays({ chatId: OWNER_CHAT, userId: OWNER, text: 'quote me' });
    await eventually(() => expect(run.bot.messagesIn(OWNER_CHAT)).toEqual(['Quoted answer.']));
    expect(run.bot.sent[0]?.segments[0]).toEqual({ type: 'reply', data: { id: String(id) } });
  });

  it('sends a reply holding CQ codes as literal text: no @all, no image from a path', async () => {
    const run = await start();
    const hostile = 'Sure [CQ:at,qq=all] [CQ:image,file=file:///etc/passwd] &#91;CQ:face,id=1&#93;';
    run.llm.enqueue({ text: hostile });
    run.bot.userSays({ chatId: OWNER_CHAT, userId: OWNER, text: 'say something odd' });
    // Markdown → plain text reads the entities as the brackets they stand for: still text, never a code.
    const literal = 'Sure [CQ:at,qq=all] [CQ:image,file=file:///etc/passwd] [CQ:face,id=1]';
    await eventually(() => expect(run.bot.messagesIn(OWNER_CHAT)).toEqual([literal]));
    const segments = run.bot.sent.flatMap((m) => m.segments);
    expect(segments.map((s) => s.type)).toEqual(['text']);
    expect(Array.isArray(run.bot.sent[0]?.raw)).toBe(true);
  });

  it('tells the agent about a new group member (welcomeNewMembers), by the name get_group_member_info gives', async () => {
    const run = await start({ allowFrom: ['*'] });
    run.llm.enqueue({ text: 'Welcome!' });
    run.bot.notice({ notice_type: 'group_increase', sub_type: 'approve', group_id: 424242, user_id: 555 });
    await eventually(() => expect(run.bot.messagesIn(GROUP)).toEqual(['Welcome!']));
    expect(lastUserText(run)).toContain('new member member555 joined group 424242');
  });

  it('a reply whose send_msg was in flight when the connection dropped is sent again after the reconnect', async () => {
    const run = await start();
    run.bot.silent.add('send_msg');
    run.llm.enqueue({ text: 'Kept for you.' });
    run.bot.userSays({ chatId: OWNER_CHAT, userId: OWNER, text: 'answer me across a drop' });
    await eventually(() => expect(run.bot.actions.map((a) => a.action)).toContain('send_msg'));
    run.bot.drop();
    run.bot.silent.delete('send_msg');
    run.bot.restore();
    await eventually(() => expect(run.bot.messagesIn(OWNER_CHAT)).toEqual(['Kept for you.']), 10_000);
  });

  it('verify: names the QQ account behind the server; a wrong token fails', async () => {
    const bot = await startFakeOneBot();
    try {
      const good = await napcatChannel.verify?.({ wsUrl: bot.url, accessToken: bot.token });
      expect(good).toMatchObject({ status: 'pass', identity: { name: SELF.nickname, account: String(SELF.id) } });
      const bad = await napcatChannel.verify?.({ wsUrl: bot.url, accessToken: 'wrong' });
      expect(bad?.status).toBe('fail');
      expect(bad?.message).toContain('refused channels.napcat.accessToken');
    } finally {
      await bot.close();
    }
  });

  it('a wrong wsUrl is a setup error naming the key', () => {
    expect(() => napcatChannel.parse({ wsUrl: 'http://127.0.0.1:3001' })).toThrow(/channels\.napcat\.wsUrl/);
  });
});
