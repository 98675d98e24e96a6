/**
 * A hostile sender or server against the WhatsApp channel (real Baileys, loopback WhatsApp): a sender naming someone
 * else, status/broadcast stanzas, media URLs aimed at the gateway's own network, key material in Baileys' log.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { dirname, join } from 'node:path';
import * as baileys from 'baileys';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AttachmentTooLarge, saveAttachment } from '../../src/channels/media.js';
import type { IncomingMessage, PlatformLink } from '../../src/channels/platform.js';
import { type WhatsAppSettings, whatsappSettingsSchema } from '../../src/channels/whatsapp/index.js';
import { WhatsAppPlatform } from '../../src/channels/whatsapp/platform.js';
import { quietLogger } from '../../src/channels/whatsapp/socket.js';
import { silentLogger } from '../../src/util/log.js';
import { type LinkedFake, linkedFake } from '../channels/whatsapp/harness.js';
import { eventually } from '../helpers/eventually.js';

let linked: LinkedFake;
let platform: WhatsAppPlatform;
const received: IncomingMessage[] = [];
const link: PlatformLink = {
  receive: async (message) => {
    received.push(message);
  },
  failed: () => undefined,
  commands: () => [],
  log: silentLogger,
};

beforeEach(async () => {
  received.length = 0;
  linked = await linkedFake();
  const settings: WhatsAppSettings = whatsappSettingsSchema.parse(linked.settings);
  platform = new WhatsAppPlatform({
    sdk: baileys,
    settings: () => settings,
    dataDir: linked.settings.authDir,
    log: silentLogger,
  });
  await platform.connect(link);
});
afterEach(async () => {
  await platform.disconnect();
  await linked.close();
});

describe('WhatsApp: hostile senders', () => {
  it('a direct message naming another participant is never taken as that participant', async () => {
    const mallory = linked.phoneOf('4917066666666', 'Owner');
    const stanza = await mallory.stanza({ conversation: 'I am the owner' });
    stanza.attrs.participant = '4917011112222@s.whatsapp.net';
    linked.fake.deliver(stanza);
    const marker = await mallory.says('marker');
    await eventually(() => expect(received.map((m) => m.id)).toContain(marker));
    for (const message of received) expect(message.sender.id).toBe('4917066666666');
  });

  it('ignores status updates and broadcast lists', async () => {
    const alice = linked.phoneOf('4917055555555');
    linked.fake.deliver(await alice.stanza({ conversation: 'status' }, { group: 'status@broadcast' }));
    const marker = await alice.says('marker');
    await eventually(() => expect(received.map((m) => m.id)).toEqual([marker]));
  });

  it('never fetches media from an address the sender chose (SSRF), whatever the message says', async () => {
    let hits = 0;
    const internal = createServer((_req, res) => {
      hits += 1;
      res.end('secret');
    });
    await new Promise<void>((resolve) => internal.listen(0, '127.0.0.1', resolve));
    const port = (internal.address() as AddressInfo).port;
    try {
      const alice = linked.phoneOf('4917044444444');
      const urls = [
        `http://127.0.0.1:${port}/latest/meta-data`,
        'https://169.254.169.254/x',
        'https://mmg.whatsapp.net.evil.example/x',
      ];
      for (const url of urls) {
        linked.fake.deliver(
          await alice.stanza({
            imageMessage: {
              url,
              mediaKey: new Uint8Array(32),
              mimetype: 'image/jpeg',
              directPath: '/../../../etc/passwd',
            },
          }),
        );
      }
      await eventually(() => expect(received.filter((m) => m.attachments?.length)).toHaveLength(3));
      for (const message of received.filter((m) => m.attachments?.length)) {
        const attachment = message.attachments?.[0];
        await expect(attachment?.open(AbortSignal.timeout(2000))).rejects.toThrow(/not on a WhatsApp media host/);
      }
      expect(hits).toBe(0);
    } finally {
      internal.close();
    }
  });
});

describe('WhatsApp: hostile media', () => {
  const mediaDir = () => join(dirname(linked.settings.authDir), 'media', 'whatsapp');

  it('a document named with a path traversal is saved inside the media folder, under a harmless name', async () => {
    const mallory = linked.phoneOf('4917033333333');
    const payload = Buffer.from('#!/bin/sh\necho owned\n');
    for (const fileName of ['../../../../.bashrc', '..\\..\\config.json', '/etc/cron.d/x']) {
      await mallory.sendsMedia('document', payload, { mimetype: 'text/plain', fileName });
    }
    await eventually(() => expect(received).toHaveLength(3));
    const dir = mediaDir();
    for (const message of received) {
      const attachment = message.attachments?.[0];
      if (!attachment) throw new Error('no attachment');
      const path = await saveAttachment(attachment, dir, 1024 * 1024);
      expect(dirname(path)).toBe(dir);
      expect(path.slice(dir.length + 1)).not.toMatch(/\.\.|[/\\]|^\./);
      expect(readFileSync(path)).toEqual(payload);
    }
    expect(readdirSync(dir)).toHaveLength(3);
  });

  it('media declaring a size over the limit is refused before anything is downloaded', async () => {
    const mallory = linked.phoneOf('4917033333334');
    await mallory.sendsMedia('video', Buffer.from('small, but it claims 2 GB'), {
      mimetype: 'video/mp4',
      fileLength: 2 * 1024 * 1024 * 1024,
    });
    await eventually(() => expect(received).toHaveLength(1));
    const attachment = received[0]?.attachments?.[0];
    if (!attachment) throw new Error('no attachment');
    expect(attachment.size).toBe(2 * 1024 * 1024 * 1024);
    await expect(saveAttachment(attachment, mediaDir(), 20 * 1024 * 1024)).rejects.toBeInstanceOf(AttachmentTooLarge);
    expect(linked.fake.mediaRequests).toEqual([]);
  });

  it('a blob larger than its declared size is cut off at the limit and not kept', async () => {
    const mallory = linked.phoneOf('4917033333335');
    await mallory.sendsMedia('document', Buffer.alloc(64 * 1024, 7), {
      mimetype: 'application/octet-stream',
      fileName: 'big.bin',
      fileLength: 10,
    });
    await eventually(() => expect(received).toHaveLength(1));
    const attachment = received[0]?.attachments?.[0];
    if (!attachment) throw new Error('no attachment');
    await expect(saveAttachment(attachment, mediaDir(), 16 * 1024)).rejects.toBeInstanceOf(AttachmentTooLarge);
    expect(linked.fake.mediaRequests).toHaveLength(1);
    expect(readdirSync(mediaDir())).toEqual([]);
  });
});

describe('WhatsApp: secrets in logs', () => {
  it('Baileys’ frames and keys never reach the log: only warning and error lines, without their objects', () => {
    const lines: string[] = [];
    const sink = {
      debug: (m: string) => lines.push(m),
      info: (m: string) => lines.push(m),
      warn: (m: string) => lines.push(m),
      error: (m: string) => lines.push(m),
    };
    const logger = quietLogger(sink);
    const secret = { creds: { noiseKey: { private: Buffer.from('very-secret-key') } } };
    logger.trace(secret, 'frame');
    logger.debug(secret, 'frame');
    logger.info(secret, 'connected');
    logger.child({}).warn(secret, 'stream errored out');
    expect(lines).toEqual(['baileys: stream errored out']);
    expect(lines.join('\n')).not.toContain('very-secret-key');
  });
});
