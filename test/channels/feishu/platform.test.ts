/** The Feishu adapter on its own (no agent): streaming by card updates, fallbacks, retries, files, rich text. */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { MessageBus } from '../../../src/bus/message-bus.js';
import type { InboundMessage } from '../../../src/bus/types.js';
import type { Channel } from '../../../src/channels/channel.js';
import { feishuChannel } from '../../../src/channels/feishu/index.js';
import { PairingStore } from '../../../src/channels/pairing.js';
import { silentLogger } from '../../../src/util/log.js';
import { eventually } from '../contract.js';
import { APP, type FakeFeishu, startFakeFeishu } from './fake-open-platform.js';

const CHAT = 'oc_chat';
const cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step();
  vi.restoreAllMocks();
});

async function channelOn(settings: Record<string, unknown> = {}) {
  const fake = await startFakeFeishu();
  cleanup.push(() => fake.close());
  const dir = mkdtempSync(join(tmpdir(), 'nb-feishu-'));
  const block = {
    appId: APP.id,
    appSecret: APP.secret,
    domain: fake.url,
    allowFrom: ['*'],
    streamEditInterval: 0.2,
    ...settings,
  };
  const channel = await feishuChannel.create({
    block: () => block,
    switches: () => ({ sendProgress: true, sendToolHints: true, showReasoning: true }),
    pairing: new PairingStore({ dir: join(dir, 'pairing') }),
    dataDir: dir,
    log: silentLogger,
    commands: () => [],
  });
  const bus = new MessageBus();
  const inbound: InboundMessage[] = [];
  await channel.start(bus);
  cleanup.push(() => channel.stop());
  void (async () => {
    for (;;) inbound.push(await bus.consumeInbound());
  })();
  return { fake, channel, inbound, dir };
}

const send = (channel: Channel, content: string, metadata: Record<string, unknown> = {}, media?: string[]) =>
  channel.send({ channel: 'feishu', chatId: CHAT, content, metadata, ...(media ? { media } : {}) });

const patches = (fake: FakeFeishu) => fake.callsTo(/^\/open-apis\/im\/v1\/messages\/om_[^/]+$/, 'PATCH');

