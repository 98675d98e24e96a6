/**
 * The built `nanobot` with the WeChat channel: `channels login weixin` draws the QR code in the terminal and saves
 * the login (0600) where upstream keeps it; `gateway` then answers through the fake iLink server and comes back
 * after a dropped connection; when WeChat revokes the token, `channels status` and the log say to log in again.
 * The token is never printed.
 */
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { eventually } from '../channels/contract.js';
import { startFakeIlink } from '../channels/weixin/fake-ilink.js';
import { startFakeLLM } from '../helpers/fake-llm.js';
import { cleanupsAfterEach, homeWithChannel, spawnGateway, withOutput } from './channel-e2e.js';
import { runCli } from './cli-helpers.js';

const OWNER = 'owner@im.wechat';

const cleanup = cleanupsAfterEach();

describe('nanobot with channels.weixin', () => {
  it('logs in by QR code in the terminal, answers through the gateway, reconnects, and says when the login expired', async () => {
    const ilink = await startFakeIlink({ login: 'auto' });
    const llm = await startFakeLLM();
    cleanup(
      () => ilink.close(),
      () => llm.close(),
    );
    const home = await homeWithChannel('weixin', llm, {
      enabled: true,
      baseUrl: ilink.url,
      cdnBaseUrl: ilink.cdnUrl,
      allowFrom: [OWNER],
    });

    const login = await runCli(['channels', 'login', 'weixin'], home);
    expect(login.code, login.stderr).toBe(0);
    expect(login.stdout).toContain('https://liteapp.weixin.qq.com/q/qr-1?bot_type=3');
    expect(login.stdout).toMatch(/[▀▄█]/); // the code itself, drawn with half blocks
    expect(login.stdout).toMatch(/Logged in to WeChat as bot fakebot@im\.bot/);
    const accountFile = join(home, '.nanobot', 'weixin', 'account.json');
    expect(statSync(accountFile).mode & 0o777).toBe(0o600);
    const token = JSON.parse(readFileSync(accountFile, 'utf8')).token as string;
    expect(token).toBe('bot-token-login-1');
    expect(login.stdout + login.stderr).not.toContain(token);

    const gateway = spawnGateway(home, cleanup);
    const dump = withOutput(gateway);
    llm.enqueue({ text: 'Hello from the built gateway.' }, { text: 'Back again.' });
    ilink.userSays({ from: OWNER, text: 'hi' });
    await eventually(() => expect(ilink.textsTo(OWNER)).toEqual(['Hello from the built gateway.']), 30_000).catch(dump);

    ilink.drop();
    ilink.userSays({ from: OWNER, text: 'still there?' });
    await new Promise((resolve) => setTimeout(resolve, 300));
    ilink.restore();
    await eventually(
      () => expect(ilink.textsTo(OWNER)).toEqual(['Hello from the built gateway.', 'Back again.']),
      30_000,
    ).catch(dump);

    ilink.revoke(token);
    await eventually(() => expect(gateway.output()).toMatch(/WeChat login expired/), 30_000).catch(dump);
    await eventually(async () => {
      const status = await runCli(['channels', 'status'], home);
      expect(status.stdout).toMatch(/WeChat .*reconnecting \(WeChat login expired.*nanobot channels login weixin/);
    }, 20_000);
    expect(gateway.output()).not.toContain(token);
  }, 120_000);
});
