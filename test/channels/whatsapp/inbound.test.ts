/**
 * Messages from phones to the linked bot, Signal-encrypted by the fake phones with libsignal and decrypted by the real
 * Baileys inside WhatsAppPlatform: sender ids, mentions, receipts, offline delivery after a reconnect, de-duplication.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as baileys from 'baileys';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { IncomingMessage, PlatformLink } from '../../../src/channels/platform.js';
import { findChannel } from '../../../src/channels/registry.js';
import { type WhatsAppSettings, whatsappSettingsSchema } from '../../../src/channels/whatsapp/index.js';
import { WhatsAppPlatform } from '../../../src/channels/whatsapp/platform.js';
import { silentLogger } from '../../../src/util/log.js';
import { eventually } from '../../helpers/eventually.js';
import { FakeWhatsApp, trustFakeRoot } from './fake-whatsapp.js';
import { Phone } from './phone.js';

let fake: FakeWhatsApp;
let untrust: () => void;
let dataDir: string;
let platform: WhatsAppPlatform;
const received: IncomingMessage[] = [];
const failures: Error[] = [];

const link: PlatformLink = {
  receive: async (message) => {
    received.push(message);
  },
  failed: (error) => failures.push(error),
  commands: () => [],
  log: silentLogger,
};

beforeEach(async () => {
  received.length = 0;
  failures.length = 0;
  fake = await FakeWhatsApp.start();
  untrust = trustFakeRoot(fake.identity);
  dataDir = mkdtempSync(join(tmpdir(), 'nb-wa-in-'));
  await findChannel('whatsapp')?.login?.(
    { webSocketUrl: fake.url },
    { name: 'whatsapp', dataDir, log: silentLogger, out: () => undefined, qr: (qr) => fake.scan(qr) },
  );
  const settings: WhatsAppSettings = whatsappSettingsSchema.parse({ webSocketUrl: fake.url });
  platform = new WhatsAppPlatform({ sdk: baileys, settings: () => settings, dataDir, log: silentLogger });
  await platform.connect(link);
});
afterEach(async () => {
  await platform.disconnect();
  untrust();
  await fake.close();
  rmSync(dataDir, { recursive: true, force: true });
});

describe('WhatsApp inbound', () => {
  it('decrypts a phone’s message and hands it over with the sender’s number; sends a read receipt', async () => {
    const alice = new Phone(fake, '4917000001', 'Alice');
    const id = await alice.says('hello bot');
    await eventually(() => expect(received).toHaveLength(1));
    expect(received[0]).toMatchObject({
      id,
      chatId: alice.jid,
      chatType: 'direct',
      text: 'hello bot',
      sender: { id: '4917000001', name: 'Alice' },
    });
    const second = await alice.says('and again');
    await eventually(() => expect(received.map((m) => m.id)).toEqual([id, second]));
    await eventually(() =>
      expect(fake.log.some((n) => n.tag === 'receipt' && n.attrs.id === id && n.attrs.type?.startsWith('read'))).toBe(
        true,
      ),
    );
    expect(fake.errors).toEqual([]);
  });

  it('answers on the phone’s session: the phone decrypts the reply', async () => {
    const alice = new Phone(fake, '4917000002', 'Alice');
    await alice.says('hi');
    await eventually(() => expect(received).toHaveLength(1));
    const id = await platform.sendText({ chatId: alice.jid }, { text: '*hello* back', markdown: '**hello** back' });
    expect(id).not.toBe('');
    await eventually(() => expect(alice.texts()).toEqual(['*hello* back']));
    expect(fake.errors).toEqual([]);
  });
});
