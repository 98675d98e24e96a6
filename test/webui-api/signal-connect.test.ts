/**
 * Settings › Channels › Signal › Connect: the WebUI runs `nanobot channels login signal` in the gateway (a fake
 * `signal-cli` executable links the device) and gets the sgnl://linkdevice address to draw as a QR code; the poll
 * reports the link, and cancel stops `signal-cli link`.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { ServerFrame } from '../../src/channels/websocket/frames.js';
import { eventually } from '../channels/contract.js';
import { fakeSignalCliBin } from '../channels/signal/fake-cli.js';
import { startWebUiGateway } from '../channels/websocket/gateway-helpers.js';
import { connect, type TestClient } from '../channels/websocket/helpers.js';

const NUMBER = '+4915112345678';
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function setup(mode?: 'link-timeout'): Promise<{ client: TestClient; cli: ReturnType<typeof fakeSignalCliBin> }> {
  const cli = fakeSignalCliBin({ linkNumber: NUMBER, ...(mode ? { mode } : {}) });
  // The login spawns signal-cli from the gateway's process: the fake reads its settings from the environment.
  const saved = { ...process.env };
  Object.assign(process.env, cli.env);
  cleanups.push(() => {
    for (const key of Object.keys(cli.env)) delete process.env[key];
    Object.assign(process.env, saved);
  });
  const run = await startWebUiGateway([], {}, undefined, {
    signal: { enabled: false, phoneNumber: NUMBER, cliPath: cli.path },
  });
  cleanups.push(() => run.close());
  const client = await connect(run.port, { token: run.token, clientId: 'webui', origin: run.url });
  cleanups.push(() => client.close());
  await client.next((f) => f.event === 'ready');
  return { client, cli };
}

let requests = 0;
async function action(client: TestClient, name: string, payload: unknown) {
  const request_id = `sg${++requests}`;
  client.send({ type: 'webui_request', request_id, action: name, payload });
  return (await client.next(
    (f) => f.event === 'webui_response' && (f as { request_id?: string }).request_id === request_id,
  )) as ServerFrame & { ok: boolean; result?: Record<string, unknown> };
}

describe('Signal Connect in the WebUI', () => {
  it('shows the link address as the code to scan, then reports the linked device', async () => {
    const { client } = await setup();
    const started = await action(client, 'settings.channel.connect.start', { channel: 'signal' });
    expect(started.result).toMatchObject({
      status: 'pending',
      qr_url: 'sgnl://linkdevice?uuid=Zm9vYmFy&pub_key=QmFzZTY0S2V5',
    });
    const session_id = String(started.result?.session_id);
    await eventually(async () => {
      const polled = await action(client, 'settings.channel.connect.poll', { channel: 'signal', session_id });
      expect(polled.result).toMatchObject({ status: 'succeeded', message: expect.stringContaining(NUMBER) });
      expect(polled.result?.qr_url).toBeUndefined();
    });
  }, 30_000);

  it('a link that fails says why; an unknown session is refused', async () => {
    const { client } = await setup('link-timeout');
    const started = await action(client, 'settings.channel.connect.start', { channel: 'signal' });
    const session_id = String(started.result?.session_id);
    await eventually(async () => {
      const polled = await action(client, 'settings.channel.connect.poll', { channel: 'signal', session_id });
      expect(polled.result).toMatchObject({ status: 'failed', message: expect.stringContaining('timed out') });
    });
    const unknown = await action(client, 'settings.channel.connect.poll', { channel: 'signal', session_id: 'nope' });
    expect(unknown.ok).toBe(false);
  }, 30_000);
});
