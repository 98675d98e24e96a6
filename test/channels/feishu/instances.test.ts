/**
 * Feishu through a real gateway with the WebUI on: Connect's QR round trip (scan to create a bot) saves the new app
 * into config.json and the bot starts without a restart; two bots (`channels.feishu.instances`) run side by side
 * as `feishu` and `feishu.sales`, each answering its own chats, with its own sessions, pairing and cron jobs.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { PairingStore } from '../../../src/channels/pairing.js';
import type { ServerFrame } from '../../../src/channels/websocket/frames.js';
import { eventually } from '../contract.js';
import { startWebUiGateway, type WebUiGateway } from '../websocket/gateway-helpers.js';
import { connect, type TestClient } from '../websocket/helpers.js';
import { APP, startFakeFeishu } from './fake-open-platform.js';

const OWNER = { openId: 'ou_owner', userId: 'owner' };
const SALES_APP = { id: 'cli_5a1e5a1e5a1e5a1e', secret: 'SalesAppSecret0123456789abcdef' };
const CHAT = 'oc_same_chat_id';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function fakeFeishu(app = APP) {
  const fake = await startFakeFeishu({ app });
  cleanups.push(() => fake.close());
  return fake;
}

async function gateway(feishu: Record<string, unknown>, options: { cron?: boolean } = {}): Promise<WebUiGateway> {
  const run = await startWebUiGateway([], {}, undefined, { feishu }, options);
  cleanups.push(() => run.close());
  return run;
}

async function health(run: WebUiGateway): Promise<Record<string, string>> {
  const res = await fetch(`http://127.0.0.1:${run.gateway.port}/health`);
  return ((await res.json()) as { channels: Record<string, string> }).channels;
}

let requests = 0;
async function action(client: TestClient, name: string, payload: unknown) {
  const request_id = `fs${++requests}`;
  client.send({ type: 'webui_request', request_id, action: name, payload });
  return (await client.next(
    (f) => f.event === 'webui_response' && (f as { request_id?: string }).request_id === request_id,
  )) as ServerFrame & { ok: boolean; result?: Record<string, unknown>; error?: { status: number; message: string } };
}

describe('Feishu Connect (scan to create a bot)', () => {
  it('shows the QR code, saves the new app once confirmed, and the bot answers without a restart', async () => {
    const fake = await fakeFeishu(SALES_APP);
    const run = await gateway({ enabled: false, domain: fake.url, allowFrom: [OWNER.openId] });
    const client = await connect(run.port, { token: run.token, clientId: 'webui', origin: run.url });
    cleanups.push(async () => client.close());
    await client.next((f) => f.event === 'ready');

    const started = await action(client, 'settings.channel.connect.start', { channel: 'feishu' });
    expect(started.result).toMatchObject({
      status: 'pending',
      instance_id: 'default',
      qr_url: `${fake.url}/verification?user_code=UC1`,
    });
    const session_id = String(started.result?.session_id);
    const polled = await action(client, 'settings.channel.connect.poll', { channel: 'feishu', session_id });
    expect(polled.result?.status).toBe('pending');
    expect((await health(run)).feishu).toBeUndefined();

    fake.registration.scan();
    await eventually(async () => {
      const next = await action(client, 'settings.channel.connect.poll', { channel: 'feishu', session_id });
      expect(next.result?.status).toBe('succeeded');
    }, 15_000);
    const saved = JSON.parse(readFileSync(join(run.dataDir, 'config.json'), 'utf8')).channels.feishu;
    expect(saved).toMatchObject({
      enabled: true,
      appId: SALES_APP.id,
      appSecret: SALES_APP.secret,
      identityKey: `feishu:${SALES_APP.id}`,
      domain: fake.url,
      allowFrom: [OWNER.openId],
    });
    await eventually(async () => expect((await health(run)).feishu).toBe('running'), 15_000);
    run.fake.enqueue({ text: 'Hello from the new bot.' });
    fake.userSays({ chatId: CHAT, from: OWNER, text: 'hi' });
    await eventually(() => expect(fake.shown(CHAT)).toEqual(['Hello from the new bot.']), 15_000);
  }, 60_000);

  it('mode "create" adds a second bot, feishu.assistant-<hex>, which starts beside the first', async () => {
    const first = await fakeFeishu();
    const second = await fakeFeishu(SALES_APP);
    // Upstream's shape: keys beside `instances` are shared (here the second platform's address), an entry's own win.
    const run = await gateway({
      domain: second.url,
      allowFrom: [OWNER.openId],
      instances: [{ id: 'default', enabled: true, appId: APP.id, appSecret: APP.secret, domain: first.url }],
    });
    await eventually(async () => expect((await health(run)).feishu).toBe('running'), 15_000);
    const client = await connect(run.port, { token: run.token, clientId: 'webui', origin: run.url });
    cleanups.push(async () => client.close());
    await client.next((f) => f.event === 'ready');
    const started = await action(client, 'settings.channel.connect.start', { channel: 'feishu', mode: 'create' });
    const instance = String(started.result?.instance_id);
    expect(instance).toMatch(/^assistant-[0-9a-f]{6}$/);
    expect(started.result?.qr_url).toBe(`${second.url}/verification?user_code=UC1`);
    second.registration.scan();
    await eventually(async () => {
      const next = await action(client, 'settings.channel.connect.poll', {
        channel: 'feishu',
        session_id: started.result?.session_id,
      });
      expect(next.result).toMatchObject({ status: 'succeeded', instance_id: instance });
    }, 15_000);
    const saved = JSON.parse(readFileSync(join(run.dataDir, 'config.json'), 'utf8')).channels.feishu;
    expect(saved.instances[1]).toEqual({
      id: instance,
      instanceId: instance,
      name: `nanobot ${instance}`,
      appId: SALES_APP.id,
      appSecret: SALES_APP.secret,
      identityKey: `feishu:${SALES_APP.id}`,
      enabled: true,
    });
    await eventually(
      async () => expect(await health(run)).toMatchObject({ feishu: 'running', [`feishu.${instance}`]: 'running' }),
      15_000,
    );
    run.fake.enqueue({ text: 'The new bot answers.' });
    second.userSays({ chatId: CHAT, from: OWNER, text: 'hi' });
    await eventually(() => expect(second.shown(CHAT)).toEqual(['The new bot answers.']), 15_000);
    expect(first.shown(CHAT)).toEqual([]);
  }, 60_000);
  it('cancel ends the login: no more polls, and a later confirmation saves nothing', async () => {
    const fake = await fakeFeishu(SALES_APP);
    const run = await gateway({ enabled: false, domain: fake.url });
    const client = await connect(run.port, { token: run.token, clientId: 'webui', origin: run.url });
    cleanups.push(async () => client.close());
    await client.next((f) => f.event === 'ready');
    const started = await action(client, 'settings.channel.connect.start', { channel: 'feishu' });
    const session_id = String(started.result?.session_id);
    const cancelled = await action(client, 'settings.channel.connect.cancel', { channel: 'feishu', session_id });
    expect(cancelled.result?.status).toBe('cancelled');
    const polls = () => fake.registration.requests.filter((r) => r.action === 'poll').length;
    const before = polls();
    fake.registration.scan();
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    expect(polls()).toBe(before);
    const saved = JSON.parse(readFileSync(join(run.dataDir, 'config.json'), 'utf8')).channels.feishu;
    expect(saved.appId).toBeUndefined();
  }, 30_000);
});

describe('two Feishu bots in one gateway', () => {
  it('each answers its own chats, with its own sessions, pairing and cron jobs', async () => {
    const main = await fakeFeishu();
    const sales = await fakeFeishu(SALES_APP);
    const run = await gateway(
      {
        allowFrom: [OWNER.openId],
        streaming: false,
        instances: [
          { id: 'default', enabled: true, appId: APP.id, appSecret: APP.secret, domain: main.url },
          {
            id: 'sales',
            name: 'Sales bot',
            enabled: true,
            appId: SALES_APP.id,
            appSecret: SALES_APP.secret,
            domain: sales.url,
          },
        ],
      },
      { cron: true },
    );
    await eventually(
      async () => expect(await health(run)).toMatchObject({ feishu: 'running', 'feishu.sales': 'running' }),
      15_000,
    );

    run.fake.enqueue({ text: 'Main bot here.' });
    main.userSays({ chatId: CHAT, from: OWNER, text: 'remember the word apricot' });
    await eventually(() => expect(main.shown(CHAT)).toEqual(['Main bot here.']), 15_000);
    run.fake.enqueue({ text: 'Sales bot here.' });
    sales.userSays({ chatId: CHAT, from: OWNER, text: 'which word?' });
    await eventually(() => expect(sales.shown(CHAT)).toEqual(['Sales bot here.']), 15_000);
    expect(main.shown(CHAT)).toEqual(['Main bot here.']);
    // The same chat id on two bots is two conversations.
    expect(JSON.stringify(run.fake.requests[1]?.body.messages)).not.toContain('apricot');
    const keys = readdirSync(run.gateway.agent().sessions.dir)
      .filter((file) => file.endsWith('.jsonl'))
      .map((file) => Buffer.from(file.slice(0, -'.jsonl'.length), 'base64url').toString('utf8'));
    expect(keys).toEqual(expect.arrayContaining([`feishu:${CHAT}`, `feishu.sales:${CHAT}`]));

    // A stranger pairs with the bot they wrote to.
    sales.userSays({ chatId: 'oc_stranger', from: { openId: 'ou_stranger' }, text: 'hello?' });
    await eventually(() => expect(sales.shown('oc_stranger')[0]).toMatch(/pairing code/i), 15_000);
    const pending = new PairingStore({ dir: join(run.dataDir, 'pairing') }).listPending();
    expect(pending.map((p) => [p.channel, p.senderId])).toEqual([['feishu.sales', 'ou_stranger']]);

    // The WebUI's Feishu form edits the default bot, inside `instances`; the other bot keeps running untouched.
    const client = await connect(run.port, { token: run.token, clientId: 'webui', origin: run.url });
    cleanups.push(async () => client.close());
    await client.next((f) => f.event === 'ready');
    const form = await action(client, 'settings.channel.configure', {
      name: 'feishu',
      values: { 'channels.feishu.groupPolicy': 'open' },
    });
    expect(form.ok, JSON.stringify(form.error)).toBe(true);
    const section = JSON.parse(readFileSync(join(run.dataDir, 'config.json'), 'utf8')).channels.feishu;
    expect(section.instances[0]).toMatchObject({ id: 'default', groupPolicy: 'open', appId: APP.id });
    expect(section.instances[1].groupPolicy).toBeUndefined();
    expect(section.groupPolicy).toBeUndefined();

    // A reminder set in the sales chat goes out through the sales bot.
    const at = new Date(Date.now() + 1_500).toISOString();
    run.fake.enqueue(
      { toolCalls: [{ name: 'cron', arguments: { action: 'add', message: 'Standup now!', at } }] },
      { text: 'Reminder set.' },
    );
    sales.userSays({ chatId: CHAT, from: OWNER, text: 'remind me of the standup' });
    await eventually(() => expect(sales.shown(CHAT)).toContain('Standup now!'), 20_000);
    expect(main.shown(CHAT)).toEqual(['Main bot here.']);
  }, 90_000);
});
