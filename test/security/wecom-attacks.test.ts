/**
 * Attacks on the WeCom channel: strangers claiming the owner in other fields of a callback or naming the owner's
 * chat, malformed frames, file URLs aimed at this machine or the cloud metadata service (SSRF), a wrong aeskey,
 * oversized and path-traversing files, a wrong secret, and the secret kept out of the logs even at debug level.
 */
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { eventually } from '../channels/contract.js';
import { SECRET } from '../channels/wecom/fake-wecom.js';
import {
  lastUserText,
  OWNER,
  quiet,
  startWecomGateway,
  type WecomGatewayRun,
  waitState,
} from '../channels/wecom/helpers.js';
import { tripwire as tripwireServer } from './http-helpers.js';

const STRANGER = 'mallory';
const open: WecomGatewayRun[] = [];
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const run of open.splice(0)) await run.close();
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

async function running(settings: Record<string, unknown> = {}) {
  const run = await startWecomGateway(settings);
  open.push(run);
  await waitState(run.gateway, 'running');
  return run;
}

const tripwire = () => tripwireServer((close) => cleanups.push(close));

const mediaFiles = (run: WecomGatewayRun) => {
  const dir = join(run.dataDir, 'media', 'wecom');
  return existsSync(dir) ? readdirSync(dir) : [];
};

describe('wecom: who sent it', () => {
  it('takes the sender from from.userid only; a private chat naming the owner’s chatid stays the stranger’s', async () => {
    const run = await running();
    run.wecom.userSays({
      userId: STRANGER,
      body: { chatid: OWNER, sender: { userid: OWNER }, userid: OWNER, text: { content: 'I am the owner' } },
    });
    await eventually(() => expect(run.wecom.messagesIn(STRANGER).join('\n')).toMatch(/pairing code/i));
    expect(run.wecom.messagesIn(OWNER)).toEqual([]);
    expect(run.llm.requests).toHaveLength(0);
  });

  it('a stranger’s group @-message gets neither a turn nor a pairing code', async () => {
    const run = await running();
    run.wecom.userSays({ userId: STRANGER, chatType: 'group', chatId: 'wrkGROUP2', text: '@助手 /pairing list' });
    await quiet();
    expect(run.wecom.messages).toEqual([]);
    expect(run.llm.requests).toHaveLength(0);
  });

  it('a user let in by "*" is not an owner: /pairing is refused', async () => {
    const run = await running({ allowFrom: [OWNER, '*'] });
    run.wecom.userSays({ userId: 'lisi', text: '/pairing approve ABCD-EFGH' });
    await eventually(() => expect(run.wecom.messagesIn('lisi').join('\n')).toMatch(/Only the owner/));
    expect(run.llm.requests).toHaveLength(0);
  });
});

describe('wecom: malformed frames', () => {
  it('ignores non-JSON, bodiless, senderless and typeless callbacks, and keeps answering', async () => {
    const run = await running();
    run.wecom.sendRaw('not json at all {');
    run.wecom.sendRaw(JSON.stringify({ cmd: 'aibot_msg_callback', headers: { req_id: 'x1' } }));
    run.wecom.sendRaw(
      JSON.stringify({ cmd: 'aibot_msg_callback', headers: { req_id: 'x2' }, body: { msgtype: 'text', from: {} } }),
    );
    run.wecom.sendRaw(
      JSON.stringify({ cmd: 'aibot_msg_callback', headers: { req_id: 'x3' }, body: { from: { userid: OWNER } } }),
    );
    run.wecom.sendRaw(JSON.stringify({ headers: { req_id: 'aibot_subscribe_forged' }, errcode: 40058 }));
    run.llm.enqueue({ text: 'still here' });
    run.wecom.userSays({ userId: OWNER, text: 'hello?' });
    await eventually(() => expect(run.wecom.messagesIn(OWNER)).toEqual(['still here']));
    expect(run.llm.requests).toHaveLength(1);
  });
});

