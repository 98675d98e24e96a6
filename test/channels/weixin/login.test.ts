/** The QR login's turns against the fake iLink server: codes that expire, a saved token WeChat refuses, a binding. */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { weixinSettingsSchema } from '../../../src/channels/weixin/index.js';
import { qrLogin } from '../../../src/channels/weixin/login.js';
import { fingerprint } from '../../../src/channels/weixin/state.js';
import { sanitizeForWeixin } from '../../../src/channels/weixin/text.js';
import { silentLogger } from '../../../src/util/log.js';
import { type FakeIlink, startFakeIlink } from './fake-ilink.js';
import { writeAccount } from './helpers.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

async function fake(): Promise<FakeIlink> {
  const ilink = await startFakeIlink({ login: 'manual' });
  cleanups.push(() => ilink.close());
  return ilink;
}

function login(ilink: FakeIlink, dataDir: string, extra: Record<string, unknown> = {}, signal?: AbortSignal) {
  const codes: string[] = [];
  const said: string[] = [];
  const settings = weixinSettingsSchema.parse({ baseUrl: ilink.url, ...extra });
  const done = qrLogin(
    settings,
    {
      name: 'weixin',
      dataDir,
      log: silentLogger,
      out: (t) => said.push(t),
      qr: (c) => codes.push(c),
      ...(signal ? { signal } : {}),
    },
    { pollIntervalMs: 20 },
  );
  return { done, codes, said };
}

const home = () => mkdtempSync(join(tmpdir(), 'nb-weixin-login-'));
const account = (dataDir: string) => JSON.parse(readFileSync(join(dataDir, 'weixin', 'account.json'), 'utf8'));
const until = async (check: () => boolean) => {
  while (!check()) await new Promise((resolve) => setTimeout(resolve, 10));
};

describe('weixin QR login', () => {
  it('shows a new code each time one expires, and gives up after three', async () => {
    const ilink = await fake();
    const { done, codes } = login(ilink, home());
    const failed = done.catch((err: Error) => err);
    for (let i = 1; i <= 4; i++) {
      await until(() => codes.length === i);
      ilink.expireCode();
    }
    const err = await failed;
    expect(err).toMatchObject({ name: 'UserError', message: expect.stringMatching(/expired 3 times/) });
    expect(codes).toEqual([1, 2, 3, 4].map((n) => `https://liteapp.weixin.qq.com/q/qr-${n}?bot_type=3`));
  });

  it('confirmed on the second code: saves that login and records which config token it replaced', async () => {
    const ilink = await fake();
    const dataDir = home();
    const { done, codes, said } = login(ilink, dataDir, { token: 'old-config-token' });
    await until(() => codes.length === 1);
    ilink.expireCode();
    await until(() => codes.length === 2);
    ilink.scan();
    await until(() => said.some((s) => s.includes('Scanned')));
    ilink.confirm();
    await done;
    expect(account(dataDir)).toMatchObject({
      token: 'bot-token-login-1',
      replaced_config_token_sha256: fingerprint('old-config-token'),
    });
    // The first request offered the config token as a known local token, as upstream does.
    expect(ilink.calls[0]?.body).toEqual({ local_token_list: ['old-config-token'] });
  });

  it('asks again without the saved token when WeChat refuses it (-3), and keeps a login WeChat says is bound', async () => {
    const ilink = await fake();
    const dataDir = home();
    writeAccount(dataDir, { token: 'saved-token' });
    ilink.answerNext('get_bot_qrcode', { ret: -3, errmsg: 'invalid local token' });
    ilink.answerNext('get_qrcode_status', { ret: 0, status: 'binded_redirect' });
    const { done, said } = login(ilink, dataDir);
    await done;
    const asks = ilink.calls.filter((c) => c.path.includes('get_bot_qrcode')).map((c) => c.body);
    expect(asks).toEqual([{ local_token_list: ['saved-token'] }, { local_token_list: [] }]);
    expect(said.join('')).toMatch(/already connected/);
    expect(account(dataDir).token).toBe('saved-token');
  });

  it('stops when the person gives up (the signal), with nothing saved', async () => {
    const ilink = await fake();
    const controller = new AbortController();
    const dataDir = home();
    const { done, codes } = login(ilink, dataDir, {}, controller.signal);
    await until(() => codes.length === 1);
    controller.abort();
    await expect(done).rejects.toThrow(/cancelled/);
  });

  it('a verification number WeChat asks for is refused clearly', async () => {
    const ilink = await fake();
    ilink.answerNext('get_qrcode_status', { ret: 0, status: 'need_verifycode' });
    await expect(login(ilink, home()).done).rejects.toThrow(/number it shows on your phone/);
  });
});

describe('weixin text', () => {
  it('turns angle brackets outside code into full-width forms and unwraps Markdown link targets', () => {
    expect(sanitizeForWeixin('a <b> [x](<https://e.com/a>) ~~gone~~ `<kept>`\n```\n<also kept>\n```')).toBe(
      'a ＜b＞ [x](https://e.com/a) gone `<kept>`\n```\n<also kept>\n```',
    );
  });
});
