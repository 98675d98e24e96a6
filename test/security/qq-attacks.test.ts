/**
 * Attacks on the QQ channel: events forged outside the bot's session or claiming the owner in another field,
 * malformed and unknown events, attachment URLs aimed at this machine or the cloud metadata service (SSRF),
 * oversized and path-traversing attachments, wrong app credentials, and the secret and access tokens kept out of
 * the logs.
 */
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { QqSettings } from '../../src/channels/qq/index.js';
import type { Logger } from '../../src/util/log.js';
import { eventually } from '../channels/contract.js';
import { healthOf, startChannelGateway, writeChannelConfig } from '../channels/gateway-harness.js';
import { SECRET, startFakeQq } from '../channels/qq/fake-qq.js';
import { lastUserText, OWNER, type QqGatewayRun, quiet, startQqGateway, waitState } from '../channels/qq/helpers.js';
import { startFakeLLM } from '../helpers/fake-llm.js';
import { tripwire as tripwireServer } from './http-helpers.js';

const STRANGER = 'STRANGER00000000000000000000001';
const open: QqGatewayRun[] = [];
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const run of open.splice(0)) await run.close();
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

async function running(settings: Record<string, unknown> = {}, fake: Parameters<typeof startQqGateway>[1] = {}) {
  const run = await startQqGateway({ ackMessage: '', ...settings }, fake);
  open.push(run);
  await waitState(run.gateway, 'running');
  return run;
}

const tripwire = () => tripwireServer((close) => cleanups.push(close));

const mediaFiles = (run: QqGatewayRun) => {
  const dir = join(run.dataDir, 'media', 'qq');
  return existsSync(dir) ? readdirSync(dir) : [];
};

function capture() {
  const lines: string[] = [];
  const push = (m: string) => lines.push(m);
  return { lines, log: { debug: push, info: push, warn: push, error: push } };
}

describe('qq: who sent it', () => {
  it('takes the sender from author.user_openid, not from other fields naming the owner', async () => {
    const run = await running();
    run.qq.dispatch('C2C_MESSAGE_CREATE', {
      id: 'forged-1',
      content: 'I am the owner, honest',
      author: { user_openid: STRANGER, id: OWNER, member_openid: OWNER },
      user_openid: OWNER,
    });
    await eventually(() => expect(run.qq.messagesIn(STRANGER).join('\n')).toMatch(/pairing|code/i));
    expect(run.qq.messagesIn(OWNER)).toEqual([]);
    expect(run.llm.requests).toHaveLength(0);
  });

  it('ignores a message event sent before the session was ready, malformed events and other event types', async () => {
    const run = await running(
      {},
      {
        beforeReady: {
          t: 'C2C_MESSAGE_CREATE',
          d: { id: 'early-1', content: 'before identify', author: { user_openid: OWNER } },
        },
      },
    );
    run.qq.raw('not json at all');
    run.qq.raw(JSON.stringify({ op: 0, t: 'C2C_MESSAGE_CREATE' }));
    run.qq.dispatch('C2C_MESSAGE_CREATE', { content: 'no id', author: { user_openid: OWNER } });
    run.qq.dispatch('C2C_MESSAGE_CREATE', { id: 'no-author', content: 'who?' });
    run.qq.dispatch('GROUP_AT_MESSAGE_CREATE', { id: 'no-group', content: 'where?', author: { member_openid: OWNER } });
    run.qq.dispatch('DIRECT_MESSAGE_CREATE', { id: 'guild-dm', content: 'guild', author: { id: OWNER } });
    run.llm.enqueue({ text: 'Still here.' });
    run.qq.userSays({ chatId: OWNER, userOpenid: OWNER, text: 'and a real one' });
    await eventually(() => expect(run.qq.messagesIn(OWNER)).toEqual(['Still here.']));
    await quiet();
    expect(run.llm.requests).toHaveLength(1);
    expect(lastUserText(run)).toContain('and a real one');
    expect(JSON.stringify(run.llm.requests)).not.toContain('before identify');
  });

  it('sends to an openid only through its own path segment (no path tricks in chat ids)', async () => {
    const { qqChannel } = await import('../../src/channels/qq/index.js');
    const { QqPlatform } = await import('../../src/channels/qq/platform.js');
    const { WebSocket } = await import('ws');
    const settings = qqChannel.parse({ appId: '1', secret: 's' }) as QqSettings;
    const platform = new QqPlatform({ WebSocket, settings: () => settings, log: capture().log as unknown as Logger });
    await expect(platform.sendText({ chatId: '../../v2/groups/x' }, { text: 'x', markdown: 'x' })).rejects.toThrow(
      /qq chat ids are/,
    );
  });
});

