/** DingTalk behaviours beyond the contract, through a real gateway, the dingtalk-stream SDK and the fake DingTalk. */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { dingtalkChannel } from '../../../src/channels/dingtalk/index.js';
import { eventually } from '../contract.js';
import { CLIENT_ID, CLIENT_SECRET, ROBOT_TOPIC, startFakeDingtalk } from './fake-dingtalk.js';
import {
  type DingtalkGatewayRun,
  GROUP,
  lastUserText,
  MEMBER,
  OWNER,
  quiet,
  startDingtalkGateway,
  waitState,
} from './helpers.js';

const open: DingtalkGatewayRun[] = [];
afterEach(async () => {
  for (const run of open.splice(0)) await run.close();
});

async function start(settings: Record<string, unknown> = {}) {
  const run = await startDingtalkGateway(settings);
  open.push(run);
  await waitState(run.gateway, 'running');
  return run;
}

const PNG = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 1, 2, 3]);
/** DingTalk's clients send pictures as JPEG (upstream names them image.jpg too). */
const JPEG = Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0, 0x10, 0x4a, 0x46, 0x49, 0x46, 0, 1]);
const acks = (run: DingtalkGatewayRun) =>
  run.dingtalk.frames.filter((f) => f.code === 200 && f.data?.includes('success'));

