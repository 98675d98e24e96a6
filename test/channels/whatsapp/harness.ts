/** A fake WhatsApp with the bot's device already linked (through the real QR login), for the gateway tests. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { findChannel } from '../../../src/channels/registry.js';
import { silentLogger } from '../../../src/util/log.js';
import { FakeWhatsApp, trustFakeRoot } from './fake-whatsapp.js';
import { Phone } from './phone.js';

export interface LinkedFake {
  fake: FakeWhatsApp;
  /** `channels.whatsapp` keys that point the channel at the fake and its linked session. */
  settings: { webSocketUrl: string; authDir: string };
  /** The phone of a (contract) user id: a stable number per id. */
  phoneOf(userId: string, name?: string): Phone;
  close(): Promise<void>;
}

/** A user's phone number: the contract's ids are digits, used as the number itself (so chat ids match). */
export const numberOf = (userId: string) => userId.replace(/\D/g, '');

export async function linkedFake(): Promise<LinkedFake> {
  const fake = await FakeWhatsApp.start();
  const untrust = trustFakeRoot(fake.identity);
  const home = mkdtempSync(join(tmpdir(), 'nb-wa-linked-'));
  const authDir = join(home, 'whatsapp-auth');
  await findChannel('whatsapp')?.login?.(
    { webSocketUrl: fake.url, authDir },
    { name: 'whatsapp', dataDir: home, log: silentLogger, out: () => undefined, qr: (qr) => fake.scan(qr) },
  );
  const phones = new Map<string, Phone>();
  return {
    fake,
    settings: { webSocketUrl: fake.url, authDir },
    phoneOf(userId, name) {
      const number = numberOf(userId);
      let phone = phones.get(number);
      if (!phone) {
        phone = new Phone(fake, number, name ?? `User ${userId}`);
        phones.set(number, phone);
      }
      return phone;
    },
    async close() {
      await fake.close();
      untrust();
      rmSync(home, { recursive: true, force: true });
    },
  };
}

/** The text a WhatsApp user reads: *bold*, _italic_, ~strike~ and code markers removed. */
export function visibleText(text: string): string {
  return text
    .replace(/```\n?/g, '')
    .replace(/`([^`\n]*)`/g, '$1')
    .replace(/\*([^*\n]+)\*/g, '$1')
    .replace(/(^|\W)_([^_\n]+)_(?=\W|$)/g, '$1$2')
    .replace(/~([^~\n]+)~/g, '$1');
}

/** WhatsApp's own limit on a text message. */
export function assertWhatsAppText(text: string): void {
  if (text.length === 0) throw new Error('empty message');
  if (text.length > 65_536) throw new Error(`too long for WhatsApp: ${text.length}`);
}
