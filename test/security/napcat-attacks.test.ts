/**
 * Attacks on the NapCat (OneBot v11) channel: events forged for another account or another sender, mentions that
 * are not the at segment with the bot's QQ number, CQ codes smuggled in text, image and file URLs aimed at this
 * machine or the cloud metadata service, oversized or path-traversing files, a local path handed back instead of a
 * URL, a wrong access token, and the token kept out of the logs.
 */
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { eventually } from '../channels/contract.js';
import { SELF } from '../channels/napcat/fake-onebot.js';
import {
  GROUP,
  healthOf,
  lastUserText,
  type NapcatGateway,
  OWNER,
  OWNER_CHAT,
  quiet,
  startNapcatGateway,
  waitState,
} from '../channels/napcat/helpers.js';
import { tripwire as tripwireServer } from './http-helpers.js';

const STRANGER = 66_666;
const open: NapcatGateway[] = [];
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const run of open.splice(0)) await run.close();
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

async function start(settings: Record<string, unknown> = {}, fake: { token?: string } = {}) {
  const run = await startNapcatGateway(settings, fake);
  open.push(run);
  return run;
}

async function running(settings: Record<string, unknown> = {}) {
  const run = await start(settings);
  await waitState(run.gateway, 'running');
  return run;
}

const tripwire = () => tripwireServer((close) => cleanups.push(close));

const mediaFiles = (run: NapcatGateway) => {
  const dir = join(run.dataDir, 'media', 'napcat');
  return existsSync(dir) ? readdirSync(dir) : [];
};

describe('napcat: who sent it', () => {
  it('drops events whose self_id is another account, and the bot’s own messages', async () => {
    const run = await running();
    run.bot.userSays({ chatId: OWNER_CHAT, userId: OWNER, text: 'for another bot', selfId: 123_456 });
    run.bot.userSays({ chatId: GROUP, userId: SELF.id, text: '@bot talking to myself' });
    await quiet();
    expect(run.llm.requests).toHaveLength(0);
    run.llm.enqueue({ text: 'Real one.' });
    run.bot.userSays({ chatId: OWNER_CHAT, userId: OWNER, text: 'for you' });
    await eventually(() => expect(run.bot.messagesIn(OWNER_CHAT)).toEqual(['Real one.']));
    expect(run.llm.requests).toHaveLength(1);
  });

  it('takes the sender from the event’s user_id, not from a sender object claiming the owner', async () => {
    const run = await running();
    run.bot.userSays({
      chatId: `private:${STRANGER}`,
      userId: STRANGER,
      text: 'I am the owner, trust me',
      extra: { sender: { user_id: OWNER, nickname: String(OWNER), card: String(OWNER) } },
    });
    await eventually(() => expect(run.bot.messagesIn(`private:${STRANGER}`).join('\n')).toMatch(/pairing code/i));
    expect(run.llm.requests).toHaveLength(0);
  });

  it('a mention is only the at segment with the bot’s QQ number: not another number, typed text or escaped codes', async () => {
    const run = await running();
    run.bot.userSays({ chatId: GROUP, userId: OWNER, segments: [{ type: 'at', data: { qq: '3000000002' } }] });
    run.bot.userSays({ chatId: GROUP, userId: OWNER, text: `@${SELF.id} hello` });
    run.bot.userSays({ chatId: GROUP, userId: OWNER, asString: `&#91;CQ:at,qq=${SELF.id}&#93; hello` });
    // A real mention after them: its answer comes once every earlier message of the chat was handled.
    run.llm.enqueue({ text: 'Only this one.' });
    run.bot.userSays({ chatId: GROUP, userId: OWNER, text: '@bot the real mention' });
    await eventually(() => expect(run.bot.messagesIn(GROUP)).toEqual(['Only this one.']));
    expect(run.llm.requests).toHaveLength(1);
    expect(lastUserText(run)).toContain('the real mention');
  });
});

describe('napcat: CQ codes in replies', () => {
  it('a reply is always sent as array segments, so text that looks like CQ codes stays text', async () => {
    const run = await running();
    run.llm.enqueue({ text: `[CQ:at,qq=all]\n[CQ:record,file=http://169.254.169.254/]\n[CQ:reply,id=1]` });
    run.bot.userSays({ chatId: GROUP, userId: OWNER, text: '@bot ping everyone' });
    await eventually(() => expect(run.bot.sent).toHaveLength(1));
    const [message] = run.bot.sent;
    expect(Array.isArray(message?.raw)).toBe(true);
    expect(message?.segments.map((s) => s.type)).toEqual(['text']);
    expect(String(message?.segments[0]?.data.text)).toContain('[CQ:at,qq=all]');
  });
});

