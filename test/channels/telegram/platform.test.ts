/** The Telegram adapter on its own (no agent): streaming edits, the polling watchdog, webhook mode, buttons. */
import { mkdtempSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { MessageBus } from '../../../src/bus/message-bus.js';
import type { InboundMessage } from '../../../src/bus/types.js';
import type { Channel } from '../../../src/channels/channel.js';
import { PairingStore } from '../../../src/channels/pairing.js';
import type { IncomingMessage, PlatformLink } from '../../../src/channels/platform.js';
import { telegramChannel, telegramSettingsSchema } from '../../../src/channels/telegram/index.js';
import { TelegramPlatform } from '../../../src/channels/telegram/platform.js';
import { silentLogger } from '../../../src/util/log.js';
import { eventually } from '../contract.js';
import { type FakeBotApi, startFakeBotApi } from './fake-bot-api.js';
import { visibleText } from './telegram-html.js';

const cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step();
});

async function fakeApi(): Promise<FakeBotApi> {
  const api = await startFakeBotApi();
  cleanup.push(() => api.close());
  return api;
}

async function channelOn(api: FakeBotApi, settings: Record<string, unknown> = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'nb-tg-'));
  const block = {
    token: api.token,
    apiBase: api.url,
    pollTimeout: 1,
    allowFrom: ['*'],
    streamEditInterval: 0.05,
    ...settings,
  };
  const channel = await telegramChannel.create({
    block: () => block,
    switches: () => ({ sendProgress: true, sendToolHints: true, showReasoning: true }),
    pairing: new PairingStore({ dir: join(dir, 'pairing') }),
    dataDir: dir,
    log: silentLogger,
    commands: () => [{ name: 'help', description: 'show help' }],
  });
  const bus = new MessageBus();
  const inbound: InboundMessage[] = [];
  await channel.start(bus);
  cleanup.push(() => channel.stop());
  void (async () => {
    for (;;) inbound.push(await bus.consumeInbound());
  })();
  return { channel, inbound };
}

const send = (channel: Channel, content: string, metadata: Record<string, unknown> = {}, buttons?: string[][]) =>
  channel.send({ channel: 'telegram', chatId: '42', content, metadata, ...(buttons ? { buttons } : {}) });

describe('telegram adapter', () => {
  it('streams a reply by editing one message, then writes the final HTML into it', async () => {
    const api = await fakeApi();
    const { channel } = await channelOn(api);
    const stream = { _stream_delta: true, _stream_id: 't1' };
    await send(channel, 'Counting: ', stream);
    await eventually(() => expect(api.messagesIn(42)).toHaveLength(1));
    // Each delta is waited for until the edit shows it (a gate on the fake's state, not a guessed delay).
    for (const [n, shown] of [
      ['one, ', 'one'],
      ['two, ', 'two'],
      ['**three**', 'three'],
    ] as const) {
      await send(channel, n, stream);
      await eventually(() => expect(JSON.stringify(api.messagesIn(42)[0])).toContain(shown));
    }
    await send(channel, 'Counting: one, two, **three**', { _stream_id: 't1' });
    const [message] = api.messagesIn(42);
    expect(api.messagesIn(42)).toHaveLength(1);
    expect(message?.text).toBe('Counting: one, two, <b>three</b>');
    expect(message?.edits).toBeGreaterThanOrEqual(2);
    expect(api.callsOf('sendMessage')).toHaveLength(1);
  });

  it('attaches buttons as an inline keyboard, and a press comes back as the label', async () => {
    const api = await fakeApi();
    const { channel, inbound } = await channelOn(api);
    await send(channel, 'Deploy now?', {}, [['Yes', 'No']]);
    expect(api.messagesIn(42)[0]?.replyMarkup).toEqual({
      inline_keyboard: [
        [
          { text: 'Yes', callback_data: 'Yes' },
          { text: 'No', callback_data: 'No' },
        ],
      ],
    });
    api.pushUpdate({
      callback_query: {
        id: 'cb1',
        from: { id: 42, is_bot: false, first_name: 'U' },
        chat_instance: 'x',
        data: 'Yes',
        message: { message_id: 1, date: 0, chat: { id: 42, type: 'private' } },
      },
    });
    await eventually(() => expect(inbound.map((m) => m.content)).toEqual(['Yes']));
    expect(api.callsOf('answerCallbackQuery')).toHaveLength(1);
  });

  it('falls back to plain text when Telegram refuses the HTML', async () => {
    const api = await fakeApi();
    const { channel } = await channelOn(api);
    api.failNext('sendMessage', { status: 400, description: "Bad Request: can't parse entities: unexpected end tag" });
    await send(channel, 'Hello **world**');
    expect(api.messagesIn(42).map((m) => [m.text, m.parseMode])).toEqual([['Hello world', undefined]]);
  });

  it('waits out a short flood limit (429 retry_after) instead of failing', async () => {
    const api = await fakeApi();
    const { channel } = await channelOn(api);
    api.failNext('sendMessage', { status: 429, description: 'Too Many Requests: retry after 1', retryAfter: 1 });
    await send(channel, 'patience');
    expect(api.messagesIn(42).map((m) => visibleText(m.text))).toEqual(['patience']);
  });
});

