/**
 * Attacks on the WeChat channel from a hostile (or broken) iLink server or sender: answers too large to hold, file
 * names that try to leave the media folder, media and upload URLs that point at other hosts (SSRF), redirects that
 * would carry the bot token away, server-named base URLs off WeChat's domain, damaged ciphertext, oversized media,
 * and the bot token in logs, health or login output.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { weixinChannel } from '../../src/channels/weixin/index.js';
import { safeBaseUrl } from '../../src/channels/weixin/login.js';
import { createLogger } from '../../src/util/log.js';
import { eventually } from '../channels/contract.js';
import { aes, startFakeIlink } from '../channels/weixin/fake-ilink.js';
import { healthOf, OWNER, startWeixinGateway, type WeixinGateway, waitState } from '../channels/weixin/helpers.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function start(settings: Record<string, unknown> = {}, log?: string[]): Promise<WeixinGateway> {
  const options = log ? { log: createLogger('debug', (line) => log.push(line)) } : {};
  const run = await startWeixinGateway(settings, {}, {}, options);
  cleanups.push(() => run.close());
  await waitState(run.gateway, 'running');
  return run;
}

/**
 * A key that does not decrypt `plain` sealed under `key` (AES-128-ECB): a random one, unless its output happens to
 * end in valid padding (about 1 in 200), which would make the damage pass unnoticed and the test flaky.
 */
function wrongKeyFor(plain: Buffer, key: Buffer): Buffer {
  const sealed = aes(plain, key, true);
  for (;;) {
    const candidate = randomBytes(16);
    try {
      aes(sealed, candidate, false);
    } catch {
      return candidate;
    }
  }
}

