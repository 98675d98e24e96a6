/** QQ behaviours beyond the contract, through a real gateway, `ws` and the fake QQ bot platform. */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { apiBaseOf, type QqSettings, qqChannel } from '../../../src/channels/qq/index.js';
import { eventually } from '../contract.js';
import { APP_ID, SECRET, startFakeQq } from './fake-qq.js';
import {
  GROUP,
  lastUserText,
  OWNER,
  OWNER_IN_GROUP,
  type QqGatewayRun,
  quiet,
  startQqGateway,
  waitState,
} from './helpers.js';

const open: QqGatewayRun[] = [];
afterEach(async () => {
  for (const run of open.splice(0)) await run.close();
});

async function start(settings: Record<string, unknown> = {}, fake: Parameters<typeof startQqGateway>[1] = {}) {
  const run = await startQqGateway(settings, fake);
  open.push(run);
  await waitState(run.gateway, 'running');
  return run;
}

const PNG = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 1, 2, 3]);
const identifies = (run: QqGatewayRun) => run.qq.frames.filter((f) => f.op === 2);
const resumes = (run: QqGatewayRun) => run.qq.frames.filter((f) => f.op === 6);

describe('qq channel', () => {
  it('identifies with the app access token and the C2C + group intents, then answers with ack and passive reply', async () => {
    const run = await start();
    const [identify] = identifies(run);
    const d = identify?.d as { token: string; intents: number };
    expect(d.token).toMatch(/^QQBot tok-1-/);
    expect(d.intents & (1 << 25)).toBe(1 << 25);

    run.llm.enqueue({ text: 'Hello there.' });
    const id = run.qq.userSays({ chatId: OWNER, userOpenid: OWNER, text: 'hi' });
    await eventually(() => expect(run.qq.messagesIn(OWNER)).toEqual(['⏳ Processing...', 'Hello there.']));
    expect(run.qq.sent.map((m) => [m.body.msg_id, m.body.msg_seq, m.body.msg_type])).toEqual([
      [id, 1, 0],
      [id, 2, 0],
    ]);
  });

  it('splits a long answer into parts that answer the same message with an increasing msg_seq', async () => {
    const run = await start({ ackMessage: '' });
    const long = Array.from({ length: 140 }, (_, i) => `Line ${i} of a long answer, plain words only.`).join('\n');
    run.llm.enqueue({ text: long });
    const id = run.qq.userSays({ chatId: OWNER, userOpenid: OWNER, text: 'tell me a lot' });
    await eventually(() => expect(run.qq.messagesIn(OWNER).join('\n').length).toBeGreaterThanOrEqual(long.length - 10));
    const seqs = run.qq.sent.map((m) => m.body.msg_seq ?? 0);
    expect(run.qq.sent.length).toBeGreaterThan(1);
    expect(run.qq.sent.every((m) => m.body.msg_id === id)).toBe(true);
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    expect(new Set(seqs).size).toBe(seqs.length);
    expect(run.qq.duplicates).toEqual([]);
  });

  it('a resume after a dropped gateway connection replays missed events once', async () => {
    const run = await start({ ackMessage: '' });
    run.llm.enqueue({ text: 'First.' }, { text: 'Second.' }, { text: 'Third.' });
    run.qq.userSays({ chatId: OWNER, userOpenid: OWNER, text: 'one' });
    await eventually(() => expect(run.qq.messagesIn(OWNER)).toEqual(['First.']));

    run.qq.drop();
    await waitState(run.gateway, 'reconnecting').catch(() => undefined);
    run.qq.userSays({ chatId: OWNER, userOpenid: OWNER, text: 'two' });
    run.qq.userSays({ chatId: OWNER, userOpenid: OWNER, text: 'three' });
    // A careless platform replays the whole session: what was handled already is not handled again.
    run.qq.replayAll = true;
    run.qq.restore();
    await eventually(() => expect(run.qq.messagesIn(OWNER)).toEqual(['First.', 'Second.', 'Third.']), 20_000);
    await quiet();
    expect(run.qq.messagesIn(OWNER)).toEqual(['First.', 'Second.', 'Third.']);
    expect(run.llm.requests).toHaveLength(3);
    expect(identifies(run)).toHaveLength(1);
    const [resume] = resumes(run);
    expect(resume?.d).toMatchObject({ session_id: 'session-1', seq: 2, token: expect.stringMatching(/^QQBot /) });
  });

  it('op 9 for a session QQ forgot: a fresh Identify, and messages are answered again', async () => {
    const run = await start({ ackMessage: '' });
    run.qq.forgetSessions();
    run.qq.drop();
    run.qq.restore();
    await eventually(() => expect(identifies(run)).toHaveLength(2), 20_000);
    await waitState(run.gateway, 'running');
    run.llm.enqueue({ text: 'New session.' });
    run.qq.userSays({ chatId: OWNER, userOpenid: OWNER, text: 'still there?' });
    await eventually(() => expect(run.qq.messagesIn(OWNER)).toEqual(['New session.']));
  });

  it('answers a group @-message by the member_openid in allowFrom; other members stay unanswered', async () => {
    const run = await start({ ackMessage: '' });
    run.llm.enqueue({ text: 'Hi group.' });
    const id = run.qq.userSays({ chatId: GROUP, userOpenid: OWNER_IN_GROUP, text: 'hello bot' });
    await eventually(() => expect(run.qq.messagesIn(GROUP)).toEqual(['Hi group.']));
    expect(run.qq.sent[0]?.body).toMatchObject({ msg_id: id, msg_seq: 1 });
    expect(lastUserText(run)).toContain('hello bot');
    run.qq.userSays({ chatId: GROUP, userOpenid: 'SOMEONEELSE000000000000000000001', text: 'me too' });
    await quiet();
    expect(run.qq.messagesIn(GROUP)).toEqual(['Hi group.']);
    expect(run.llm.requests).toHaveLength(1);
  });

  it('downloads an attachment from the URL QQ gives (protocol-relative too) into the media folder', async () => {
    const run = await start({ ackMessage: '' });
    run.llm.enqueue({ text: 'A tiny picture.' });
    const url = run.qq.serveFile('cat.png', PNG, 'image/png');
    run.qq.userSays({
      chatId: OWNER,
      userOpenid: OWNER,
      text: 'what is this?',
      attachments: [
        { content_type: 'image/png', filename: 'cat.png', url: url.replace(/^http:/, ''), size: PNG.length },
      ],
    });
    await eventually(() => expect(run.qq.messagesIn(OWNER)).toEqual(['A tiny picture.']));
    const sent = lastUserText(run);
    expect(sent).toContain('what is this?');
    expect(sent).toContain(`data:image/png;base64,${PNG.toString('base64')}`);
    const path = /\[image: ([^\]]+)\]/.exec(sent)?.[1] ?? '';
    expect(path.startsWith(join(run.dataDir, 'media', 'qq'))).toBe(true);
    expect(readFileSync(path)).toEqual(PNG);
  });

  it('sends the message tool’s files as rich media: upload, then msg_type 7 with the file_info', async () => {
    const run = await start({ ackMessage: '' });
    writeFileSync(join(run.workspace, 'chart.png'), PNG);
    writeFileSync(join(run.workspace, 'report.txt'), 'quarterly numbers');
    run.llm.enqueue(
      {
        toolCalls: [{ name: 'message', arguments: { content: 'Here they are.', media: ['chart.png', 'report.txt'] } }],
      },
      { text: 'Sent them.' },
    );
    run.qq.userSays({ chatId: OWNER, userOpenid: OWNER, text: 'the files, please' });
    await eventually(() => expect(run.qq.sent.map((m) => m.body.msg_type)).toEqual([7, 7, 0, 0]));
    expect(run.qq.uploads.map((u) => u.body)).toEqual([
      { file_type: 1, file_data: PNG.toString('base64'), srv_send_msg: false },
      {
        file_type: 4,
        file_data: Buffer.from('quarterly numbers').toString('base64'),
        srv_send_msg: false,
        file_name: 'report.txt',
      },
    ]);
    expect(run.qq.sent.slice(0, 2).map((m) => m.body.media)).toEqual([
      { file_info: 'file-info-1' },
      { file_info: 'file-info-2' },
    ]);
    expect(run.qq.messagesIn(OWNER).slice(2)).toEqual(['Here they are.', 'Sent them.']);
  });

  it('msgFormat markdown sends msg_type 2 with the Markdown', async () => {
    const run = await start({ ackMessage: '', msgFormat: 'markdown' });
    run.llm.enqueue({ text: 'It is **4**.' });
    run.qq.userSays({ chatId: OWNER, userOpenid: OWNER, text: '2+2?' });
    await eventually(() => expect(run.qq.sent).toHaveLength(1));
    expect(run.qq.sent[0]?.body).toMatchObject({ msg_type: 2, markdown: { content: 'It is **4**.' } });
  });

  it('verify: QQ takes the AppID and secret; a wrong secret fails naming the keys', async () => {
    const qq = await startFakeQq();
    try {
      const good = await qqChannel.verify?.({ ...qq.settings });
      expect(good).toMatchObject({ status: 'pass', identity: { account: APP_ID } });
      const bad = await qqChannel.verify?.({ ...qq.settings, secret: `${SECRET}x` });
      expect(bad?.status).toBe('fail');
      expect(bad?.message).toContain('channels.qq.secret');
      expect(bad?.message).not.toContain(SECRET);
    } finally {
      await qq.close();
    }
  });

  it('setup errors name the key: no appId, an http apiBase to another machine', () => {
    expect(() => qqChannel.parse({ secret: 's' })).toThrow(/channels\.qq\.appId/);
    expect(() => qqChannel.parse({ appId: '1', secret: 's', apiBase: 'http://api.example.com' })).toThrow(
      /channels\.qq\.apiBase must be an https/,
    );
    expect(qqChannel.parse({ appId: 1, secret: 's', downloadMaxBytes: 1024 * 1024 }).maxMediaMb).toBe(1);
    const base = (block: Record<string, unknown>) =>
      apiBaseOf(qqChannel.parse({ appId: '1', secret: 's', ...block }) as QqSettings);
    expect(base({})).toBe('https://api.sgroup.qq.com');
    expect(base({ sandbox: true })).toBe('https://sandbox.api.sgroup.qq.com');
  });
});
