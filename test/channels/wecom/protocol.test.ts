/**
 * The WeCom platform alone over the real SDK and the fake long connection: heartbeats, a connection that silently
 * died, a drop with a message pushed meanwhile (delivered once on the next connection), and a chunked upload.
 */
import { writeFileSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as sdk from '@wecom/aibot-node-sdk';
import { afterEach, describe, expect, it } from 'vitest';
import type { IncomingMessage, PlatformLink } from '../../../src/channels/platform.js';
import { wecomSettingsSchema } from '../../../src/channels/wecom/index.js';
import { WecomPlatform } from '../../../src/channels/wecom/platform.js';
import { silentLogger } from '../../../src/util/log.js';
import { eventually } from '../contract.js';
import { type FakeWecom, startFakeWecom } from './fake-wecom.js';

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

interface Recorder {
  link: PlatformLink;
  received: IncomingMessage[];
  failures: Error[];
}

function recorder(): Recorder {
  const received: IncomingMessage[] = [];
  const failures: Error[] = [];
  return {
    received,
    failures,
    link: {
      receive: async (message) => {
        received.push(message);
      },
      failed: (error) => failures.push(error),
      commands: () => [],
      log: silentLogger,
    },
  };
}

async function connected(heartbeatIntervalMs?: number): Promise<{ wecom: FakeWecom; platform: WecomPlatform }> {
  const wecom = await startFakeWecom();
  const settings = wecomSettingsSchema.parse({ ...wecom.settings, allowFrom: ['zhangsan'] });
  const platform = new WecomPlatform({
    sdk,
    settings: () => settings,
    log: silentLogger,
    ...(heartbeatIntervalMs ? { heartbeatIntervalMs } : {}),
  });
  closers.push(
    () => wecom.close(),
    () => platform.disconnect(),
  );
  return { wecom, platform };
}

describe('wecom long connection', () => {
  it('pings at the heartbeat interval, each ping acked on its req_id', async () => {
    const { wecom, platform } = await connected(40);
    const rec = recorder();
    await platform.connect(rec.link);
    await eventually(() => expect(wecom.frames.filter((f) => f.cmd === 'ping').length).toBeGreaterThanOrEqual(3));
    for (const ping of wecom.frames.filter((f) => f.cmd === 'ping')) expect(ping.headers?.req_id).toMatch(/^ping_/);
    expect(rec.failures).toEqual([]);
  });

  it('a connection whose pings go unanswered is reported lost, and the next connect subscribes again', async () => {
    const { wecom, platform } = await connected(40);
    const rec = recorder();
    await platform.connect(rec.link);
    wecom.silence(true);
    await eventually(() => expect(rec.failures).toHaveLength(1), 10_000);
    await platform.disconnect();
    wecom.silence(false);
    await platform.connect(rec.link);
    expect(wecom.subscribes()).toBe(2);
  });

  it('a message pushed while the connection is down arrives once on the next connection', async () => {
    const { wecom, platform } = await connected();
    const rec = recorder();
    await platform.connect(rec.link);
    wecom.userSays({ userId: 'zhangsan', id: 'm1', text: 'before' });
    await eventually(() => expect(rec.received.map((m) => m.text)).toEqual(['before']));
    wecom.drop();
    await eventually(() => expect(rec.failures).toHaveLength(1));
    await platform.disconnect();
    wecom.userSays({ userId: 'zhangsan', id: 'm2', text: 'meanwhile' });
    await expect(platform.connect(rec.link)).rejects.toThrow();
    await platform.disconnect();
    wecom.restore();
    await platform.connect(rec.link);
    await eventually(() => expect(rec.received.map((m) => m.id)).toEqual(['m1', 'm2']));
    // The reply to it goes on its callback's req_id, over the new connection.
    await platform.sendText({ chatId: 'zhangsan' }, { text: 'got it', markdown: 'got it' });
    expect(wecom.messages.at(-1)).toMatchObject({ text: 'got it', via: 'reply', finished: true });
  });

  it('a disconnect while the subscription is still unanswered ends that connect', async () => {
    const { wecom, platform } = await connected();
    wecom.holdSubscribe(true);
    const connecting = platform.connect(recorder().link);
    await eventually(() => expect(wecom.subscribes()).toBe(1));
    await platform.disconnect();
    await expect(connecting).rejects.toThrow(/disconnected while connecting/);
  });

  it('uploads a file larger than one chunk in 512 KB chunks, then replies with its media_id', async () => {
    const { wecom, platform } = await connected();
    const rec = recorder();
    await platform.connect(rec.link);
    wecom.userSays({ userId: 'zhangsan', text: 'send the archive' });
    await eventually(() => expect(rec.received).toHaveLength(1));
    const dir = await mkdtemp(join(tmpdir(), 'wecom-upload-'));
    const data = Buffer.alloc(1200 * 1024, 'x');
    const path = join(dir, 'archive.zip');
    writeFileSync(path, data);
    await platform.sendFile?.({ chatId: 'zhangsan' }, { path, name: 'archive.zip', kind: 'file' });
    expect(wecom.frames.filter((f) => f.cmd === 'aibot_upload_media_chunk')).toHaveLength(3);
    const sent = wecom.messages.at(-1);
    expect(sent).toMatchObject({ kind: 'file', via: 'reply' });
    expect(wecom.uploads.get(sent?.mediaId ?? '')?.data.equals(data)).toBe(true);
  });
});