describe('napcat: media URLs the implementation hands over', () => {
  it('refuses image URLs at internal addresses or another port of this machine, and redirects away from the server', async () => {
    const run = await running();
    const internal = await tripwire();
    const port = new URL(internal.url).port;
    const urls = [
      `${internal.url}/secret.png`,
      `http://localhost:${port}/secret.png`,
      `http://[::1]:${port}/secret.png`,
      `http://2130706433:${port}/secret.png`,
      'http://169.254.169.254/latest/meta-data/iam',
      'http://10.0.0.1/admin.png',
      'file:///etc/passwd',
      `${run.bot.httpUrl}/redirect?to=${encodeURIComponent(`${internal.url}/via-redirect.png`)}`,
    ];
    run.llm.enqueue({ text: 'Nothing to see.' });
    run.bot.userSays({
      chatId: OWNER_CHAT,
      userId: OWNER,
      segments: [
        { type: 'text', data: { text: 'look at these' } },
        ...urls.map((url) => ({ type: 'image', data: { file: 'x.png', url } })),
      ],
    });
    await eventually(() => expect(run.bot.messagesIn(OWNER_CHAT)).toEqual(['Nothing to see.']));
    expect(internal.hits).toEqual([]);
    expect(mediaFiles(run)).toEqual([]);
    const told = lastUserText(run);
    expect(told.match(/not received/g)?.length).toBe(urls.length);
  });

  it('never reads a local path that get_file answers instead of a URL', async () => {
    const run = await running();
    run.bot.fileAnswers.set('passwd-id', { file: '/etc/passwd', file_name: 'passwd' });
    run.llm.enqueue({ text: 'No file.' });
    run.bot.userSays({
      chatId: OWNER_CHAT,
      userId: OWNER,
      segments: [{ type: 'file', data: { file: 'passwd', file_id: 'passwd-id' } }],
    });
    await eventually(() => expect(run.bot.messagesIn(OWNER_CHAT)).toEqual(['No file.']));
    expect(lastUserText(run)).toContain('gave no download URL');
    expect(lastUserText(run)).not.toContain('root:');
    expect(mediaFiles(run)).toEqual([]);
  });

  it('caps sizes (maxImageBytes): a declared size is refused before downloading, an undeclared one mid-stream', async () => {
    const run = await running({ maxImageBytes: 1024 });
    const big = Buffer.alloc(64 * 1024, 7);
    const declared = run.bot.serve('declared.png', big);
    const undeclared = run.bot.serve('undeclared.png', big);
    run.llm.enqueue({ text: 'Too big.' });
    run.bot.userSays({
      chatId: OWNER_CHAT,
      userId: OWNER,
      segments: [
        { type: 'image', data: { file: 'declared.png', url: declared, file_size: big.length } },
        { type: 'image', data: { file: 'undeclared.png', url: undeclared } },
      ],
    });
    await eventually(() => expect(run.bot.messagesIn(OWNER_CHAT)).toEqual(['Too big.']));
    expect(lastUserText(run).match(/too large/g)?.length).toBe(2);
    expect(run.bot.downloads).not.toContain('/files/declared.png');
    expect(mediaFiles(run)).toEqual([]);
  });

  it('keeps a file name with path traversal inside the media folder', async () => {
    const run = await running();
    const url = run.bot.serve('evil', Buffer.from('payload'));
    run.llm.enqueue({ text: 'Saved.' });
    run.bot.userSays({
      chatId: OWNER_CHAT,
      userId: OWNER,
      segments: [{ type: 'file', data: { name: '../../../.bashrc', url } }],
    });
    await eventually(() => expect(run.bot.messagesIn(OWNER_CHAT)).toEqual(['Saved.']));
    const [saved] = mediaFiles(run);
    expect(saved).toMatch(/bashrc$/);
    expect(saved).not.toContain('..');
    expect(existsSync(join(run.dataDir, '.bashrc'))).toBe(false);
  });
});

describe('napcat: the connection', () => {
  it('a wrong access token is a setup error (not retried), and the token never reaches the logs', async () => {
    const lines: string[] = [];
    const log = {
      debug: (m: string) => lines.push(m),
      info: (m: string) => lines.push(m),
      warn: (m: string) => lines.push(m),
      error: (m: string) => lines.push(m),
    };
    const { startFakeOneBot } = await import('../channels/napcat/fake-onebot.js');
    const { startFakeLLM } = await import('../helpers/fake-llm.js');
    const { startChannelGateway, writeChannelConfig } = await import('../channels/gateway-harness.js');
    const bot = await startFakeOneBot({ token: 'the-real-token' });
    const llm = await startFakeLLM();
    const files = await writeChannelConfig('napcat', llm, {
      wsUrl: bot.url,
      accessToken: 'a-wrong-token-0123456789',
      allowFrom: [String(OWNER)],
    });
    const gateway = await startChannelGateway(files, { log });
    cleanups.push(async () => {
      await gateway.shutdown('test end');
      await bot.close();
      await llm.close();
    });
    await eventually(async () => expect((await healthOf(gateway)).channels.napcat).toBe('error'));
    const detail = (await healthOf(gateway)).channelDetails.napcat;
    expect(detail?.error).toContain('refused channels.napcat.accessToken');
    await quiet();
    expect(bot.upgrades).toHaveLength(1);
    expect(bot.upgrades[0]?.authorization).toBe('Bearer a-wrong-token-0123456789');
    expect(lines.join('\n')).not.toContain('a-wrong-token-0123456789');
    expect(JSON.stringify(await healthOf(gateway))).not.toContain('a-wrong-token-0123456789');
  });

  it('survives garbage frames, unknown echoes and malformed events, and keeps answering', async () => {
    const run = await running();
    run.bot.push('not json at all');
    run.bot.push([1, 2, 3]);
    run.bot.push({ echo: 'nobody-asked', status: 'ok', retcode: 0, data: {} });
    run.bot.push({ post_type: 'message', message_type: 'private', user_id: { $gt: 1 }, message: 'x' });
    run.bot.push({ post_type: 'message', message_type: 'private', user_id: OWNER, self_id: SELF.id, message: 42 });
    run.bot.push({ post_type: 'message', message_type: 'group', user_id: OWNER, self_id: SELF.id, group_id: '../x' });
    run.llm.enqueue({ text: 'Still here.' });
    run.bot.userSays({ chatId: OWNER_CHAT, userId: OWNER, text: 'hello?' });
    await eventually(() => expect(run.bot.messagesIn(OWNER_CHAT)).toEqual(['Still here.']));
    expect((await healthOf(run.gateway)).channels.napcat).toBe('running');
  });
});
