/**
 * Settings › Channels › WeChat › Connect: the WebUI runs the same QR login as `nanobot channels login weixin`, in the
 * gateway, over the `webui_request` actions (start → pending with the code to draw → poll → succeeded), against the
 * fake iLink server; cancelling ends the login (no more status polls).
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { ServerFrame } from '../../src/channels/websocket/frames.js';
import { eventually } from '../channels/contract.js';
import { startWebUiGateway } from '../channels/websocket/gateway-helpers.js';
import { connect, type TestClient } from '../channels/websocket/helpers.js';
import { type FakeIlink, startFakeIlink } from '../channels/weixin/fake-ilink.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function setup(): Promise<{ client: TestClient; ilink: FakeIlink; dataDir: string }> {
  const ilink = await startFakeIlink({ login: 'manual' });
  cleanups.push(() => ilink.close());
  const run = await startWebUiGateway([], {}, undefined, {
    weixin: { enabled: false, baseUrl: ilink.url, cdnBaseUrl: ilink.cdnUrl },
  });
  cleanups.push(() => run.close());
  const client = await connect(run.port, { token: run.token, clientId: 'webui', origin: run.url });
  cleanups.push(() => client.close());
  await client.next((f) => f.event === 'ready');
  return { client, ilink, dataDir: run.dataDir };
}

let requests = 0;
async function action(client: TestClient, name: string, payload: unknown) {
  const request_id = `wx${++requests}`;
  client.send({ type: 'webui_request', request_id, action: name, payload });
  const frame = (await client.next(
    (f) => f.event === 'webui_response' && (f as { request_id?: string }).request_id === request_id,
  )) as ServerFrame & { ok: boolean; result?: Record<string, unknown>; error?: { status: number; message: string } };
  return frame;
}

describe('WeChat Connect in the WebUI', () => {
  it('shows the QR code, and once scanned and confirmed in WeChat saves the login', async () => {
    const { client, ilink, dataDir } = await setup();
    const started = await action(client, 'settings.channel.connect.start', { channel: 'weixin' });
    expect(started.result).toMatchObject({
      status: 'pending',
      qr_url: expect.stringContaining('liteapp.weixin.qq.com'),
    });
    const session_id = String(started.result?.session_id);
    ilink.scan();
    await eventually(async () => {
      const polled = await action(client, 'settings.channel.connect.poll', { channel: 'weixin', session_id });
      expect(polled.result?.message).toMatch(/Scanned/);
    });
    ilink.confirm();
    await eventually(async () => {
      const polled = await action(client, 'settings.channel.connect.poll', { channel: 'weixin', session_id });
      expect(polled.result?.status).toBe('succeeded');
    });
    const file = join(dataDir, 'weixin', 'account.json');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(JSON.parse(readFileSync(file, 'utf8')).token).toBe('bot-token-login-1');
  }, 30_000);

  it('cancel ends the login: WeChat is no longer polled and nothing is saved', async () => {
    const { client, ilink, dataDir } = await setup();
    const started = await action(client, 'settings.channel.connect.start', { channel: 'weixin' });
    const session_id = String(started.result?.session_id);
    const cancelled = await action(client, 'settings.channel.connect.cancel', { channel: 'weixin', session_id });
    expect(cancelled.result?.status).toBe('cancelled');
    await new Promise((resolve) => setTimeout(resolve, 300));
    const polls = ilink.calls.filter((c) => c.path.includes('get_qrcode_status')).length;
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(ilink.calls.filter((c) => c.path.includes('get_qrcode_status')).length).toBe(polls);
    ilink.confirm();
    expect(existsSync(join(dataDir, 'weixin', 'account.json'))).toBe(false);
  }, 30_000);
});
