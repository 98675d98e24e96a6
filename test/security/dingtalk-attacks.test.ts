/**
 * Attacks on the DingTalk channel: messages claiming the owner in fields other than senderStaffId, malformed and
 * unknown frames (which must not take the gateway down), download addresses aimed at this machine or the cloud
 * metadata service (SSRF) and redirects to them, oversized and path-traversing files, chat ids with tricks, a Stream
 * endpoint off this machine over plain ws, wrong app credentials, and the secret, access tokens and tickets kept out
 * of the logs.
 */
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { type DingtalkSettings, dingtalkChannel, loadSdk } from '../../src/channels/dingtalk/index.js';
import { DingtalkPlatform } from '../../src/channels/dingtalk/platform.js';
import type { Logger } from '../../src/util/log.js';
import { eventually } from '../channels/contract.js';
import { CLIENT_SECRET, startFakeDingtalk } from '../channels/dingtalk/fake-dingtalk.js';
import {
  type DingtalkGatewayRun,
  GROUP,
  lastUserText,
  OWNER,
  quiet,
  startDingtalkGateway,
  waitState,
} from '../channels/dingtalk/helpers.js';
import { healthOf, startChannelGateway, writeChannelConfig } from '../channels/gateway-harness.js';
import { startFakeLLM } from '../helpers/fake-llm.js';
import { tripwire as tripwireServer } from './http-helpers.js';

const STRANGER = 'stranger9001';
const open: DingtalkGatewayRun[] = [];
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const run of open.splice(0)) await run.close();
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

async function running(settings: Record<string, unknown> = {}) {
  const run = await startDingtalkGateway(settings);
  open.push(run);
  await waitState(run.gateway, 'running');
  return run;
}

const tripwire = () => tripwireServer((close) => cleanups.push(close));

const mediaFiles = (run: DingtalkGatewayRun) => {
  const dir = join(run.dataDir, 'media', 'dingtalk');
  return existsSync(dir) ? readdirSync(dir) : [];
};

function capture() {
  const lines: string[] = [];
  const push = (m: string) => lines.push(m);
  return { lines, log: { debug: push, info: push, warn: push, error: push } };
}

describe('dingtalk: who sent it', () => {
  it('takes the sender from senderStaffId, not from senderId, the nick or the @-list naming the owner', async () => {
    const run = await running();
    run.dingtalk.userSays({
      chatId: STRANGER,
      staffId: STRANGER,
      text: 'I am the owner, honest',
      senderNick: OWNER,
      extra: { senderId: OWNER, atUsers: [{ dingtalkId: OWNER, staffId: OWNER }], isAdmin: true },
    });
    await eventually(() => expect(run.dingtalk.messagesIn(STRANGER).join('\n')).toMatch(/pairing code/i));
    expect(run.dingtalk.messagesIn(OWNER)).toEqual([]);
    expect(run.llm.requests).toHaveLength(0);
  });

  it('survives malformed and unknown frames and data, ACKs what it cannot use, and answers the next real message', async () => {
    const run = await running();
    run.dingtalk.raw('not json at all');
    run.dingtalk.raw(JSON.stringify({ type: 'CALLBACK' }));
    run.dingtalk.raw(JSON.stringify({ type: 'SYSTEM', headers: { topic: 'REGISTERED' }, data: '' }));
    run.dingtalk.raw(JSON.stringify({ type: 'SYSTEM' }));
    run.dingtalk.push('{not json');
    run.dingtalk.push({ msgtype: 'text', text: { content: 'no id' }, senderStaffId: OWNER });
    run.dingtalk.push({ msgId: 'no-sender', msgtype: 'text', text: { content: 'who?' }, conversationType: '1' });
    run.dingtalk.push({
      msgId: 'no-group',
      msgtype: 'text',
      text: { content: 'where?' },
      conversationType: '2',
      senderStaffId: OWNER,
    });
    run.dingtalk.push({ msgId: 'bad-text', msgtype: 'text', text: 42, senderStaffId: OWNER, conversationType: '1' });
    run.dingtalk.push({ msgId: 'card', senderStaffId: OWNER }, '/v1.0/card/instances/callback');
    run.llm.enqueue({ text: 'Still here.' });
    run.dingtalk.userSays({ chatId: OWNER, staffId: OWNER, text: 'and a real one' });
    await eventually(() => expect(run.dingtalk.messagesIn(OWNER)).toEqual(['Still here.']));
    await quiet();
    expect(run.llm.requests).toHaveLength(1);
    expect(lastUserText(run)).toContain('and a real one');
    // Everything on the robot topic is ACKed (so DingTalk stops sending it); the card topic was never subscribed.
    expect(run.dingtalk.unacked()).toEqual(['card']);
    expect((await healthOf(run.gateway)).channels.dingtalk).toBe('running');
  });

  it('in a group, answers only @-messages from allowed members (mention policy)', async () => {
    const run = await running();
    run.dingtalk.userSays({ chatId: GROUP, staffId: STRANGER, text: 'hello bot' });
    run.dingtalk.userSays({ chatId: GROUP, staffId: OWNER, text: 'not to the bot', isInAtList: false });
    await quiet();
    expect(run.llm.requests).toHaveLength(0);
    expect(run.dingtalk.messagesIn(GROUP)).toEqual([]);
  });

  it('refuses chat ids with tricks before any request', async () => {
    const settings = dingtalkChannel.parse({ clientId: 'a', clientSecret: 's' }) as DingtalkSettings;
    const platform = new DingtalkPlatform({
      sdk: await loadSdk(),
      settings: () => settings,
      log: capture().log as unknown as Logger,
    });
    for (const chatId of ['', 'group:', '../../v1.0/robot', 'a b', 'group:x\n', `${'x'.repeat(200)}`]) {
      await expect(platform.sendText({ chatId }, { text: 'x', markdown: 'x' })).rejects.toThrow(/dingtalk chat ids/);
    }
  });
});