/** A server that records every request it gets (it must get none). */
async function bystander(): Promise<{ url: string; hits: string[] }> {
  const hits: string[] = [];
  const server = http.createServer((req, res) => {
    hits.push(`${req.method} ${req.url} ${req.headers.authorization ?? ''}`);
    res.end('secret');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, hits };
}

const quiet = () => new Promise((resolve) => setTimeout(resolve, 400));
const lastUserText = (run: WeixinGateway) =>
  JSON.stringify((run.llm.requests.at(-1)?.body.messages as unknown[] | undefined)?.at(-1));

describe('weixin: a hostile iLink server', () => {
  it('refuses a getupdates answer too large to hold, reconnects, and carries on', async () => {
    const run = await start();
    run.ilink.answerNext('getupdates', { ret: 0, msgs: [], get_updates_buf: 'x'.repeat(5 * 1024 * 1024) });
    await eventually(() =>
      expect(run.ilink.calls.filter((c) => c.path.endsWith('getupdates')).length).toBeGreaterThan(2),
    );
    await waitState(run.gateway, 'running');
    run.llm.enqueue({ text: 'fine' });
    run.ilink.userSays({ from: OWNER, text: 'hello' });
    await eventually(() => expect(run.ilink.textsTo(OWNER)).toEqual(['fine']));
  });

  it('keeps a file named ../../.bashrc inside the media folder', async () => {
    const run = await start();
    run.llm.enqueue({ text: 'ok' });
    const key = randomBytes(16);
    run.ilink.userSays({
      from: OWNER,
      items: [
        {
          type: 4,
          file_item: {
            file_name: '../../../.bashrc',
            media: {
              encrypt_query_param: run.ilink.putCdn(Buffer.from('rm -rf ~'), key),
              aes_key: key.toString('base64'),
            },
          },
        },
      ],
    });
    await eventually(() => expect(run.ilink.textsTo(OWNER)).toEqual(['ok']));
    const mediaDir = join(run.dataDir, 'media', 'weixin');
    const saved = readdirSync(mediaDir);
    expect(saved).toHaveLength(1);
    expect(saved[0]).toMatch(/bashrc$/);
    expect(saved[0]).not.toMatch(/^\./);
    expect(readFileSync(join(mediaDir, saved[0] ?? ''), 'utf8')).toBe('rm -rf ~');
    expect(existsSync(join(run.dataDir, '.bashrc'))).toBe(false);
  });

  it('never fetches a media full_url on another host: it downloads through the configured CDN instead', async () => {
    const run = await start();
    const other = await bystander();
    run.llm.enqueue({ text: 'seen' });
    const key = randomBytes(16);
    const jpeg = Buffer.from([0xff, 0xd8, 0xff, 0xe0, 7, 7]);
    run.ilink.userSays({
      from: OWNER,
      items: [
        {
          type: 2,
          image_item: {
            aeskey: key.toString('hex'),
            media: { full_url: `${other.url}/latest/meta-data/`, encrypt_query_param: run.ilink.putCdn(jpeg, key) },
          },
        },
        { type: 2, image_item: { media: { full_url: 'http://169.254.169.254/latest/meta-data/' } } },
      ],
    });
    await eventually(() => expect(run.ilink.textsTo(OWNER)).toEqual(['seen']));
    expect(other.hits).toEqual([]);
    expect(lastUserText(run)).toContain(`data:image/jpeg;base64,${jpeg.toString('base64')}`);
  });

  it('never uploads to an upload_full_url on another host', async () => {
    const run = await start();
    const other = await bystander();
    writeFileSync(join(run.workspace, 'secret.txt'), 'private');
    run.ilink.answerNext('getuploadurl', { ret: 0, upload_full_url: `${other.url}/steal` });
    run.llm.enqueue(
      { toolCalls: [{ name: 'message', arguments: { content: 'here', media: ['secret.txt'] } }] },
      { text: 'done' },
    );
    run.ilink.userSays({ from: OWNER, text: 'send it' });
    await eventually(() => expect(run.ilink.textsTo(OWNER)).toContain('done'));
    expect(other.hits).toEqual([]);
    expect(run.ilink.textsTo(OWNER).join('\n')).toMatch(/could not send secret\.txt/);
  });

  it('does not follow an HTTP redirect with the bot token', async () => {
    const other = await bystander();
    const run = await start();
    run.ilink.answerNext('sendmessage', {}, 307, { location: `${other.url}/ilink/bot/sendmessage` });
    run.llm.enqueue({ text: 'answer' });
    run.ilink.userSays({ from: OWNER, text: 'hi' });
    await eventually(() => expect(run.llm.requests).toHaveLength(1));
    await quiet();
    expect(other.hits).toEqual([]);
  });

  it('refuses damaged ciphertext and a picture over maxMediaMb, saying so to the agent', async () => {
    const run = await start({ maxMediaMb: 1 });
    run.llm.enqueue({ text: 'noted' });
    const key = randomBytes(16);
    const big = run.ilink.putCdn(randomBytes(2 * 1024 * 1024), key);
    run.ilink.userSays({
      from: OWNER,
      items: [
        { type: 1, text_item: { text: 'two files' } },
        { type: 2, image_item: { aeskey: key.toString('hex'), media: { encrypt_query_param: big } } },
        {
          type: 4,
          file_item: {
            file_name: 'a.txt',
            // The right CDN object, the wrong key: padding does not check out.
            media: {
              encrypt_query_param: run.ilink.putCdn(Buffer.from('x'), key),
              aes_key: wrongKeyFor(Buffer.from('x'), key).toString('base64'),
            },
          },
        },
      ],
    });
    await eventually(() => expect(run.ilink.textsTo(OWNER)).toEqual(['noted']));
    const text = lastUserText(run);
    expect(text).toMatch(/image .*not received: (too large|download failed)/);
    expect(text).toMatch(/file a\.txt not received/);
    expect(
      existsSync(join(run.dataDir, 'media', 'weixin')) ? readdirSync(join(run.dataDir, 'media', 'weixin')) : [],
    ).toEqual([]);
  });

  it('ignores the bot’s own messages echoed back and messages with no sender', async () => {
    const run = await start();
    run.ilink.userSays({ from: OWNER, text: 'I am the bot', messageType: 2 });
    run.ilink.userSays({ from: '', text: 'nobody' });
    await quiet();
    expect(run.llm.requests).toHaveLength(0);
  });

  it('never writes the bot token to the log, /health or the login output', async () => {
    const log: string[] = [];
    const run = await start({}, log);
    run.ilink.answerNext('getupdates', { ret: -1, errmsg: `bad token ${run.ilink.token}` }, 500);
    await eventually(() => expect(log.join('\n')).toMatch(/reconnecting/));
    await waitState(run.gateway, 'running');
    run.ilink.revoke(run.ilink.token);
    await eventually(async () => expect(JSON.stringify(await healthOf(run.gateway))).toMatch(/WeChat login expired/));
    const health = JSON.stringify(await healthOf(run.gateway));
    expect(log.join('\n')).toMatch(/WeChat login expired/);
    for (const text of [log.join('\n'), health]) expect(text).not.toContain(run.ilink.token);

    const ilink = await startFakeIlink({ login: 'auto' });
    cleanups.push(() => ilink.close());
    const out: string[] = [];
    await weixinChannel.login?.(
      { baseUrl: ilink.url },
      {
        name: 'weixin',
        dataDir: run.dataDir,
        log: createLogger('debug', (l) => out.push(l)),
        out: (t) => out.push(t),
        qr: (c) => out.push(c),
      },
    );
    const account = JSON.parse(readFileSync(join(run.dataDir, 'weixin', 'account.json'), 'utf8'));
    expect(account.token).toMatch(/^bot-token-login-/);
    expect(out.join('\n')).not.toContain(account.token);
  });
});

describe('weixin: base URLs the server names', () => {
  const configured = 'https://ilinkai.weixin.qq.com';
  it.each([
    'https://evil.example',
    'http://ilinkai.weixin.qq.com',
    'https://weixin.qq.com.evil.example',
    'https://evilweixin.qq.com',
    'https://user:pw@ilinkai.weixin.qq.com',
    'http://127.0.0.1:9',
    'javascript:alert(1)',
  ])('refuses %s', (value) => {
    expect(safeBaseUrl(value, configured)).toBeUndefined();
  });
  it.each([
    ['https://ilinkai.weixin.qq.com', 'https://ilinkai.weixin.qq.com'],
    ['sh.ilinkai.weixin.qq.com', 'https://sh.ilinkai.weixin.qq.com'],
  ])('accepts %s', (value, expected) => {
    expect(safeBaseUrl(value, configured)).toBe(expected);
  });

  it('ignores a login redirect and a confirmed baseurl off WeChat’s domain', async () => {
    const ilink = await startFakeIlink({ login: 'manual' });
    cleanups.push(() => ilink.close());
    const other = await bystander();
    const { mkdtempSync } = await import('node:fs');
    const { tmpdir } = await import('node:os');
    const dataDir = mkdtempSync(join(tmpdir(), 'nb-weixin-login-'));
    ilink.answerNext('get_qrcode_status', { ret: 0, status: 'scaned_but_redirect', redirect_host: other.url });
    ilink.answerNext('get_qrcode_status', {
      ret: 0,
      status: 'confirmed',
      bot_token: 'tok-from-hostile',
      baseurl: other.url,
    });
    await weixinChannel.login?.(
      { baseUrl: ilink.url },
      { name: 'weixin', dataDir, log: createLogger('error', () => {}), out: () => {}, qr: () => {} },
    );
    expect(other.hits).toEqual([]);
    const account = JSON.parse(readFileSync(join(dataDir, 'weixin', 'account.json'), 'utf8'));
    expect(account.base_url).toBe(ilink.url);
  });
});