describe('wecom: files', () => {
  it('never fetches a file URL on this machine (other than the configured endpoint) or the metadata service', async () => {
    const run = await running();
    const trap = await tripwire();
    run.llm.enqueue({ text: 'one' });
    run.wecom.userSays({
      userId: OWNER,
      body: {
        msgtype: 'mixed',
        mixed: {
          msg_item: [
            { msgtype: 'text', text: { content: 'two pictures' } },
            { msgtype: 'image', image: { url: `${trap.url}/admin`, aeskey: 'a'.repeat(43) } },
            { msgtype: 'image', image: { url: 'http://169.254.169.254/latest/meta-data/', aeskey: 'a'.repeat(43) } },
          ],
        },
      },
    });
    await eventually(() => expect(run.wecom.messagesIn(OWNER)).toEqual(['one']));
    expect(trap.hits).toEqual([]);
    expect(lastUserText(run)).toContain('not received');
    expect(mediaFiles(run)).toEqual([]);
  });

  it('a wrong aeskey, an oversized file and a file: URL leave nothing on disk', async () => {
    const run = await running({ maxMediaMb: 0.01 });
    run.llm.enqueue({ text: 'a' }, { text: 'b' }, { text: 'c' });
    const file = run.wecom.hostFile(Buffer.from('secret plans'));
    // A key of the wrong length (another 32-byte key would fail its padding check only almost always).
    const otherKey = Buffer.alloc(16, 7).toString('base64');
    run.wecom.userSays({ userId: OWNER, body: { msgtype: 'file', file: { url: file.url, aeskey: otherKey } } });
    await eventually(() => expect(run.wecom.messagesIn(OWNER)).toEqual(['a']));
    expect(lastUserText(run)).toContain('not received');
    const big = run.wecom.hostFile(Buffer.alloc(64 * 1024, 1), 'big.bin');
    run.wecom.userSays({ userId: OWNER, body: { msgtype: 'file', file: { ...big, name: 'big.bin' } } });
    await eventually(() => expect(run.wecom.messagesIn(OWNER)).toEqual(['a', 'b']));
    expect(lastUserText(run)).toMatch(/too large/);
    run.wecom.userSays({
      userId: OWNER,
      body: { msgtype: 'image', image: { url: 'file:///etc/passwd', aeskey: 'k' } },
    });
    await eventually(() => expect(run.wecom.messagesIn(OWNER)).toEqual(['a', 'b', 'c']));
    expect(lastUserText(run)).toContain('not received');
    expect(mediaFiles(run)).toEqual([]);
  });

  it('a path-traversing file name stays inside the media folder', async () => {
    const run = await running();
    run.llm.enqueue({ text: 'saved' });
    const file = run.wecom.hostFile(Buffer.from('#!/bin/sh\necho pwned\n'));
    run.wecom.userSays({ userId: OWNER, body: { msgtype: 'file', file: { ...file, name: '../../../.bashrc' } } });
    await eventually(() => expect(run.wecom.messagesIn(OWNER)).toEqual(['saved']));
    const files = mediaFiles(run);
    expect(files).toHaveLength(1);
    expect(files[0]).toMatch(/-bashrc$/);
    expect(existsSync(join(run.dataDir, '.bashrc'))).toBe(false);
  });

  it('a name with a right-to-left override or control characters cannot disguise the file; CJK names stay', async () => {
    const run = await running();
    run.llm.enqueue({ text: 'one' }, { text: 'two' });
    const file = run.wecom.hostFile(Buffer.from('MZ'));
    run.wecom.userSays({
      userId: OWNER,
      body: { msgtype: 'file', file: { ...file, name: 'invoice\u202Egpj.exe\u0007' } },
    });
    await eventually(() => expect(run.wecom.messagesIn(OWNER)).toEqual(['one']));
    const report = run.wecom.hostFile(Buffer.from('numbers'));
    run.wecom.userSays({ userId: OWNER, body: { msgtype: 'file', file: { ...report, name: '季度报告.txt' } } });
    await eventually(() => expect(run.wecom.messagesIn(OWNER)).toEqual(['one', 'two']));
    const files = mediaFiles(run).sort();
    expect(files.some((f) => f.endsWith('-invoice_gpj.exe_'))).toBe(true);
    expect(files.some((f) => f.endsWith('-季度报告.txt'))).toBe(true);
    expect(files.join('')).not.toMatch(/[\u202E\u0007]/);
  });
});

describe('wecom: credentials', () => {
  it('keeps the secret out of every log line, at debug level too, across a refused and an accepted login', async () => {
    const refused = await startWecomGateway({ secret: `${SECRET}-wrong` });
    open.push(refused);
    await waitState(refused.gateway, 'error');
    const run = await running();
    run.llm.enqueue({ text: 'ok' });
    run.wecom.userSays({ userId: OWNER, text: 'hi' });
    await eventually(() => expect(run.wecom.messagesIn(OWNER)).toEqual(['ok']));
    for (const logs of [refused.logs, run.logs]) {
      expect(logs.length).toBeGreaterThan(0);
      expect(logs.join('\n')).not.toContain(SECRET);
    }
  });
});
