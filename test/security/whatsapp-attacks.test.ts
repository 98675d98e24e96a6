/**
 * A hostile sender or server against the WhatsApp channel (real Baileys, loopback WhatsApp): a sender naming someone
 * else, status/broadcast stanzas, media URLs aimed at the gateway's own network, key material in Baileys' log.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import * as baileys from 'baileys';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
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
