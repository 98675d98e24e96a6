/** WeChat behaviours beyond the contract, through a real gateway and the loopback fake iLink server. */
import { randomBytes } from 'node:crypto';
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { weixinChannel } from '../../../src/channels/weixin/index.js';
import type { Gateway } from '../../../src/gateway/lifecycle.js';
import { silentLogger } from '../../../src/util/log.js';
import { type FakeLLM, startFakeLLM } from '../../helpers/fake-llm.js';
import { eventually } from '../contract.js';
import { healthOf, startChannelGateway, writeChannelConfig } from '../gateway-harness.js';
import { startFakeIlink } from './fake-ilink.js';
import { OWNER, startWeixinGateway, type WeixinGateway, waitState, writeAccount } from './helpers.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function start(
  settings: Record<string, unknown> = {},
  fake = {},
  account = {},
  gatewayOptions: Parameters<typeof startWeixinGateway>[3] = {},
): Promise<WeixinGateway> {
  const run = await startWeixinGateway(settings, fake, account, gatewayOptions);
  cleanups.push(() => run.close());
  await waitState(run.gateway, 'running');
  return run;
}

const lastUserText = (llm: FakeLLM, n = -1) =>
  JSON.stringify((llm.requests.at(n)?.body.messages as unknown[] | undefined)?.at(-1));
const quiet = () => new Promise((resolve) => setTimeout(resolve, 400));

/** A fake LLM step that answers the message it was given by its number (`msg 17` → `answer 17`). */
const answerByNumber = (body: Record<string, unknown>) => {
  const last = JSON.stringify((body.messages as unknown[]).at(-1));
  return { text: `answer ${/msg (\d+)/.exec(last)?.[1] ?? '?'}` };
};