describe('telegram long polling', () => {
  it('treats a getUpdates call that never answers as a stalled connection', async () => {
    const api = await fakeApi();
    const settings = telegramSettingsSchema.parse({ token: api.token, apiBase: api.url, pollTimeout: 1 });
    const platform = new TelegramPlatform({
      grammy: await import('grammy'),
      settings: () => settings,
      log: silentLogger,
      watchdogGraceMs: 200,
    });
    const failures: string[] = [];
    const link: PlatformLink = {
      receive: async () => {},
      failed: (error) => failures.push(error.message),
      commands: () => [],
      log: silentLogger,
    };
    api.stallUpdates(true);
    await platform.connect(link);
    cleanup.push(() => platform.disconnect());
    await eventually(
      () => expect(failures).toEqual(['long polling stalled: getUpdates gave no answer in 1.2 s']),
      4_000,
    );
  });

  it('keeps its place across reconnects: updates are neither skipped nor fetched twice', async () => {
    const api = await fakeApi();
    const settings = telegramSettingsSchema.parse({ token: api.token, apiBase: api.url, pollTimeout: 1 });
    const platform = new TelegramPlatform({
      grammy: await import('grammy'),
      settings: () => settings,
      log: silentLogger,
    });
    const received: IncomingMessage[] = [];
    const link: PlatformLink = {
      receive: async (message) => {
        received.push(message);
      },
      failed: () => {},
      commands: () => [],
      log: silentLogger,
    };
    await platform.connect(link);
    api.userSays({ chatId: 1, text: 'one' });
    await eventually(() => expect(received.map((m) => m.text)).toEqual(['one']));
    await platform.disconnect();
    api.userSays({ chatId: 1, text: 'two' });
    await platform.connect(link);
    cleanup.push(() => platform.disconnect());
    await eventually(() => expect(received.map((m) => m.text)).toEqual(['one', 'two']));
  });
});

describe('telegram webhook mode', () => {
  it('sets the webhook and accepts updates only with the secret token', async () => {
    const api = await fakeApi();
    const port = await freePort();
    const { inbound } = await channelOn(api, {
      mode: 'webhook',
      webhookUrl: 'https://bot.example.com/tg',
      webhookSecretToken: 'shh-secret_1',
      webhookListenPort: port,
      webhookPath: '/tg',
    });
    expect(api.callsOf('setWebhook')[0]?.params).toMatchObject({
      url: 'https://bot.example.com/tg',
      secret_token: 'shh-secret_1',
    });
    expect(api.callsOf('getUpdates')).toHaveLength(0);
    const update = (id: number, text: string) =>
      JSON.stringify({
        update_id: id,
        message: {
          message_id: id,
          date: 0,
          chat: { id: 9, type: 'private' },
          from: { id: 9, is_bot: false, first_name: 'U' },
          text,
        },
      });
    const post = (body: string, secret?: string) =>
      fetch(`http://127.0.0.1:${port}/tg`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          ...(secret ? { 'x-telegram-bot-api-secret-token': secret } : {}),
        },
        body,
      });
    expect((await post(update(1, 'forged'), 'wrong')).status).toBe(401);
    expect((await post(update(2, 'forged'))).status).toBe(401);
    expect((await post(update(3, 'real'), 'shh-secret_1')).status).toBe(200);
    await eventually(() => expect(inbound.map((m) => m.content)).toEqual(['real']));
    const refused = ['{"update_id":', 'null', '[]', '{"update_id":"4"}', '{"message":{}}', '{"update_id":-1}'];
    for (const body of refused) {
      const response = await post(body, 'shh-secret_1');
      expect(response.status).toBe(400);
      const { description } = (await response.json()) as { description: string };
      expect(description).toMatch(/^webhook body (is not valid JSON|has the wrong shape)/);
      if (body.includes('"4"')) expect(description).toMatch(/update_id: .*expected number, received string/);
    }
    expect((await post(update(5, 'after'), 'shh-secret_1')).status).toBe(200);
    await eventually(() => expect(inbound.map((m) => m.content)).toEqual(['real', 'after']));
  });
});

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}
