/** QR login against the loopback WhatsApp: the real Baileys handshakes, shows codes, pairs, restarts and logs in. */
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { findChannel } from '../../../src/channels/registry.js';
import { silentLogger } from '../../../src/util/log.js';
import { FakeWhatsApp, trustFakeRoot } from './fake-whatsapp.js';

let fake: FakeWhatsApp;
let untrust: () => void;
let dataDir: string;

beforeEach(async () => {
  fake = await FakeWhatsApp.start();
  untrust = trustFakeRoot(fake.identity);
  dataDir = mkdtempSync(join(tmpdir(), 'nb-wa-login-'));
});
afterEach(async () => {
  untrust();
  await fake.close();
  rmSync(dataDir, { recursive: true, force: true });
});

const whatsapp = () => {
  const channel = findChannel('whatsapp');
  if (!channel?.login) throw new Error('no whatsapp login');
  return channel as Required<Pick<typeof channel, 'login'>> & typeof channel;
};

function login(onQr: (qr: string) => void, signal?: AbortSignal) {
  const out: string[] = [];
  const done = whatsapp().login(
    { webSocketUrl: fake.url },
    { name: 'whatsapp', dataDir, log: silentLogger, out: (t) => out.push(t), qr: onQr, ...(signal ? { signal } : {}) },
  );
  return { done, out };
}

describe('WhatsApp QR login', () => {
  it('shows a code, the phone scans it, and the linked session is saved (0600 files, 0700 folder)', async () => {
    const codes: string[] = [];
    const { done, out } = login((qr) => {
      codes.push(qr);
      fake.scan(qr);
    });
    await done;
    expect(codes).toHaveLength(1);
    expect(codes[0]).toMatch(/^https:\/\/wa\.me\/settings\/linked_devices#ref-/);
    expect(out.join('')).toContain(`linked as +${fake.phone}`);
    const folder = join(dataDir, 'whatsapp-auth');
    const creds = JSON.parse(readFileSync(join(folder, 'creds.json'), 'utf8')) as { me: { id: string; lid: string } };
    expect(creds.me.id).toBe(`${fake.phone}:${fake.device}@s.whatsapp.net`);
    expect(statSync(folder).mode & 0o777).toBe(0o700);
    expect(statSync(join(folder, 'creds.json')).mode & 0o777).toBe(0o600);
    expect(fake.bundle?.preKeys.length).toBeGreaterThan(0);
    expect(fake.errors).toEqual([]);

    // Logging in again reuses the session: no code this time.
    const again = login(() => expect.fail('no QR code expected for a linked session'));
    await again.done;
    expect(again.out.join('')).toContain('linked');
  });

  it('a session logged out on the phone is cleared and a new code is shown', async () => {
    await login((qr) => fake.scan(qr)).done;
    fake.loggedOut = true;
    const codes: string[] = [];
    const { done, out } = login((qr) => {
      codes.push(qr);
      fake.loggedOut = false;
      fake.scan(qr);
    });
    await done;
    expect(out.join('')).toContain('logged out on the phone');
    expect(codes).toHaveLength(1);
  });

  it('stops when the person gives up, and saves no session', async () => {
    const controller = new AbortController();
    const { done } = login(() => controller.abort(), controller.signal);
    await expect(done).rejects.toThrow(/cancelled/);
    expect(existsSync(join(dataDir, 'whatsapp-auth', 'creds.json'))).toBe(false);
  });
});
