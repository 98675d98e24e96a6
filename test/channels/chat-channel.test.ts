import { mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { MessageBus } from '../../src/bus/message-bus.js';
import type { InboundMessage, OutboundMessage } from '../../src/bus/types.js';
import type { ChannelCapabilities } from '../../src/channels/channel.js';
import { ChatChannel } from '../../src/channels/chat-channel.js';
import { PairingStore } from '../../src/channels/pairing.js';
import type { IncomingAttachment } from '../../src/channels/platform.js';
import { TurnRelay } from '../../src/channels/relay.js';
import { type ChannelSettings, channelSettingsSchema } from '../../src/channels/settings.js';
import { eventually } from './contract.js';
import { MemoryPlatform } from './memory-platform.js';

const open: ChatChannel[] = [];
afterEach(async () => {
  for (const channel of open.splice(0)) await channel.stop();
});

async function setup(
  options: { settings?: Partial<ChannelSettings>; capabilities?: Partial<ChannelCapabilities> } = {},
) {
  const dir = mkdtempSync(join(tmpdir(), 'nb-chat-'));
  const platform = new MemoryPlatform(options.capabilities);
  const bus = new MessageBus();
  const pairing = new PairingStore({ dir: join(dir, 'pairing') });
  let settings = channelSettingsSchema.parse({ allowFrom: ['@owner'], streamEditInterval: 0.05, ...options.settings });
  let switches = { sendProgress: true, sendToolHints: true, showReasoning: true };
  const channel = new ChatChannel({
    name: 'memory',
    platform,
    settings: () => settings,
    switches: () => switches,
    pairing,
    mediaDir: join(dir, 'media'),
    reconnectWaitMs: 2_000,
  });
  await channel.start(bus);
  open.push(channel);
  const inbound: InboundMessage[] = [];
  const pump = async () => {
    for (;;) inbound.push(await bus.consumeInbound());
  };
  void pump();
  const out = (content: string, metadata: Record<string, unknown> = {}, extra: Partial<OutboundMessage> = {}) =>
    channel.send({ channel: 'memory', chatId: '1', content, metadata, ...extra });
  return {
    dir,
    platform,
    channel,
    pairing,
    inbound,
    out,
    set: (next: Partial<ChannelSettings>) => {
      settings = { ...settings, ...next };
    },
    setSwitches: (next: Partial<typeof switches>) => {
      switches = { ...switches, ...next };
    },
  };
}

describe('ChatChannel inbound', () => {
  it('publishes an allowed message with its id, sender and whether the reply may stream', async () => {
    const { platform, inbound } = await setup({ capabilities: { editMessages: true } });
    await platform.deliver({ id: '55', text: '  hello  ', threadId: '9' });
    await eventually(() => expect(inbound).toHaveLength(1));
    expect(inbound[0]).toMatchObject({
      channel: 'memory',
      senderId: '1',
      chatId: '1',
      content: 'hello',
      metadata: { message_id: '55', thread_id: '9', username: 'owner', is_group: false, _wants_stream: true },
    });
    expect(platform.typing).toBeGreaterThan(0);
  });

  it('sends a stranger one pairing code (not one per message) and never publishes their messages', async () => {
    const { platform, inbound, pairing } = await setup();
    const stranger = { id: '66', username: 'eve' };
    await platform.deliver({ text: 'hi', chatId: '66', sender: stranger });
    await platform.deliver({ text: 'hello??', chatId: '66', sender: stranger });
    expect(platform.chat('66')).toHaveLength(1);
    expect(platform.chat('66')[0]).toMatch(/pairing code is: `[A-Z2-9]{4}-[A-Z2-9]{4}`/);
    expect(pairing.listPending()).toMatchObject([{ senderId: '66', username: 'eve', chatId: '66' }]);
    await platform.deliver({ text: '@bot hi', chatId: '-3', chatType: 'group', mentioned: true, sender: stranger });
    // A sentinel from the owner in the same group: once it is published, the stranger's message (sent first) would be.
    await platform.deliver({ text: '@bot sentinel', chatId: '-3', chatType: 'group', mentioned: true });
    await eventually(() => expect(inbound).toHaveLength(1));
    expect(inbound[0]?.content).toContain('sentinel');
    expect(platform.chat('-3')).toEqual([]);
  });

  it('acknowledges an accepted message without waiting for it (a failure only logs), never a stranger’s', async () => {
    const { platform, inbound } = await setup();
    const acknowledged: string[] = [];
    platform.acknowledge = async (message) => {
      acknowledged.push(message.id);
      if (message.id === '2') throw new Error('reaction refused');
      await new Promise(() => {});
    };
    await platform.deliver({ id: '1', text: 'one' });
    await platform.deliver({ id: '2', text: 'two' });
    await platform.deliver({ id: '3', text: 'let me in', chatId: '66', sender: { id: '66' } });
    await eventually(() => expect(inbound.map((m) => m.content)).toEqual(['one', 'two']));
    expect(acknowledged).toEqual(['1', '2']);
  });

  it('drops a redelivered message', async () => {
    const { platform, inbound } = await setup();
    await platform.deliver({ id: '7', text: 'once' });
    await platform.deliver({ id: '7', text: 'once' });
    await platform.deliver({
      id: '7',
      text: 'other chat, other message',
      chatId: '2',
      sender: { id: '1', username: 'owner' },
    });
    await eventually(() => expect(inbound.map((m) => m.content)).toEqual(['once', 'other chat, other message']));
  });

  it('lets only owners (named in allowFrom) run /pairing from a chat', async () => {
    const { platform, inbound, pairing } = await setup();
    const { code } = await pairing.requestCode('memory', { id: '9' }, '9');
    await pairing.approve(code);
    await platform.deliver({ text: '/pairing approve ABCD-EFGH', chatId: '9', sender: { id: '9' } });
    expect(platform.chat('9')).toEqual(['Only the owner (named in channels.memory.allowFrom) can manage pairing.']);
    await platform.deliver({ text: '/pairing list' });
    await eventually(() => expect(inbound.map((m) => m.content)).toEqual(['/pairing list']));
  });

  it('saves attachments under the media folder, privately, and refuses ones over maxMediaMb', async () => {
    const { platform, inbound, dir } = await setup({ settings: { maxMediaMb: 0.001 } });
    const attachment = (bytes: number, size?: number): IncomingAttachment => ({
      kind: 'image',
      name: '../../evil name.png',
      ...(size !== undefined ? { size } : {}),
      open: async () =>
        (async function* () {
          yield Buffer.alloc(bytes, 7);
        })(),
    });
    await platform.deliver({ text: 'look', attachments: [attachment(500)] });
    await platform.deliver({ text: 'big', attachments: [attachment(5_000)] });
    await platform.deliver({ text: 'declared big', attachments: [attachment(10, 5_000)] });
    await eventually(() => expect(inbound).toHaveLength(3));
    const saved = inbound[0]?.media?.[0] ?? '';
    expect(saved.startsWith(join(dir, 'media'))).toBe(true);
    expect(saved).toMatch(/-evil_name\.png$/);
    expect(readFileSync(saved)).toHaveLength(500);
    expect(statSync(saved).mode & 0o777).toBe(0o600);
    expect(inbound[1]?.media).toBeUndefined();
    expect(inbound[1]?.content).toMatch(/^big\n\[image .*not received: too large: it is over the 1 KB limit\]$/);
    expect(inbound[2]?.content).toContain('not received: too large');
  });
});

describe('ChatChannel outbound', () => {
  it('renders Markdown in the platform markup and splits long replies under its limit', async () => {
    const { platform, out } = await setup({ capabilities: { maxMessageLength: 200 } });
    const long = Array.from({ length: 12 }, (_, i) => `Paragraph **${i}** ${'text '.repeat(10)}`).join('\n\n');
    await out(long);
    expect(platform.chat('1').length).toBeGreaterThan(3);
    for (const text of platform.chat('1')) expect(text.length).toBeLessThanOrEqual(200);
    expect(platform.chat('1')[0]).toContain('Paragraph **0**');
  });

  it('filters progress: tool hints and reasoning follow the channel switches, per-channel settings win', async () => {
    const { platform, out, setSwitches, set } = await setup();
    await out('read_file("a.md")', { _progress: true, _tool_hint: true });
    await out('thinking about it', { _progress: true, _reasoning: true });
    expect(platform.chat('1')).toEqual(['`read_file("a.md")`', '> thinking about it']);
    setSwitches({ sendToolHints: false, showReasoning: false });
    await out('exec("ls")', { _progress: true, _tool_hint: true });
    await out('more thoughts', { _progress: true, _reasoning: true });
    expect(platform.chat('1')).toHaveLength(2);
    set({ sendToolHints: true });
    await out('exec("ls")', { _progress: true, _tool_hint: true });
    expect(platform.chat('1')).toHaveLength(3);
  });

  it('streams into one message by editing it, and the final reply lands there: no duplicate', async () => {
    const { platform, out } = await setup({ capabilities: { editMessages: true } });
    const stream = { _stream_delta: true, _stream_id: 's1' };
    await out('Hello', stream);
    await eventually(() => expect(platform.chat('1')).toEqual(['Hello']));
    await out(', **wor', stream);
    await out('ld**', stream);
    await out('Hello, **world**!', { _stream_id: 's1' });
    expect(platform.chat('1')).toEqual(['Hello, **world**!']);
    expect(platform.messages[0]?.edits).toBeGreaterThanOrEqual(1);

    // A segment ended before a tool call stays as it is; the next one is a new message.
    await out('Let me check.', { _stream_delta: true, _stream_id: 's2' });
    await out('', { _stream_end: true, _stream_id: 's2' });
    await out('Done.', { _stream_delta: true, _stream_id: 's3' });
    await out('Done.', { _stream_id: 's3' });
    expect(platform.chat('1')).toEqual(['Hello, **world**!', 'Let me check.', 'Done.']);
  });

  it('a final stream write that fails (the connection dropped) is retried into the same message, not sent again', async () => {
    const { platform, out } = await setup({ capabilities: { editMessages: true } });
    const stream = { _stream_delta: true, _stream_id: 's1' };
    await out('Hello', stream);
    await eventually(() => expect(platform.chat('1')).toEqual(['Hello']));
    const edit = platform.editText.bind(platform);
    let failures = 1;
    platform.editText = async (...args) => {
      if (failures-- > 0) throw new Error('socket hang up');
      return edit(...args);
    };
    // The router retries a send that failed: the retry must finish the same message.
    await expect(out('Hello, world!', { _stream_id: 's1' })).rejects.toThrow('socket hang up');
    await out('Hello, world!', { _stream_id: 's1' });
    expect(platform.chat('1')).toEqual(['Hello, world!']);

    await out('Let me check', { _stream_delta: true, _stream_id: 's2' });
    await eventually(() => expect(platform.chat('1')).toEqual(['Hello, world!', 'Let me check']));
    failures = 1;
    await out('.', { _stream_delta: true, _stream_id: 's2' });
    await expect(out('', { _stream_end: true, _stream_id: 's2' })).rejects.toThrow('socket hang up');
    await out('', { _stream_end: true, _stream_id: 's2' });
    expect(platform.chat('1')).toEqual(['Hello, world!', 'Let me check.']);
  });

  it('a reply whose end comes after a reconnect finishes the message it started, not a second one', async () => {
    const { platform, channel, out } = await setup({ capabilities: { editMessages: true } });
    await out('Hello from', { _stream_delta: true, _stream_id: 's1' });
    await eventually(() => expect(platform.chat('1')).toEqual(['Hello from']));
    // The connection drops: the manager stops the channel and starts it again; the final text waits for it.
    await channel.stop();
    const final = out('Hello from the gateway.', { _stream_id: 's1' });
    await channel.start(new MessageBus());
    await final;
    expect(platform.chat('1')).toEqual(['Hello from the gateway.']);
    expect(platform.messages).toHaveLength(1);
  });

  it('sends files as attachments, and says so where the platform cannot carry them', async () => {
    const { platform, out, dir } = await setup({ capabilities: { media: true } });
    const photo = join(dir, 'chart.png');
    writeFileSync(photo, 'png');
    await out('Here it is', {}, { media: [photo] });
    expect(platform.files).toMatchObject([{ file: { path: photo, name: 'chart.png', kind: 'image' } }]);
    expect(platform.chat('1')).toEqual(['Here it is']);

    const plain = await setup();
    await plain.out('Here', {}, { media: [photo] });
    expect(plain.platform.chat('1')).toEqual(['(chart.png was not sent: memory cannot carry files)', 'Here']);
  });

  it('attaches buttons where the platform has them, else lists the labels', async () => {
    const withButtons = await setup({ capabilities: { buttons: true } });
    await withButtons.out('Pick one', {}, { buttons: [['Yes', 'No']] });
    expect(withButtons.platform.messages[0]).toMatchObject({ text: 'Pick one', buttons: [['Yes', 'No']] });
    const without = await setup();
    await without.out('Pick one', {}, { buttons: [['Yes', 'No']] });
    expect(without.platform.chat('1')).toEqual(['Pick one\n\n[Yes] [No]']);
  });

  it('quotes the user’s message when replyToMessage is on', async () => {
    const { platform, out } = await setup({ settings: { replyToMessage: true } });
    await out('answer', { message_id: '41' });
    expect(platform.messages[0]?.target).toEqual({ chatId: '1', replyTo: '41' });
  });

  it('holds replies while the connection is down and delivers them once it is back', async () => {
    const { platform, channel, out } = await setup();
    platform.link?.failed(new Error('connection reset'));
    expect(channel.status()).toBe('reconnecting');
    let sent = false;
    const pending = out('written while offline').then(() => {
      sent = true;
    });
    // Nothing can send while the link is down; the reply is held, not dropped (it arrives after start below).
    await Promise.resolve();
    expect(sent).toBe(false);
    expect(platform.chat('1')).toEqual([]);
    await channel.start(new MessageBus());
    await pending;
    expect(platform.chat('1')).toEqual(['written while offline']);
  });
});

describe('TurnRelay', () => {
  it('turns runner events into tool hints, reasoning and stream segments', () => {
    const published: OutboundMessage[] = [];
    const relay = new TurnRelay({
      publish: (message) => published.push(message),
      inbound: { channel: 'memory', senderId: '1', chatId: '1', content: 'hi', metadata: { _wants_stream: true } },
      settings: { sendToolHints: true, showReasoning: true },
      describeTool: (event) => `${event.call.function.name}()`,
    });
    relay.onEvent({ type: 'reasoning-delta', text: 'hmm' });
    relay.onEvent({ type: 'text-delta', text: 'Let me look.' });
    relay.onEvent({
      type: 'tool-start',
      call: { id: 'c1', type: 'function', function: { name: 'ls', arguments: '{}' } },
    });
    relay.onEvent({ type: 'text-delta', text: 'Found it.' });
    const meta = relay.replyMetadata();
    const summary = published.map((m) => [
      m.content,
      Object.keys(m.metadata ?? {}).filter((k) => k.startsWith('_') && k !== '_wants_stream'),
    ]);
    expect(summary).toEqual([
      ['hmm', ['_progress', '_reasoning']],
      ['Let me look.', ['_stream_delta', '_stream_id']],
      ['', ['_stream_end', '_stream_id']],
      ['ls()', ['_progress', '_tool_hint']],
      ['Found it.', ['_stream_delta', '_stream_id']],
    ]);
    expect(meta._stream_id).toBe(published[4]?.metadata?._stream_id);
    expect(meta._stream_id).not.toBe(published[1]?.metadata?._stream_id);
  });

  it('publishes no stream for a channel that does not stream', () => {
    const published: OutboundMessage[] = [];
    const relay = new TurnRelay({
      publish: (message) => published.push(message),
      inbound: { channel: 'memory', senderId: '1', chatId: '1', content: 'hi' },
      settings: { sendToolHints: false, showReasoning: false },
      describeTool: () => 'x',
    });
    relay.onEvent({ type: 'reasoning-delta', text: 'hmm' });
    relay.onEvent({ type: 'text-delta', text: 'answer' });
    relay.close();
    expect(published).toEqual([]);
    expect(relay.replyMetadata()).toEqual({});
  });
});