describe('dingtalk channel', () => {
  it('registers for the robot topic only, answers a direct message with a sampleMarkdown batchSend, and ACKs it', async () => {
    const run = await start();
    expect(run.dingtalk.registrations[0]).toMatchObject({
      clientId: CLIENT_ID,
      clientSecret: CLIENT_SECRET,
      subscriptions: [{ type: 'CALLBACK', topic: ROBOT_TOPIC }],
    });
    run.llm.enqueue({ text: 'Hello **there**.' });
    run.dingtalk.userSays({ chatId: OWNER, staffId: OWNER, text: 'hi' });
    await eventually(() => expect(run.dingtalk.messagesIn(OWNER)).toEqual(['Hello **there**.']));
    expect(run.dingtalk.sent[0]).toMatchObject({
      msgKey: 'sampleMarkdown',
      robotCode: CLIENT_ID,
      param: { title: 'Hello there.', text: 'Hello **there**.' },
    });
    expect(lastUserText(run)).toContain('hi');
    await eventually(() => expect(run.dingtalk.unacked()).toEqual([]));
    expect(acks(run)).toHaveLength(1);
  });

  it('answers DingTalk’s SYSTEM ping with its own headers and data (the SDK does)', async () => {
    const run = await start();
    const pong = await run.dingtalk.ping();
    expect(pong).toMatchObject({ code: 200, message: 'OK', headers: { topic: 'ping' } });
    expect(JSON.parse(pong.data ?? '{}')).toMatchObject({ opaque: expect.stringMatching(/^ping-/) });
  });

  it('answers a group @-message with groupMessages/send; others in the group and un-@-ed messages get nothing', async () => {
    const run = await start();
    run.llm.enqueue({ text: 'Hi group.' });
    run.dingtalk.userSays({ chatId: GROUP, staffId: MEMBER, text: 'hello bot' });
    await eventually(() => expect(run.dingtalk.messagesIn(GROUP)).toEqual(['Hi group.']));
    expect(lastUserText(run)).toContain('hello bot');
    run.dingtalk.userSays({ chatId: GROUP, staffId: 'outsider77', text: 'me too' });
    run.dingtalk.userSays({ chatId: GROUP, staffId: MEMBER, text: 'not for you', isInAtList: false });
    await quiet();
    expect(run.dingtalk.messagesIn(GROUP)).toEqual(['Hi group.']);
    expect(run.llm.requests).toHaveLength(1);
    await eventually(() => expect(run.dingtalk.unacked()).toEqual([]));
  });

  it('groupPolicy: "open" also answers group messages that do not @ the robot; "allowlist" only the listed groups', async () => {
    const openRun = await start({ groupPolicy: 'open' });
    openRun.llm.enqueue({ text: 'Heard it anyway.' });
    openRun.dingtalk.userSays({ chatId: GROUP, staffId: MEMBER, text: 'no mention here', isInAtList: false });
    await eventually(() => expect(openRun.dingtalk.messagesIn(GROUP)).toEqual(['Heard it anyway.']));

    const listed = await start({ groupPolicy: 'allowlist', groupAllowFrom: [GROUP] });
    listed.llm.enqueue({ text: 'Listed group.' });
    listed.dingtalk.userSays({ chatId: 'group:cidOtherGroup', staffId: MEMBER, text: 'hello' });
    listed.dingtalk.userSays({ chatId: GROUP, staffId: MEMBER, text: 'hello', isInAtList: false });
    await eventually(() => expect(listed.dingtalk.messagesIn(GROUP)).toEqual(['Listed group.']));
    await quiet();
    expect(listed.dingtalk.messagesIn('group:cidOtherGroup')).toEqual([]);
    expect(listed.llm.requests).toHaveLength(1);
  });

  it('replyToMessage in a group names the sender on a line of its own, escaped', async () => {
    const run = await start({ replyToMessage: true });
    run.llm.enqueue({ text: 'Done.' });
    run.dingtalk.userSays({ chatId: GROUP, staffId: MEMBER, text: 'do it', senderNick: 'Li *Lei* [x](y)' });
    await eventually(() => expect(run.dingtalk.messagesIn(GROUP)).toHaveLength(1));
    expect(run.dingtalk.messagesIn(GROUP)[0]).toBe('# @Li \\*Lei\\* \\[x\\]\\(y\\)\n\nDone.');
  });

  it('a SYSTEM disconnect: a new registration and connection, and what was never ACKed is answered once', async () => {
    const run = await start();
    run.llm.enqueue({ text: 'First.' }, { text: 'Second.' });
    run.dingtalk.userSays({ chatId: OWNER, staffId: OWNER, text: 'one' });
    await eventually(() => expect(run.dingtalk.messagesIn(OWNER)).toEqual(['First.']));
    // A message pushed into a connection that is going away never arrives, and its ACK never comes.
    run.dingtalk.delivering = false;
    const lost = run.dingtalk.userSays({ chatId: OWNER, staffId: OWNER, text: 'two' });
    run.dingtalk.delivering = true;
    run.dingtalk.askDisconnect();
    await eventually(() => expect(run.dingtalk.messagesIn(OWNER)).toEqual(['First.', 'Second.']), 15_000);
    expect(run.dingtalk.registrations).toHaveLength(2);
    expect(run.dingtalk.connections()).toBe(2);
    expect(run.dingtalk.deliveries(lost)).toBe(1);
    await quiet();
    expect(run.llm.requests).toHaveLength(2);
    await waitState(run.gateway, 'running');
  });

  it('a handled message whose ACK was lost is sent again after a dropped connection and not answered twice', async () => {
    const run = await start();
    run.llm.enqueue({ text: 'Once.' }, { text: 'After.' });
    run.dingtalk.takingAcks = false;
    const id = run.dingtalk.userSays({ chatId: OWNER, staffId: OWNER, text: 'hello' });
    await eventually(() => expect(run.dingtalk.messagesIn(OWNER)).toEqual(['Once.']));
    run.dingtalk.takingAcks = true;
    run.dingtalk.drop();
    await waitState(run.gateway, 'reconnecting').catch(() => undefined);
    run.dingtalk.userSays({ chatId: OWNER, staffId: OWNER, text: 'while away' });
    run.dingtalk.restore();
    await eventually(() => expect(run.dingtalk.messagesIn(OWNER)).toEqual(['Once.', 'After.']), 15_000);
    await eventually(() => expect(run.dingtalk.unacked()).toEqual([]));
    expect(run.dingtalk.deliveries(id)).toBe(2);
    await quiet();
    expect(run.llm.requests).toHaveLength(2);
    expect(run.dingtalk.messagesIn(OWNER)).toEqual(['Once.', 'After.']);
  });

  it('an access token DingTalk stops taking is renewed, and the message goes out once', async () => {
    const run = await start();
    run.llm.enqueue({ text: 'Before.' }, { text: 'After renewal.' });
    run.dingtalk.userSays({ chatId: OWNER, staffId: OWNER, text: 'one' });
    await eventually(() => expect(run.dingtalk.messagesIn(OWNER)).toEqual(['Before.']));
    run.dingtalk.expireTokens();
    run.dingtalk.userSays({ chatId: OWNER, staffId: OWNER, text: 'two' });
    await eventually(() => expect(run.dingtalk.messagesIn(OWNER)).toEqual(['Before.', 'After renewal.']));
    expect(run.dingtalk.refusedTokens()).toBe(1);
    expect(run.dingtalk.tokenRequests()).toBe(2);
    await quiet();
    expect(run.dingtalk.sent).toHaveLength(2);
  });

  it('downloads pictures, files and rich-text pictures by downloadCode into the media folder', async () => {
    const run = await start();
    run.dingtalk.serveFile('cat.jpg', JPEG, 'image/jpeg');
    run.dingtalk.serveFile('notes.txt', Buffer.from('meeting notes'), 'text/plain');
    run.llm.enqueue({ text: 'A picture.' }, { text: 'A file.' }, { text: 'Rich.' });
    run.dingtalk.userSays({
      chatId: OWNER,
      staffId: OWNER,
      msgtype: 'picture',
      content: { downloadCode: 'code-cat.jpg', pictureDownloadCode: 'code-cat.jpg' },
    });
    await eventually(() => expect(run.dingtalk.messagesIn(OWNER)).toEqual(['A picture.']));
    const picture = lastUserText(run);
    expect(picture).toContain(`data:image/jpeg;base64,${JPEG.toString('base64')}`);
    const path = /\[image: ([^\]]+)\]/.exec(picture)?.[1] ?? '';
    expect(path.startsWith(join(run.dataDir, 'media', 'dingtalk'))).toBe(true);
    expect(readFileSync(path)).toEqual(JPEG);

    run.dingtalk.userSays({
      chatId: OWNER,
      staffId: OWNER,
      msgtype: 'file',
      content: { downloadCode: 'code-notes.txt', fileName: 'notes.txt' },
    });
    await eventually(() => expect(run.dingtalk.messagesIn(OWNER)).toHaveLength(2));
    const saved = /(\/[^"\]\s]+notes\.txt)/.exec(lastUserText(run))?.[1] ?? '';
    expect(readFileSync(saved, 'utf8')).toBe('meeting notes');

    run.dingtalk.userSays({
      chatId: OWNER,
      staffId: OWNER,
      msgtype: 'richText',
      content: {
        richText: [
          { text: 'look at' },
          { text: 'this', type: 'bold' },
          { type: 'picture', downloadCode: 'code-cat.jpg' },
        ],
      },
    });
    await eventually(() => expect(run.dingtalk.messagesIn(OWNER)).toHaveLength(3));
    expect(lastUserText(run)).toContain('look at **this**');
    expect(lastUserText(run)).toContain(`data:image/jpeg;base64,${JPEG.toString('base64')}`);
  });

  it('takes an audio message’s recognition as its text', async () => {
    const run = await start();
    run.llm.enqueue({ text: 'Heard you.' });
    run.dingtalk.userSays({ chatId: OWNER, staffId: OWNER, msgtype: 'audio', content: { recognition: '明天开会吗' } });
    await eventually(() => expect(run.dingtalk.messagesIn(OWNER)).toEqual(['Heard you.']));
    expect(lastUserText(run)).toContain('明天开会吗');
  });

  it('sends the message tool’s files: images as sampleImageMsg, others as sampleFile, HTML zipped', async () => {
    const run = await start();
    writeFileSync(join(run.workspace, 'chart.png'), PNG);
    writeFileSync(join(run.workspace, 'report.pdf'), 'pdf bytes');
    writeFileSync(join(run.workspace, 'page.html'), '<h1>hi</h1>');
    run.llm.enqueue(
      {
        toolCalls: [
          { name: 'message', arguments: { content: 'Here.', media: ['chart.png', 'report.pdf', 'page.html'] } },
        ],
      },
      { text: 'Sent them.' },
    );
    run.dingtalk.userSays({ chatId: OWNER, staffId: OWNER, text: 'the files, please' });
    await eventually(() => expect(run.dingtalk.sent.map((m) => m.msgKey)).toHaveLength(5));
    expect(run.dingtalk.uploads.map((u) => [u.type, u.name, u.mimeType])).toEqual([
      ['image', 'chart.png', 'image/png'],
      ['file', 'report.pdf', 'application/pdf'],
      ['file', 'page.zip', 'application/zip'],
    ]);
    expect(run.dingtalk.uploads[0]?.data).toEqual(PNG);
    expect(run.dingtalk.sent.slice(0, 3).map((m) => [m.msgKey, m.param])).toEqual([
      ['sampleImageMsg', { photoURL: '@media-1' }],
      ['sampleFile', { mediaId: '@media-2', fileName: 'report.pdf', fileType: 'pdf' }],
      ['sampleFile', { mediaId: '@media-3', fileName: 'page.zip', fileType: 'zip' }],
    ]);
    expect(run.dingtalk.messagesIn(OWNER).slice(3)).toEqual(['Here.', 'Sent them.']);
    // The zip opens and holds the page.
    const dir = mkdtempSync(join(tmpdir(), 'nb-zip-'));
    writeFileSync(join(dir, 'page.zip'), run.dingtalk.uploads[2]?.data ?? Buffer.alloc(0));
    const listing = execFileSync('python3', ['-c', PY_UNZIP, join(dir, 'page.zip')], { encoding: 'utf8' });
    expect(listing).toBe('page.html <h1>hi</h1>\n');
  });

  it('groupUserIsolation: each member of a group has a session of their own', async () => {
    const run = await start({ groupUserIsolation: true });
    run.llm.enqueue({ text: 'Noted, owner.' }, { text: 'Hello, member.' });
    run.dingtalk.userSays({ chatId: GROUP, staffId: OWNER, text: 'my secret plan is X' });
    await eventually(() => expect(run.dingtalk.messagesIn(GROUP)).toHaveLength(1));
    run.dingtalk.userSays({ chatId: GROUP, staffId: MEMBER, text: 'what did the owner say?' });
    await eventually(() => expect(run.dingtalk.messagesIn(GROUP)).toHaveLength(2));
    expect(JSON.stringify(run.llm.requests[1]?.body.messages)).not.toContain('my secret plan');
  });

  it('disablePrivateChat: a direct message gets upstream’s notice and no turn; groups still work', async () => {
    const run = await start({ disablePrivateChat: true });
    run.dingtalk.userSays({ chatId: OWNER, staffId: OWNER, text: 'hi in private' });
    await eventually(() =>
      expect(run.dingtalk.messagesIn(OWNER)).toEqual(['该机器人未开启私聊，请在群聊中与我对话。']),
    );
    expect(run.dingtalk.sent[0]?.msgKey).toBe('sampleText');
    run.llm.enqueue({ text: 'Group answer.' });
    run.dingtalk.userSays({ chatId: GROUP, staffId: OWNER, text: 'hi in the group' });
    await eventually(() => expect(run.dingtalk.messagesIn(GROUP)).toEqual(['Group answer.']));
    expect(run.llm.requests).toHaveLength(1);
  });

  it('proactive messages (cron, the message tool) go to a user id or a group', async () => {
    const run = await start();
    run.gateway.bus.publishOutbound({ channel: 'dingtalk', chatId: OWNER, content: 'Reminder: *standup*' });
    run.gateway.bus.publishOutbound({ channel: 'dingtalk', chatId: GROUP, content: 'Good morning.' });
    await eventually(() => expect(run.dingtalk.messagesIn(OWNER)).toEqual(['Reminder: *standup*']));
    await eventually(() => expect(run.dingtalk.messagesIn(GROUP)).toEqual(['Good morning.']));
  });

  it('verify: DingTalk takes the Client ID and secret; a wrong secret fails naming the keys', async () => {
    const dingtalk = await startFakeDingtalk();
    try {
      const good = await dingtalkChannel.verify?.({ ...dingtalk.settings });
      expect(good).toMatchObject({ status: 'pass', identity: { account: CLIENT_ID } });
      const bad = await dingtalkChannel.verify?.({ ...dingtalk.settings, clientSecret: `${CLIENT_SECRET}x` });
      expect(bad?.status).toBe('fail');
      expect(bad?.message).toContain('channels.dingtalk.clientSecret');
      expect(bad?.message).not.toContain(CLIENT_SECRET);
    } finally {
      await dingtalk.close();
    }
  });

  it('setup errors name the key: no clientId, an http apiBase to another machine; upstream’s keys parse', () => {
    expect(() => dingtalkChannel.parse({ clientSecret: 's' })).toThrow(/channels\.dingtalk\.clientId/);
    expect(() =>
      dingtalkChannel.parse({ clientId: 'a', clientSecret: 's', apiBase: 'http://api.example.com' }),
    ).toThrow(/channels\.dingtalk\.apiBase must be an https/);
    const parsed = dingtalkChannel.parse({
      clientId: 'a',
      clientSecret: 's',
      allowFrom: ['x'],
      allowRemoteMediaRedirects: false,
      remoteMediaRedirectAllowedHosts: [],
      groupUserIsolation: true,
      disablePrivateChat: false,
    });
    expect(parsed).toMatchObject({ groupUserIsolation: true, allowFrom: ['x'], groupPolicy: 'mention' });
  });
});

const PY_UNZIP =
  'import sys, zipfile\nz = zipfile.ZipFile(sys.argv[1])\nassert z.testzip() is None\n' +
  'for n in z.namelist(): print(n, z.read(n).decode())';