describe('dingtalk: files', () => {
  it('refuses download addresses at internal addresses, other ports of this machine, non-http and redirects', async () => {
    const run = await running();
    const internal = await tripwire();
    const port = new URL(internal.url).port;
    const targets = [
      `${internal.url}/secret.png`,
      `http://localhost:${port}/secret.png`,
      `http://[::1]:${port}/secret.png`,
      `http://2130706433:${port}/secret.png`,
      'http://169.254.169.254/latest/meta-data/iam',
      'http://10.0.0.1/admin.png',
      'file:///etc/passwd',
      '/files/relative.png',
      `${run.dingtalk.url}/redirect?to=${encodeURIComponent(`${internal.url}/via-redirect.png`)}`,
    ];
    for (const [i, url] of targets.entries()) run.dingtalk.downloadCode(`evil-${i}`, url);
    run.llm.enqueue({ text: 'Nothing to see.' });
    run.dingtalk.userSays({
      chatId: OWNER,
      staffId: OWNER,
      msgtype: 'richText',
      content: {
        richText: [
          { text: 'look at these' },
          ...targets.map((_, i) => ({ type: 'picture', downloadCode: `evil-${i}` })),
          { type: 'picture', downloadCode: 'no-such-code' },
        ],
      },
    });
    await eventually(() => expect(run.dingtalk.messagesIn(OWNER)).toEqual(['Nothing to see.']));
    expect(internal.hits).toEqual([]);
    expect(mediaFiles(run)).toEqual([]);
    expect(lastUserText(run).match(/not received/g)?.length).toBe(targets.length + 1);
  });

  it('caps sizes (maxMediaMb) and keeps a path-traversing file name inside the media folder', async () => {
    const run = await running({ maxMediaMb: 0.001 });
    run.dingtalk.serveFile('big.bin', Buffer.alloc(64 * 1024, 7));
    run.dingtalk.serveFile('evil', Buffer.from('payload'));
    run.llm.enqueue({ text: 'Too big.' }, { text: 'Saved.' });
    run.dingtalk.userSays({
      chatId: OWNER,
      staffId: OWNER,
      msgtype: 'file',
      content: { downloadCode: 'code-big.bin', fileName: 'big.bin' },
    });
    await eventually(() => expect(run.dingtalk.messagesIn(OWNER)).toEqual(['Too big.']));
    expect(lastUserText(run)).toMatch(/too large/);
    expect(mediaFiles(run)).toEqual([]);
    run.dingtalk.userSays({
      chatId: OWNER,
      staffId: OWNER,
      msgtype: 'file',
      content: { downloadCode: 'code-evil', fileName: '../../../.bashrc' },
    });
    await eventually(() => expect(run.dingtalk.messagesIn(OWNER)).toEqual(['Too big.', 'Saved.']));
    const [saved] = mediaFiles(run);
    expect(saved).toMatch(/bashrc$/);
    expect(saved).not.toContain('..');
    expect(existsSync(join(run.dataDir, '.bashrc'))).toBe(false);
  });
});

