/**
 * Settings › Channels and the pairing queue as nanobot's WebUI drives them (webui/src/lib/api.ts:
 * fetchNanobotFeatures, enableNanobotFeature, validateChannel, configureChannel, startChannelConnect,
 * fetchPairingRequests, runPairingAction), against a real gateway with the WebSocket channel, the fake LLM and a
 * loopback fake of the Telegram Bot API: configure and enable Telegram, see it running, a stranger's pairing code
 * approved from the WebUI and their next message answered, then Telegram switched off again.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { CHANNEL_DEFINITIONS } from '../../src/channels/registry.js';
import type { ServerFrame } from '../../src/channels/websocket/frames.js';
import { eventually } from '../channels/contract.js';
import { type FakeBotApi, startFakeBotApi } from '../channels/telegram/fake-bot-api.js';
import { startWebUiGateway, type WebUiGateway } from '../channels/websocket/gateway-helpers.js';
import { connect, type TestClient } from '../channels/websocket/helpers.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

interface Setup {
  run: WebUiGateway;
  api: FakeBotApi;
  client: TestClient;
  configPath: string;
}

async function setup(telegram: Record<string, unknown> = {}): Promise<Setup> {
  const api = await startFakeBotApi();
  cleanups.push(() => api.close());
  const run = await startWebUiGateway([{ text: 'Hello, new friend.' }], {}, undefined, {
    telegram: { enabled: false, apiBase: api.url, pollTimeout: 1, streamEditInterval: 0.05, ...telegram },
  });
  cleanups.push(() => run.close());
  const client = await connect(run.port, { token: run.token, clientId: 'webui', origin: run.url });
  cleanups.push(() => client.close());
  await client.next((f) => f.event === 'ready');
  return { run, api, client, configPath: join(run.dataDir, 'config.json') };
}

let requests = 0;
async function mutation(client: TestClient, action: string, payload: unknown) {
  const request_id = `r${++requests}`;
  client.send({ type: 'webui_request', request_id, action, payload });
  const frame = (await client.next(
    (f) => f.event === 'webui_response' && (f as { request_id?: string }).request_id === request_id,
  )) as ServerFrame & { ok: boolean; result?: Record<string, unknown>; error?: { status: number; message: string } };
  return frame;
}

async function get(run: WebUiGateway, path: string) {
  const res = await fetch(`${run.url}${path}`, { headers: { authorization: `Bearer ${run.token}` } });
  return { status: res.status, text: await res.text() };
}

async function features(run: WebUiGateway) {
  const { status, text } = await get(run, '/api/settings/nanobot-features');
  expect(status).toBe(200);
  return JSON.parse(text) as { features: Record<string, unknown>[]; enabled_count: number };
}

const feature = async (run: WebUiGateway, name: string) =>
  (await features(run)).features.find((f) => f.name === name) as Record<string, unknown>;

const config = (path: string) => JSON.parse(readFileSync(path, 'utf8'));

describe('Settings › Channels', () => {
  it('lists every channel of this build with its setup contract, state and the gateway’s live status', async () => {
    const { run } = await setup({ token: '4242:TEST-TOKEN', allowFrom: ['@owner'] });
    const payload = await features(run);
    expect(payload.features.map((f) => f.name)).toEqual(CHANNEL_DEFINITIONS.map((d) => d.name).sort());
    expect(payload.enabled_count).toBe(1);
    const websocket = payload.features.find((f) => f.name === 'websocket');
    expect(websocket).toMatchObject({
      type: 'channel',
      enabled: true,
      running: true,
      runtime_status: 'running',
      status: 'enabled',
      capabilities: ['always_enabled'],
      installed: true,
    });
    const telegram = payload.features.find((f) => f.name === 'telegram');
    expect(telegram).toMatchObject({
      display_name: 'Telegram',
      enabled: false,
      running: false,
      runtime_status: 'stopped',
      configured: true,
      installed: true,
      config_values: { 'channels.telegram.allowFrom': '@owner' },
      setup: { official_url: 'https://t.me/BotFather' },
    });
    // The token is saved: its key is listed, its value never sent.
    expect(telegram?.configured_fields).toContain('channels.telegram.token');
    expect(JSON.stringify(payload)).not.toContain('TEST-TOKEN');
    const fields = (telegram?.setup as { fields: Record<string, unknown>[] } | undefined)?.fields ?? [];
    expect(fields[0]).toMatchObject({
      key: 'channels.telegram.token',
      field: 'token',
      kind: 'secret',
      choices: [],
      required: true,
    });
    expect(fields.find((f) => f.field === 'groupPolicy')).toMatchObject({
      kind: 'enum',
      choices: ['allowlist', 'mention', 'open'],
      default_value: 'mention',
    });
    expect(typeof fields[0]?.help).toBe('string');
  });

  it('validates a form against the Bot API the config names, without saving it', async () => {
    const { run, client, configPath } = await setup();
    const before = readFileSync(configPath, 'utf8');
    const empty = await mutation(client, 'settings.channel.validate', { name: 'telegram', values: {} });
    expect(empty.result).toMatchObject({ status: 'needs_setup', missing_fields: ['token'], can_enable: false });

    const good = await mutation(client, 'settings.channel.validate', {
      name: 'telegram',
      values: { 'channels.telegram.token': '4242:TEST-TOKEN' },
    });
    expect(good.result).toMatchObject({
      name: 'telegram',
      status: 'connected',
      identity: { name: 'nano_test_bot', account: '4242' },
      can_enable: true,
      missing_fields: [],
    });
    const wrong = await mutation(client, 'settings.channel.validate', {
      name: 'telegram',
      values: { token: '4242:WRONG-TOKEN' },
    });
    expect(wrong.result).toMatchObject({ status: 'invalid', can_enable: false });
    expect(JSON.stringify(wrong.result)).not.toContain('WRONG-TOKEN');
    expect(readFileSync(configPath, 'utf8')).toBe(before);
    expect(run).toBeDefined();
  });

  it('configures and enables Telegram, which starts without a restart; a stranger approved from the WebUI is answered', async () => {
    const { run, api, client, configPath } = await setup();
    const saved = await mutation(client, 'settings.channel.configure', {
      name: 'telegram',
      values: { 'channels.telegram.token': '4242:TEST-TOKEN', 'channels.telegram.allowFrom': '@owner_user' },
      enable: true,
    });
    expect(saved.ok).toBe(true);
    expect(saved.result).toMatchObject({
      name: 'telegram',
      saved: true,
      saved_keys: ['channels.telegram.token', 'channels.telegram.allowFrom'],
    });
    expect(JSON.stringify(saved.result)).not.toContain('TEST-TOKEN');
    // What the CLI would write: camelCase keys, the list as a list.
    expect(config(configPath).channels.telegram).toMatchObject({
      enabled: true,
      token: '4242:TEST-TOKEN',
      allowFrom: ['@owner_user'],
      apiBase: api.url,
    });
    await eventually(async () => expect(await feature(run, 'telegram')).toMatchObject({ running: true }), 15_000);

    // A stranger writes: they get a pairing code, which the WebUI lists and approves.
    api.userSays({ chatId: 77, from: { id: 77, username: 'stranger' }, text: 'hi there' });
    await eventually(() => expect(api.messagesIn(77).length).toBeGreaterThan(0), 15_000);
    const code = /([A-Z2-9]{4}-[A-Z2-9]{4})/.exec(api.messagesIn(77)[0]?.text ?? '')?.[1];
    expect(code).toBeDefined();
    const pending = JSON.parse((await get(run, '/api/settings/pairing')).text);
    expect(pending.requests).toEqual([
      expect.objectContaining({ code, channel: 'telegram', sender_id: '77', expires_in_seconds: expect.any(Number) }),
    ]);
    const approved = await mutation(client, 'settings.pairing.approve', { code: code?.toLowerCase() });
    expect(approved.result).toMatchObject({
      requests: [],
      approved: [expect.objectContaining({ channel: 'telegram', sender_id: '77' })],
      last_action: { ok: true, action: 'approve', channel: 'telegram', sender_id: '77', code },
    });
    await eventually(
      () => expect(api.messagesIn(77).map((m) => m.text)).toContain('You are approved: you can talk to the agent now.'),
      15_000,
    );
    api.userSays({ chatId: 77, from: { id: 77, username: 'stranger' }, text: 'now may I?' });
    await eventually(
      () => expect(api.messagesIn(77).some((m) => m.text.includes('Hello, new friend.'))).toBe(true),
      15_000,
    );
    expect(JSON.stringify(run.fake.requests.at(-1)?.body)).toContain('now may I?');

    // Off again: the reload stops it.
    const off = await mutation(client, 'settings.feature.disable', { name: 'telegram' });
    expect(off.result).toMatchObject({ last_action: { ok: true, enabled: false } });
    expect(config(configPath).channels.telegram.enabled).toBe(false);
    await eventually(
      async () => expect(await feature(run, 'telegram')).toMatchObject({ running: false, runtime_status: 'stopped' }),
      10_000,
    );
  }, 60_000);

  it('enables a configured channel with settings.feature.enable, and refuses one that cannot start', async () => {
    const { run, client, configPath } = await setup();
    const refused = await mutation(client, 'settings.feature.enable', { name: 'telegram' });
    expect(refused.error).toMatchObject({ status: 400 });
    expect(refused.error?.message).toMatch(/channels\.telegram\.token/);
    expect(config(configPath).channels.telegram.enabled).toBe(false);

    await mutation(client, 'settings.channel.configure', { name: 'telegram', values: { token: '4242:TEST-TOKEN' } });
    const on = await mutation(client, 'settings.feature.enable', { name: 'telegram' });
    expect(on.result).toMatchObject({ requires_restart: false, last_action: { ok: true, enabled: true } });
    await eventually(async () => expect(await feature(run, 'telegram')).toMatchObject({ running: true }), 15_000);
  }, 30_000);

  it('answers what nanobot answers for what it cannot do here', async () => {
    const { client } = await setup();
    const websocketOff = await mutation(client, 'settings.feature.disable', { name: 'websocket' });
    expect(websocketOff.error?.status).toBe(400);
    expect((await mutation(client, 'settings.feature.enable', { name: 'icq' })).error?.status).toBe(404);
    expect((await mutation(client, 'settings.feature.enable', {})).error).toMatchObject({ status: 400 });
    const other = await mutation(client, 'settings.feature.enable', { name: 'telegram', instance_id: 'second' });
    expect(other.error?.status).toBe(400);
    // Feishu's QR login takes upstream's instance ids, never a path; a one-bot channel takes only `default`.
    const tricky = await mutation(client, 'settings.channel.connect.start', { channel: 'feishu', instance_id: '../x' });
    expect(tricky.error?.status).toBe(400);
    const second = await mutation(client, 'settings.channel.connect.start', { channel: 'weixin', instance_id: 'two' });
    expect(second.error?.status).toBe(400);
    expect((await mutation(client, 'settings.channel.connect.start', { channel: 'telegram' })).error?.status).toBe(404);
    expect(
      (await mutation(client, 'settings.channel.connect.poll', { channel: 'telegram', session_id: 'x' })).error?.status,
    ).toBe(404);
    expect((await mutation(client, 'settings.channel.connect.cancel', { channel: '../x' })).error?.status).toBe(400);
    expect((await mutation(client, 'settings.pairing.approve', { code: 'ABCD-EFGH' })).error?.status).toBe(404);
    expect((await mutation(client, 'settings.pairing.deny', {})).error).toMatchObject({ status: 400 });
  });
});
