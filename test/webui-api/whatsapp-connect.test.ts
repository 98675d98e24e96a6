/**
 * Settings › Channels › WhatsApp › Connect: the WebUI runs the WhatsApp QR login in the gateway (the real Baileys
 * against the loopback WhatsApp) and gets each pairing code as `qr_url`; the fake phone scans it, the poll reports
 * the linked account, and the session is saved where the channel reads it.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { ServerFrame } from '../../src/channels/websocket/frames.js';
import { eventually } from '../channels/contract.js';
import { startWebUiGateway } from '../channels/websocket/gateway-helpers.js';
import { connect, type TestClient } from '../channels/websocket/helpers.js';
import { FakeWhatsApp, trustFakeRoot } from '../channels/whatsapp/fake-whatsapp.js';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function setup(): Promise<{ client: TestClient; fake: FakeWhatsApp; authDir: string }> {
  const fake = await FakeWhatsApp.start();
  cleanups.push(() => fake.close());
  // The login runs inside the gateway, which is this process: its Baileys trusts the fake's certificate root.
  cleanups.push(trustFakeRoot(fake.identity));
  const dir = mkdtempSync(join(tmpdir(), 'nb-wa-connect-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  const authDir = join(dir, 'whatsapp-auth');
  const run = await startWebUiGateway([], {}, undefined, {
    whatsapp: { enabled: false, webSocketUrl: fake.url, authDir },
  });
  cleanups.push(() => run.close());
  const client = await connect(run.port, { token: run.token, clientId: 'webui', origin: run.url });
  cleanups.push(() => client.close());
  await client.next((f) => f.event === 'ready');
  return { client, fake, authDir };
}

let requests = 0;
async function action(client: TestClient, name: string, payload: unknown) {
  const request_id = `wa${++requests}`;
  client.send({ type: 'webui_request', request_id, action: name, payload });
  return (await client.next(
    (f) => f.event === 'webui_response' && (f as { request_id?: string }).request_id === request_id,
  )) as ServerFrame & { ok: boolean; result?: Record<string, unknown> };
}

describe('WhatsApp Connect in the WebUI', () => {
  it('shows the pairing code to scan; once the phone scans it, the poll reports the linked account', async () => {
    const { client, fake, authDir } = await setup();
    const started = await action(client, 'settings.channel.connect.start', { channel: 'whatsapp' });
    expect(started.ok).toBe(true);
    expect(started.result?.status).toBe('pending');
    const session_id = String(started.result?.session_id);
    let qr = typeof started.result?.qr_url === 'string' ? started.result.qr_url : '';
    await eventually(async () => {
      if (qr) return;
      const polled = await action(client, 'settings.channel.connect.poll', { channel: 'whatsapp', session_id });
      qr = typeof polled.result?.qr_url === 'string' ? polled.result.qr_url : '';
      expect(qr).not.toBe('');
    }, 15_000);
    // A WhatsApp pairing code: the linked-devices link with the server’s ref, then the device’s keys.
    expect(qr).toMatch(/^https:\/\/wa\.me\/settings\/linked_devices#ref-[\w-]+,/);
    fake.scan(qr);
    await eventually(async () => {
      const polled = await action(client, 'settings.channel.connect.poll', { channel: 'whatsapp', session_id });
      expect(polled.result).toMatchObject({ status: 'succeeded', message: expect.stringContaining('linked') });
      expect(polled.result?.qr_url).toBeUndefined();
    }, 20_000);
    expect(existsSync(join(authDir, 'creds.json'))).toBe(true);
    expect(fake.errors).toEqual([]);
  }, 40_000);
});
