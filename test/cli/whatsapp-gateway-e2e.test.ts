/**
 * The built `nanobot` with the WhatsApp channel against the loopback WhatsApp Web: `channels login whatsapp` prints a
 * QR code the fake phone scans, then `gateway` (loading Baileys on demand from the bundle) answers the owner's
 * Signal-encrypted message through the fake LLM, and again after the connection drops.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { eventually } from '../channels/contract.js';
import { FakeWhatsApp } from '../channels/whatsapp/fake-whatsapp.js';
import { Phone } from '../channels/whatsapp/phone.js';
import { type FakeLLM, startFakeLLM } from '../helpers/fake-llm.js';
import { cleanupsAfterEach, homeWithChannel, spawnGateway, withOutput } from './channel-e2e.js';
import { spawnCli } from './cli-helpers.js';

const OWNER = '4917033334444';
const PRELOAD = ['--import', join(import.meta.dirname, 'whatsapp-trust-fake-root.mjs')];

const cleanup = cleanupsAfterEach();

const configured = (fake: FakeWhatsApp, llm: FakeLLM): Promise<string> =>
  homeWithChannel('whatsapp', llm, { enabled: true, webSocketUrl: fake.url, allowFrom: [`+${OWNER}`] });

describe('nanobot channels login whatsapp, then nanobot gateway', () => {
  it('links by QR, answers the owner, and answers again after a dropped connection', async () => {
    const fake = await FakeWhatsApp.start();
    const llm = await startFakeLLM();
    cleanup(
      () => fake.close(),
      () => llm.close(),
    );
    const home = await configured(fake, llm);
    const env = { WA_FAKE_ROOT: Buffer.from(fake.identity.root.public).toString('hex') };

    const login = spawnCli(['channels', 'login', 'whatsapp'], home, { env, nodeArgs: PRELOAD });
    cleanup(() => login.child.kill('SIGTERM'));
    let qr = '';
    await eventually(() => {
      const match = /https:\/\/wa\.me\/settings\/linked_devices#\S+/.exec(login.output());
      expect(match, login.output()).not.toBeNull();
      qr = match?.[0] ?? '';
    }, 30_000);
    fake.scan(qr);
    expect(await login.exited, login.output()).toBe(0);
    expect(login.output()).toContain('WhatsApp is linked');

    const gateway = spawnGateway(home, cleanup, { env, nodeArgs: PRELOAD });
    await eventually(() => expect(fake.ready.size).toBe(1), 30_000).catch(withOutput(gateway));
    llm.enqueue({ text: 'Hello from the built gateway.' }, { text: 'Back again.' });
    const owner = new Phone(fake, OWNER, 'Owner');
    await owner.says('hi');
    await eventually(() => expect(owner.texts()).toEqual(['Hello from the built gateway.']), 30_000);

    fake.drop();
    await owner.says('still there?');
    fake.restore();
    await eventually(
      () => expect(owner.texts()).toEqual(['Hello from the built gateway.', 'Back again.']),
      60_000,
    ).catch(withOutput(gateway));
  }, 150_000);
});