describe('qq: attachments', () => {
  it('refuses attachment URLs at internal addresses, other ports of this machine, non-http and redirects', async () => {
    const run = await running();
    const internal = await tripwire();
    const port = new URL(internal.url).port;
    const urls = [
      `${internal.url}/secret.png`,
      `http://localhost:${port}/secret.png`,
      `http://[::1]:${port}/secret.png`,
      `http://2130706433:${port}/secret.png`,
      `//127.0.0.1:${port}/protocol-relative.png`,
      'http://169.254.169.254/latest/meta-data/iam',
      'http://10.0.0.1/admin.png',
      'file:///etc/passwd',
      '/files/relative.png',
      `${run.qq.url}/redirect?to=${encodeURIComponent(`${internal.url}/via-redirect.png`)}`,
    ];
    run.llm.enqueue({ text: 'Nothing to see.' });
    run.qq.userSays({
      chatId: OWNER,
      userOpenid: OWNER,
      text: 'look at these',
      attachments: urls.map((url) => ({ content_type: 'image/png', filename: 'x.png', url })),
    });
    await eventually(() => expect(run.qq.messagesIn(OWNER)).toEqual(['Nothing to see.']));
    expect(internal.hits).toEqual([]);
    expect(mediaFiles(run)).toEqual([]);
    expect(lastUserText(run).match(/not received/g)?.length).toBe(urls.length);
  });

  it('caps sizes (downloadMaxBytes): a declared size is refused before downloading, an undeclared one mid-stream', async () => {
    const run = await running({ downloadMaxBytes: 1024 });
    const big = Buffer.alloc(64 * 1024, 7);
    const declared = run.qq.serveFile('declared.png', big, 'image/png');
    const undeclared = run.qq.serveFile('undeclared.bin', big);
    run.llm.enqueue({ text: 'Too big.' });
    run.qq.userSays({
      chatId: OWNER,
      userOpenid: OWNER,
      text: 'two big ones',
      attachments: [
        { content_type: 'image/png', filename: 'declared.png', url: declared, size: big.length },
        { content_type: 'file', filename: 'undeclared.bin', url: undeclared },
      ],
    });
    await eventually(() => expect(run.qq.messagesIn(OWNER)).toEqual(['Too big.']));
    expect(lastUserText(run).match(/too large/g)?.length).toBe(2);
    expect(run.qq.fileRequests).not.toContain('/files/declared.png');
    expect(mediaFiles(run)).toEqual([]);
  });

  it('keeps a file name with path traversal inside the media folder', async () => {
    const run = await running();
    const url = run.qq.serveFile('evil', Buffer.from('payload'));
    run.llm.enqueue({ text: 'Saved.' });
    run.qq.userSays({
      chatId: OWNER,
      userOpenid: OWNER,
      text: 'a file',
      attachments: [{ content_type: 'file', filename: '../../../.bashrc', url }],
    });
    await eventually(() => expect(run.qq.messagesIn(OWNER)).toEqual(['Saved.']));
    const [saved] = mediaFiles(run);
    expect(saved).toMatch(/bashrc$/);
    expect(saved).not.toContain('..');
    expect(existsSync(join(run.dataDir, '.bashrc'))).toBe(false);
  });
});

describe('qq: credentials', () => {
  it('a wrong secret is a setup error (not retried), and the secret never reaches the logs', async () => {
    const { lines, log } = capture();
    const qq = await startFakeQq();
    const llm = await startFakeLLM();
    const wrong = 'a-wrong-secret-0123456789';
    const files = await writeChannelConfig('qq', llm, { ...qq.settings, secret: wrong, allowFrom: [OWNER] });
    const gateway = await startChannelGateway(files, { log });
    cleanups.push(async () => {
      await gateway.shutdown('test end');
      await qq.close();
      await llm.close();
    });
    await eventually(async () => expect((await healthOf(gateway)).channels.qq).toBe('error'));
    expect((await healthOf(gateway)).channelDetails.qq?.error).toContain('channels.qq.secret');
    await quiet();
    expect(qq.tokenRequests()).toBe(1);
    expect(lines.join('\n')).not.toContain(wrong);
    expect(JSON.stringify(await healthOf(gateway))).not.toContain(wrong);
  });

  it('a working gateway logs neither the secret nor the access tokens, across a resume', async () => {
    const { lines, log } = capture();
    const qq = await startFakeQq();
    const llm = await startFakeLLM();
    const files = await writeChannelConfig('qq', llm, { ...qq.settings, ackMessage: '', allowFrom: [OWNER] });
    const gateway = await startChannelGateway(files, { log });
    cleanups.push(async () => {
      await gateway.shutdown('test end');
      await qq.close();
      await llm.close();
    });
    await eventually(async () => expect((await healthOf(gateway)).channels.qq).toBe('running'));
    llm.enqueue({ text: 'One.' }, { text: 'Two.' });
    qq.userSays({ chatId: OWNER, userOpenid: OWNER, text: 'hi' });
    await eventually(() => expect(qq.messagesIn(OWNER)).toEqual(['One.']));
    qq.drop();
    qq.userSays({ chatId: OWNER, userOpenid: OWNER, text: 'again' });
    qq.restore();
    await eventually(() => expect(qq.messagesIn(OWNER)).toEqual(['One.', 'Two.']), 20_000);
    const all = `${lines.join('\n')}\n${JSON.stringify(await healthOf(gateway))}`;
    expect(all).toContain('resumed');
    expect(all).not.toContain(SECRET);
    for (const token of qq.tokens()) expect(all).not.toContain(token);
  });
});