describe('weixin channel', () => {
  it('logs in by QR code against the fake, then answers 100 messages over long-poll, with one forced reconnect, each once', async () => {
    const ilink = await startFakeIlink({ login: 'auto' });
    const llm = await startFakeLLM();
    cleanups.push(
      () => ilink.close(),
      () => llm.close(),
    );
    const files = await writeChannelConfig('weixin', llm, {
      baseUrl: ilink.url,
      cdnBaseUrl: ilink.cdnUrl,
      allowFrom: ['*'],
    });
    const codes: string[] = [];
    const said: string[] = [];
    await weixinChannel.login?.(
      { baseUrl: ilink.url },
      { name: 'weixin', dataDir: files.dataDir, log: silentLogger, out: (t) => said.push(t), qr: (c) => codes.push(c) },
    );
    expect(codes).toEqual([expect.stringContaining('liteapp.weixin.qq.com/q/qr-1')]);
    expect(said.join('')).toMatch(/Scanned[\s\S]*Logged in to WeChat as bot fakebot@im\.bot/);
    const accountFile = join(files.dataDir, 'weixin', 'account.json');
    expect(statSync(accountFile).mode & 0o777).toBe(0o600);
    expect(JSON.parse(readFileSync(accountFile, 'utf8'))).toMatchObject({
      token: 'bot-token-login-1',
      get_updates_buf: '',
      base_url: ilink.url,
    });

    const gateway = await startChannelGateway(files);
    cleanups.push(() => gateway.shutdown('test end'));
    await waitState(gateway, 'running');
    // Each from its own person (a person's messages sent during a turn join that turn, by design).
    const user = (i: number) => `user${i}@im.wechat`;
    for (let i = 1; i <= 100; i++) llm.enqueue(answerByNumber);
    for (let i = 1; i <= 50; i++) ilink.userSays({ from: user(i), text: `msg ${i}` });
    await eventually(() => expect(ilink.sent.length).toBeGreaterThanOrEqual(25), 20_000);
    ilink.drop();
    await waitState(gateway, 'reconnecting');
    for (let i = 51; i <= 100; i++) ilink.userSays({ from: user(i), text: `msg ${i}` });
    ilink.restore();
    await eventually(() => expect(ilink.sent.length).toBe(100), 30_000);
    await quiet();
    for (let i = 1; i <= 100; i++) expect(ilink.textsTo(user(i))).toEqual([`answer ${i}`]);
    expect(llm.requests).toHaveLength(100);
    expect(ilink.calls.filter((c) => c.path.endsWith('getupdates')).every((c) => c.headers.authorization)).toBe(true);
  }, 90_000);

  it('resumes from the saved cursor after a restart: messages sent while it was down are answered, none twice', async () => {
    const ilink = await startFakeIlink();
    const llm = await startFakeLLM();
    cleanups.push(
      () => ilink.close(),
      () => llm.close(),
    );
    const files = await writeChannelConfig('weixin', llm, {
      baseUrl: ilink.url,
      cdnBaseUrl: ilink.cdnUrl,
      allowFrom: [OWNER],
    });
    writeAccount(files.dataDir, { token: ilink.token, base_url: ilink.url });
    const run = async (): Promise<Gateway> => {
      const gateway = await startChannelGateway(files);
      await waitState(gateway, 'running');
      return gateway;
    };
    let gateway = await run();
    llm.enqueue(answerByNumber, answerByNumber);
    ilink.userSays({ from: OWNER, text: 'msg 1' });
    await eventually(() => expect(ilink.textsTo(OWNER)).toEqual(['answer 1']));
    await gateway.shutdown('restart');
    const saved = JSON.parse(readFileSync(join(files.dataDir, 'weixin', 'account.json'), 'utf8'));
    expect(saved.get_updates_buf).toBe('cursor-1');
    expect(saved.context_tokens[OWNER]).toMatch(/^ctx-1-/);

    ilink.userSays({ from: OWNER, text: 'msg 2' });
    gateway = await run();
    cleanups.push(() => gateway.shutdown('test end'));
    await eventually(() => expect(ilink.textsTo(OWNER)).toEqual(['answer 1', 'answer 2']));
    await quiet();
    expect(llm.requests).toHaveLength(2);
  });

  it('downloads and decrypts an image and a file from the CDN; a voice message comes as WeChat’s transcript', async () => {
    const run = await start();
    run.llm.enqueue({ text: 'Got them.' });
    const jpeg = Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0, 0x10, 0x4a, 0x46, 0x49, 0x46, 1, 2, 3]);
    const imageKey = randomBytes(16);
    const fileKey = randomBytes(16);
    const notes = Buffer.from('meeting notes');
    run.ilink.userSays({
      from: OWNER,
      items: [
        { type: 1, text_item: { text: 'look at these' } },
        // An image names its key in hex; a file's media.aes_key is base64 of the key's hex text.
        {
          type: 2,
          image_item: {
            aeskey: imageKey.toString('hex'),
            media: { encrypt_query_param: run.ilink.putCdn(jpeg, imageKey) },
          },
        },
        {
          type: 4,
          file_item: {
            file_name: 'notes.txt',
            len: String(notes.length),
            media: {
              encrypt_query_param: run.ilink.putCdn(notes, fileKey),
              aes_key: Buffer.from(fileKey.toString('hex')).toString('base64'),
            },
          },
        },
        { type: 3, voice_item: { text: 'call me later' } },
      ],
    });
    await eventually(() => expect(run.ilink.textsTo(OWNER)).toEqual(['Got them.']));
    const sent = lastUserText(run.llm);
    expect(sent).toContain('look at these');
    expect(sent).toContain('[voice] call me later');
    expect(sent).toContain(`data:image/jpeg;base64,${jpeg.toString('base64')}`);
    const filePath = /\[file: ([^\]]+notes\.txt)\]/.exec(sent)?.[1] ?? '';
    expect(filePath.startsWith(join(run.dataDir, 'media', 'weixin'))).toBe(true);
    expect(readFileSync(filePath, 'utf8')).toBe('meeting notes');
  });

  it('sends a file and an image from the message tool through the encrypted CDN upload', async () => {
    const run = await start();
    writeFileSync(join(run.workspace, 'report.txt'), 'quarterly numbers');
    writeFileSync(join(run.workspace, 'chart.png'), Buffer.from([0x89, 0x50, 0x4e, 0x47, 9, 9]));
    run.llm.enqueue(
      {
        toolCalls: [
          { name: 'message', arguments: { content: 'Here is the report.', media: ['report.txt', 'chart.png'] } },
        ],
      },
      { text: 'Sent it.' },
    );
    run.ilink.userSays({ from: OWNER, text: 'the report, please' });
    await eventually(() => expect(run.ilink.textsTo(OWNER)).toEqual(['Here is the report.', 'Sent it.']));
    const media = run.ilink.sent.filter((s) => s.item.type !== 1);
    expect(media.map((s) => s.item.type)).toEqual([4, 2]);
    expect(media[0]?.item.file_item).toMatchObject({ file_name: 'report.txt', len: '17' });
    expect(media[0]?.file?.toString()).toBe('quarterly numbers');
    expect(media[1]?.file).toEqual(Buffer.from([0x89, 0x50, 0x4e, 0x47, 9, 9]));
  });

  it('holds a reply WeChat refuses for its send limit (-2) and delivers it with the next message’s context token', async () => {
    const run = await start();
    run.llm.enqueue({ text: 'first answer' }, { text: 'second answer' });
    run.ilink.answerNext('sendmessage', { ret: -2, errmsg: 'send restricted' });
    run.ilink.userSays({ from: OWNER, text: 'first' });
    await eventually(() => expect(run.llm.requests).toHaveLength(1));
    await quiet();
    expect(run.ilink.textsTo(OWNER)).toEqual([]);
    run.ilink.userSays({ from: OWNER, text: 'second' });
    await eventually(() => expect(run.ilink.textsTo(OWNER)).toEqual(['first answer', 'second answer']));
    const [held, next] = run.ilink.sent;
    expect(held?.contextToken).toBe(next?.contextToken);
  });

  it('backs off when WeChat says 429: the poll waits Retry-After before polling again, a send waits and goes again', async () => {
    const run = await start();
    run.ilink.answerNext('getupdates', { errmsg: 'slow down' }, 429, { 'retry-after': '1' });
    await waitState(run.gateway, 'reconnecting');
    const detail = (await healthOf(run.gateway)).channelDetails.weixin as { retryAt?: string } | undefined;
    expect(Date.parse(detail?.retryAt ?? '') - Date.now()).toBeGreaterThan(300);
    await waitState(run.gateway, 'running');

    run.ilink.answerNext('sendmessage', { errmsg: 'slow down' }, 429, { 'retry-after': '0' });
    run.llm.enqueue({ text: 'after the wait' });
    run.ilink.userSays({ from: OWNER, text: 'hi' });
    await eventually(() => expect(run.ilink.textsTo(OWNER)).toEqual(['after the wait']));
    await quiet();
    expect(run.ilink.textsTo(OWNER)).toEqual(['after the wait']);
  });

  it('says clearly when the login expired, and picks up a new login by itself, at once', async () => {
    // Retries an hour apart: only the watch on the login file can bring the channel back within the test.
    const run = await start({}, {}, {}, { channelBackoff: { initialMs: 3_600_000, maxMs: 3_600_000 } });
    run.ilink.revoke(run.ilink.token);
    await eventually(async () =>
      expect((await healthOf(run.gateway)).channelDetails.weixin?.error).toMatch(
        /WeChat login expired.*nanobot channels login weixin/,
      ),
    );
    expect((await healthOf(run.gateway)).channels.weixin).not.toBe('running');

    await weixinChannel.login?.(
      { baseUrl: run.ilink.url },
      { name: 'weixin', dataDir: run.dataDir, log: silentLogger, out: () => {}, qr: () => run.ilink.confirm() },
    );
    await waitState(run.gateway, 'running');
    run.llm.enqueue({ text: 'back' });
    run.ilink.userSays({ from: OWNER, text: 'hello again' });
    await eventually(() => expect(run.ilink.textsTo(OWNER)).toEqual(['back']));
    expect(run.ilink.calls.at(-1)?.headers.authorization).toBe('Bearer bot-token-login-1');
  });

  it('notices a poll that never answers (watchdog) and reconnects', async () => {
    const run = await start({ pollTimeout: 1 });
    run.ilink.stallPolls(true);
    await waitState(run.gateway, 'reconnecting');
    run.ilink.stallPolls(false);
    await waitState(run.gateway, 'running');
    run.llm.enqueue({ text: 'still here' });
    run.ilink.userSays({ from: OWNER, text: 'are you there?' });
    await eventually(() => expect(run.ilink.textsTo(OWNER)).toEqual(['still here']));
  });

  it('sends the iLink headers and shows typing while the agent works', async () => {
    const run = await start();
    run.llm.enqueue({ text: 'hello' });
    run.ilink.userSays({ from: OWNER, text: 'hi' });
    await eventually(() => expect(run.ilink.textsTo(OWNER)).toEqual(['hello']));
    expect(run.ilink.typing).toContainEqual({ user: OWNER, status: 1 });
    const call = run.ilink.calls.find((c) => c.path.endsWith('sendmessage'));
    expect(call?.headers).toMatchObject({
      authorizationtype: 'ilink_bot_token',
      authorization: `Bearer ${run.ilink.token}`,
      'ilink-app-id': 'bot',
      'ilink-app-clientversion': String((2 << 16) | (4 << 8) | 6),
    });
    expect(Buffer.from(String(call?.headers['x-wechat-uin']), 'base64').toString()).toMatch(/^\d+$/);
    expect(call?.body.base_info).toMatchObject({ channel_version: '2.4.6' });
  });

  it('refreshes a saved (old) context token through getconfig before writing unprompted', async () => {
    const run = await start({}, {}, { context_tokens: { [OWNER]: 'ctx-old' } });
    const fresh = run.ilink.issueContext(OWNER);
    run.gateway.bus.publishOutbound({ channel: 'weixin', chatId: OWNER, content: 'your reminder' });
    await eventually(() => expect(run.ilink.textsTo(OWNER)).toEqual(['your reminder']));
    expect(run.ilink.sent[0]?.contextToken).toBe(fresh);
    expect(run.ilink.calls.some((c) => c.path.endsWith('getconfig') && c.body.context_token === 'ctx-old')).toBe(true);
  });

  it('keeps an upstream login file working, and does not follow a base_url in it off WeChat’s hosts', async () => {
    const run = await start(
      { token: '' },
      {},
      {
        get_updates_buf: '',
        context_tokens: { 'friend@im.wechat': 'ctx-upstream' },
        typing_tickets: {
          'friend@im.wechat': { ticket: 't', ever_succeeded: true, next_fetch_at: 0, retry_delay_s: 2 },
        },
        base_url: 'https://evil.example',
        replaced_config_token_sha256: 'ab',
      },
    );
    run.llm.enqueue({ text: 'works' });
    run.ilink.userSays({ from: OWNER, text: 'hi' });
    await eventually(() => expect(run.ilink.textsTo(OWNER)).toEqual(['works']));
    const saved = () => JSON.parse(readFileSync(join(run.dataDir, 'weixin', 'account.json'), 'utf8'));
    await eventually(() =>
      expect(Object.keys(saved().context_tokens).sort()).toEqual(['friend@im.wechat', OWNER].sort()),
    );
    expect(saved()).toMatchObject({
      token: run.ilink.token,
      base_url: 'https://evil.example',
      get_updates_buf: 'cursor-1',
    });
    // The requests went to the configured server (the fake), not to the file's off-domain base_url.
    expect(run.ilink.calls.map((c) => c.path)).toContain('/ilink/bot/sendmessage');
  });
});