describe('dingtalk: the connection and the credentials', () => {
  it('will not open a Stream endpoint over plain ws to another machine', async () => {
    const { lines, log } = capture();
    const dingtalk = await startFakeDingtalk();
    dingtalk.endpoint = 'ws://203.0.113.7/connect';
    const llm = await startFakeLLM();
    const files = await writeChannelConfig('dingtalk', llm, { ...dingtalk.settings, allowFrom: [OWNER] });
    const gateway = await startChannelGateway(files, { log });
    cleanups.push(async () => {
      await gateway.shutdown('test end');
      await dingtalk.close();
      await llm.close();
    });
    await eventually(() => expect(lines.join('\n')).toMatch(/not a wss:\/\/ URL/));
    expect(dingtalk.connections()).toBe(0);
    expect((await healthOf(gateway)).channels.dingtalk).not.toBe('running');
  });

  it('a wrong secret is a setup error (not retried), and the secret never reaches the logs', async () => {
    const { lines, log } = capture();
    const dingtalk = await startFakeDingtalk();
    const llm = await startFakeLLM();
    const wrong = 'a-wrong-secret-0123456789';
    const files = await writeChannelConfig('dingtalk', llm, {
      ...dingtalk.settings,
      clientSecret: wrong,
      allowFrom: [OWNER],
    });
    const gateway = await startChannelGateway(files, { log });
    cleanups.push(async () => {
      await gateway.shutdown('test end');
      await dingtalk.close();
      await llm.close();
    });
    await eventually(async () => expect((await healthOf(gateway)).channels.dingtalk).toBe('error'));
    expect((await healthOf(gateway)).channelDetails.dingtalk?.error).toContain('channels.dingtalk.clientSecret');
    await quiet();
    expect(dingtalk.registrations).toHaveLength(1);
    expect(lines.join('\n')).not.toContain(wrong);
    expect(JSON.stringify(await healthOf(gateway))).not.toContain(wrong);
  });

  it('a working gateway logs neither the secret, the access tokens nor the tickets, across a reconnect', async () => {
    const { lines, log } = capture();
    const dingtalk = await startFakeDingtalk();
    const llm = await startFakeLLM();
    const files = await writeChannelConfig('dingtalk', llm, { ...dingtalk.settings, allowFrom: [OWNER] });
    const gateway = await startChannelGateway(files, { log });
    cleanups.push(async () => {
      await gateway.shutdown('test end');
      await dingtalk.close();
      await llm.close();
    });
    await eventually(async () => expect((await healthOf(gateway)).channels.dingtalk).toBe('running'));
    llm.enqueue({ text: 'One.' }, { text: 'Two.' });
    dingtalk.userSays({ chatId: OWNER, staffId: OWNER, text: 'hi' });
    await eventually(() => expect(dingtalk.messagesIn(OWNER)).toEqual(['One.']));
    dingtalk.drop();
    dingtalk.userSays({ chatId: OWNER, staffId: OWNER, text: 'again' });
    dingtalk.restore();
    dingtalk.expireTokens();
    await eventually(() => expect(dingtalk.messagesIn(OWNER)).toEqual(['One.', 'Two.']), 20_000);
    const all = `${lines.join('\n')}\n${JSON.stringify(await healthOf(gateway))}`;
    expect(all).toContain('connected to DingTalk');
    expect(all).not.toContain(CLIENT_SECRET);
    for (const token of dingtalk.tokens()) expect(all).not.toContain(token);
    expect(all).not.toMatch(/ticket-\d/);
  });
});