describe('feishu adapter', () => {
  it('streams a reply into one shared card by patching it, then writes the final text into it', async () => {
    const { fake, channel } = await channelOn();
    const stream = { _stream_delta: true, _stream_id: 's1' };
    await send(channel, 'Counting: ', stream);
    await eventually(() => expect(fake.messagesIn(CHAT)).toHaveLength(1));
    // Each delta is waited for until the edit shows it (a gate on the fake's state, not a guessed delay).
    for (const [n, shown] of [
      ['one, ', 'one'],
      ['two, ', 'two'],
      ['**three**', 'three'],
    ] as const) {
      await send(channel, n, stream);
      await eventually(() => expect(JSON.stringify(fake.messagesIn(CHAT)[0])).toContain(shown));
    }
    await send(channel, 'Counting: one, two, **three**', { _stream_id: 's1' });
    expect(fake.messagesIn(CHAT)).toHaveLength(1);
    expect(fake.messagesIn(CHAT)[0]?.text).toBe('Counting: one, two, **three**');
    expect(fake.messagesIn(CHAT)[0]?.edits).toBeGreaterThanOrEqual(2);
    expect(fake.callsTo('/open-apis/im/v1/messages', 'POST')).toHaveLength(1);
    for (const call of patches(fake)) expect(JSON.parse(String(call.body.content)).config.update_multi).toBe(true);
  });

  it('sends plain text when Feishu refuses the card, and edits it as text', async () => {
    const { fake, channel } = await channelOn();
    fake.failNext('create', { status: 400, code: 230099, msg: 'Failed to create card content' });
    const stream = { _stream_delta: true, _stream_id: 's2' };
    await send(channel, 'Hello **world**', stream);
    await eventually(() => expect(fake.messagesIn(CHAT)).toHaveLength(1));
    await send(channel, 'Hello **world**, again', { _stream_id: 's2' });
    const [message] = fake.messagesIn(CHAT);
    expect(message).toMatchObject({ msgType: 'text', text: 'Hello world, again', edits: 1 });
    expect(fake.callsTo(`/open-apis/im/v1/messages/${message?.messageId}`, 'PUT')).toHaveLength(1);
  });

  it('shows plain text in the card when Feishu refuses a card update', async () => {
    const { fake, channel } = await channelOn();
    const stream = { _stream_delta: true, _stream_id: 's3' };
    await send(channel, 'Draft', stream);
    await eventually(() => expect(fake.messagesIn(CHAT)).toHaveLength(1));
    fake.failNext('patch', { status: 400, code: 230099, msg: 'Failed to create card content' });
    await send(channel, 'Final **answer**', { _stream_id: 's3' });
    const card = JSON.parse(fake.messagesIn(CHAT)[0]?.content ?? '{}');
    expect(card.body.elements).toEqual([{ tag: 'div', text: { tag: 'plain_text', content: 'Final answer' } }]);
  });

  it('waits out a rate limit once, and renews a revoked token once', async () => {
    const { fake, channel } = await channelOn();
    fake.failNext('create', { status: 429, code: 99991400, msg: 'request trigger frequency limit' });
    await send(channel, 'patience');
    fake.revokeTokens();
    await send(channel, 'new token');
    expect(fake.shown(CHAT)).toEqual(['patience', 'new token']);
    expect(fake.callsTo('/open-apis/auth/v3/tenant_access_token/internal')).toHaveLength(2);
  });

  it('uploads images as images, and as files when the image API refuses them', async () => {
    const { fake, channel, dir } = await channelOn();
    const image = join(dir, 'chart.png');
    writeFileSync(image, Buffer.from([0x89, 0x50, 0x4e, 0x47, 1, 2, 3]));
    await send(channel, 'The chart.', {}, [image]);
    fake.failNext('image', { status: 400, code: 234011, msg: 'Can not recognize image format' });
    await send(channel, 'Again.', {}, [image]);
    expect(fake.messagesIn(CHAT).map((m) => m.msgType)).toEqual(['image', 'interactive', 'file', 'interactive']);
    expect(fake.callsTo('/open-apis/im/v1/images', 'POST')[0]?.body).toMatchObject({ image_type: 'message' });
    expect(fake.callsTo('/open-apis/im/v1/files', 'POST')[0]?.body).toMatchObject({
      file_type: 'stream',
      file_name: 'chart.png',
    });
  });

  it('reads rich-text posts: text, links, code and images', async () => {
    const { fake, inbound } = await channelOn();
    fake.userSays({
      chatId: CHAT,
      post: {
        title: 'Bug report',
        content: [
          [
            { tag: 'text', text: 'See ' },
            { tag: 'a', text: 'the log', href: 'https://example.com/log' },
          ],
          [{ tag: 'code_block', language: 'JS', text: 'throw new Error()' }],
        ],
      },
    });
    await eventually(() => expect(inbound).toHaveLength(1));
    expect(inbound[0]?.content).toBe(
      'Bug report\nSee the log (https://example.com/log)\n\n```js\nthrow new Error()\n```',
    );
  });

  it('hands a file to the agent under its own name, and ignores messages from other bots', async () => {
    const { fake, inbound } = await channelOn();
    fake.userSays({ chatId: CHAT, senderType: 'app', text: 'I am another bot' });
    fake.userSays({ chatId: CHAT, file: { name: 'notes.txt', content: Buffer.from('milk\neggs\n') } });
    await eventually(() => expect(inbound).toHaveLength(1));
    expect(inbound[0]?.media?.[0]).toMatch(/notes\.txt$/);
  });

  it('keeps the SDK from writing to the console', async () => {
    const spies = (['log', 'info', 'warn', 'error', 'debug', 'trace'] as const).map((name) =>
      vi.spyOn(console, name).mockImplementation(() => {}),
    );
    const { fake, inbound, channel } = await channelOn();
    fake.userSays({ chatId: CHAT, text: 'quietly' });
    await eventually(() => expect(inbound).toHaveLength(1));
    await send(channel, 'shh');
    await channel.stop();
    for (const spy of spies) expect(spy).not.toHaveBeenCalled();
  });
});
