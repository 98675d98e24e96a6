/** The Slack adapter on its own (no agent): streaming edits, buttons, files, reconnects, settings. */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { MessageBus } from '../../../src/bus/message-bus.js';
import type { InboundMessage } from '../../../src/bus/types.js';
import type { Channel } from '../../../src/channels/channel.js';
import { PairingStore } from '../../../src/channels/pairing.js';
import { slackChannel } from '../../../src/channels/slack/index.js';
import { createLogger, silentLogger } from '../../../src/util/log.js';
import { eventually } from '../contract.js';
import { type FakeSlack, startFakeSlack } from './fake-slack.js';
import { assertSlackMrkdwn } from './mrkdwn.js';

const cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step();
});

async function fakeSlack(options: { appToken?: string } = {}): Promise<FakeSlack> {
  const slack = await startFakeSlack(options);
  cleanup.push(() => slack.close());
  return slack;
}

async function channelOn(slack: FakeSlack, settings: Record<string, unknown> = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'nb-slack-'));
  const block = {
    botToken: slack.botToken,
    appToken: 'xapp-test-token',
    apiBase: slack.apiBase,
    allowFrom: ['*'],
    streamEditInterval: 0.05,
    ...settings,
  };
  const channel = await slackChannel.create({
    block: () => block,
    switches: () => ({ sendProgress: true, sendToolHints: true, showReasoning: true }),
    pairing: new PairingStore({ dir: join(dir, 'pairing') }),
    dataDir: dir,
    log: process.env.SLACK_DEBUG ? createLogger('debug') : silentLogger,
    commands: () => [{ name: 'help', description: 'show help' }],
  });
  const bus = new MessageBus();
  const inbound: InboundMessage[] = [];
  const failures: Error[] = [];
  await channel.start(bus, { failed: (error) => failures.push(error) });
  cleanup.push(() => channel.stop());
  void (async () => {
    for (;;) inbound.push(await bus.consumeInbound());
  })();
  return { channel, bus, inbound, failures, dir };
}

const send = (channel: Channel, chatId: string, content: string, metadata: Record<string, unknown> = {}, extra = {}) =>
  channel.send({ channel: 'slack', chatId, content, metadata, ...extra });

describe('slack adapter', () => {
  it('streams a reply by editing one message with chat.update, then writes the final mrkdwn into it', async () => {
    const slack = await fakeSlack();
    const { channel } = await channelOn(slack);
    const stream = { _stream_delta: true, _stream_id: 's1', thread_id: '1700000000.000001' };
    await send(channel, 'C0DEV', 'Counting: ', stream);
    await eventually(() => expect(slack.messagesIn('C0DEV')).toHaveLength(1));
    // Each delta is waited for until it shows in the message (a gate on the fake's state, not a guessed delay).
    for (const [n, shown] of [
      ['one, ', 'one'],
      ['two, ', 'two'],
      ['**three**', 'three'],
    ] as const) {
      await send(channel, 'C0DEV', n, stream);
      await eventually(() => expect(slack.messagesIn('C0DEV')[0]?.text).toContain(shown));
    }
    await send(channel, 'C0DEV', 'Counting: one, two, **three**', { _stream_id: 's1', thread_id: '1700000000.000001' });
    const posts = slack.messagesIn('C0DEV');
    expect(posts).toHaveLength(1);
    expect(posts[0]).toMatchObject({ text: 'Counting: one, two, *three*', threadTs: '1700000000.000001' });
    expect(posts[0]?.edits).toBeGreaterThanOrEqual(2);
    expect(slack.callsOf('chat.postMessage')).toHaveLength(1);
  });

  it('spaces streamed edits by streamEditInterval (1.2 s by default: chat.update is rate-limited)', async () => {
    expect(slackChannel.parse({ botToken: 'xoxb-1', appToken: 'xapp-1' })).toMatchObject({ streamEditInterval: 1.2 });
    const slack = await fakeSlack();
    // An interval longer than the test may run: every delta after the first lands inside it, however slow the
    // machine, so the count below does not depend on a clock.
    const { channel } = await channelOn(slack, { streamEditInterval: 600 });
    const stream = { _stream_delta: true, _stream_id: 's2' };
    for (let i = 0; i < 40; i++) {
      await send(channel, 'D0ME', `word${i} `, stream);
      // One turn of the event loop (not a wait for time): an edit due now would be made before the next delta.
      await new Promise((resolve) => setTimeout(resolve, 0));
    }
    await eventually(() => expect(slack.messagesIn('D0ME')).toHaveLength(1));
    expect(slack.messagesIn('D0ME')[0]?.text).not.toContain('word1 ');
    await send(channel, 'D0ME', '', { _stream_end: true, _stream_id: 's2' });
    // The first delta posts the message; the other 39 wait out the interval; the end writes the final text once.
    await eventually(() => expect(slack.messagesIn('D0ME')[0]?.text).toContain('word39'));
    expect(slack.callsOf('chat.postMessage')).toHaveLength(1);
    expect(slack.callsOf('chat.update')).toHaveLength(1);
    expect(slack.messagesIn('D0ME')[0]?.text).toContain('word39');
  });

  it('attaches buttons as Block Kit buttons, and a press comes back as the label in that thread', async () => {
    const slack = await fakeSlack();
    const { channel, inbound } = await channelOn(slack);
    await send(channel, 'C0DEV', 'Deploy now?', { thread_id: '1700000000.000009' }, { buttons: [['Yes', 'No']] });
    const [post] = slack.messagesIn('C0DEV');
    expect(post?.text).toBe('Deploy now?');
    const actions = post?.blocks?.at(-1) as { elements: { text: { text: string }; value: string }[] };
    expect(actions.elements.map((e) => [e.text.text, e.value])).toEqual([
      ['Yes', 'Yes'],
      ['No', 'No'],
    ]);
    slack.pressButton({
      user: 'U0ME',
      channel: 'C0DEV',
      messageTs: post?.ts ?? '',
      value: 'Yes',
      threadTs: '1700000000.000009',
    });
    await eventually(() => expect(inbound.map((m) => m.content)).toEqual(['Yes']));
    expect(inbound[0]).toMatchObject({
      chatId: 'C0DEV',
      senderId: 'U0ME',
      sessionKey: 'slack:C0DEV:1700000000.000009',
    });
  });

  it('uploads files into the thread of the conversation', async () => {
    const slack = await fakeSlack();
    const { channel, dir } = await channelOn(slack);
    const path = join(dir, 'chart.png');
    writeFileSync(path, Buffer.from([0x89, 0x50, 0x4e, 0x47]));
    await send(channel, 'C0DEV', '', { thread_id: '1700000000.000003' }, { media: [path] });
    await eventually(() => expect(slack.messagesIn('C0DEV')).toHaveLength(1));
    expect(slack.messagesIn('C0DEV')[0]).toMatchObject({ threadTs: '1700000000.000003' });
    expect(slack.messagesIn('C0DEV')[0]?.files?.map((f) => [f.name, f.size])).toEqual([['chart.png', 4]]);
  });

  it('sends to a user id through their DM (conversations.open)', async () => {
    const slack = await fakeSlack();
    const { channel } = await channelOn(slack);
    await send(channel, 'U0ME', 'Reminder: stand-up at 10.');
    expect(slack.messagesIn('D0ME').map((p) => p.text)).toEqual(['Reminder: stand-up at 10.']);
    expect(slack.callsOf('conversations.open')).toHaveLength(1);
    await send(channel, 'U0ME', 'And again.');
    expect(slack.callsOf('conversations.open')).toHaveLength(1);
  });

  it('reconnects at once when Slack asks for a new connection, without reporting a failure', async () => {
    const slack = await fakeSlack();
    const { channel, inbound, failures } = await channelOn(slack);
    slack.requestRefresh();
    await eventually(() => expect(slack.callsOf('apps.connections.open')).toHaveLength(2));
    slack.userSays({ channel: 'D0ME', user: 'U0ME', text: 'still there?' });
    await eventually(() => expect(inbound.map((m) => m.content)).toEqual(['still there?']));
    expect(failures).toEqual([]);
    expect(channel.status()).toBe('running');
    expect(slack.unacknowledged).toBe(0);
  });

  it('reports a dropped connection to the framework; what Slack sent meanwhile arrives after the reconnect', async () => {
    const slack = await fakeSlack();
    const { channel, bus, inbound, failures } = await channelOn(slack);
    slack.drop();
    await eventually(() => expect(failures.map((e) => e.message)).toEqual(['the Slack Socket Mode connection closed']));
    slack.userSays({ channel: 'D0ME', user: 'U0ME', text: 'written while offline' });
    slack.restore();
    // What the ChannelManager does after its backoff:
    await channel.stop();
    await channel.start(bus, { failed: (error) => failures.push(error) });
    await eventually(() => expect(inbound.map((m) => m.content)).toEqual(['written while offline']));
    expect(slack.unacknowledged).toBe(0);
    expect(failures).toHaveLength(1);
  });

  it('notes a file it could not fetch: a non-Slack host gets no token; a sign-in page is not saved', async () => {
    const slack = await fakeSlack();
    const { inbound } = await channelOn(slack);
    const file = (url: string) => ({
      id: 'F1',
      name: 'cat.png',
      mimetype: 'image/png',
      size: 3,
      url_private_download: url,
    });
    const event = { type: 'message', channel: 'D0ME', channel_type: 'im', user: 'U0ME', text: 'look' };
    slack.rawEvent({ ...event, ts: '1.1', subtype: 'file_share', files: [file('https://files.example.com/cat.png')] });
    slack.rawEvent({ ...event, ts: '1.2', subtype: 'file_share', files: [file(`${slack.url}/files-pri/T1-F9/x.png`)] });
    await eventually(() => expect(inbound).toHaveLength(2));
    expect(inbound[0]?.content).toContain('not sending the bot token to files.example.com');
    expect(inbound[1]?.content).toContain('files:read');
    expect(inbound.every((m) => !m.media?.length)).toBe(true);
  });

  it('ignores edits, joins and bot messages, and turns Slack’s link and mention syntax into readable text', async () => {
    const slack = await fakeSlack();
    const { inbound } = await channelOn(slack);
    const base = { type: 'message', channel: 'D0ME', channel_type: 'im', user: 'U0ME' };
    slack.rawEvent({ ...base, ts: '2.1', subtype: 'message_changed', text: 'edited' });
    slack.rawEvent({ ...base, ts: '2.2', subtype: 'bot_message', bot_id: 'B2', text: 'another bot' });
    slack.rawEvent({ ...base, ts: '2.3', user: 'UBOT', text: 'my own message' });
    slack.rawEvent({ ...base, ts: '2.5', user: 'U0OTHERBOT', bot_id: 'B3', text: 'another app with a bot user' });
    slack.rawEvent({
      ...base,
      ts: '2.4',
      text: 'see <https://example.com|the site> &amp; <#C0DEV|dev>, cc <@U0ANN|ann> <!here> &lt;3',
    });
    await eventually(() => expect(inbound).toHaveLength(1));
    expect(inbound[0]?.content).toBe('see the site (https://example.com) & #dev, cc @ann @here <3');
  });

  it('says which token Slack rejected when Socket Mode cannot open', async () => {
    const slack = await fakeSlack({ appToken: 'xapp-other' });
    await expect(channelOn(slack)).rejects.toThrow(/channels\.slack\.appToken \(invalid_auth\)/);
  });

  it('names missing or swapped tokens, an unsupported mode and an insecure apiBase before starting', () => {
    expect(() => slackChannel.parse({})).toThrow(/channels\.slack\.botToken is not set/);
    expect(() => slackChannel.parse({ botToken: 'xoxb-1' })).toThrow(/channels\.slack\.appToken is not set/);
    expect(() => slackChannel.parse({ botToken: 'xapp-1', appToken: 'xoxb-1' })).toThrow(/must be a bot token/);
    expect(() => slackChannel.parse({ botToken: 'xoxb-1', appToken: 'xapp-1', mode: 'http' })).toThrow(/Socket Mode/);
    expect(() =>
      slackChannel.parse({ botToken: 'xoxb-1', appToken: 'xapp-1', apiBase: 'http://slack.example.com/api' }),
    ).toThrow(/must be an https:\/\/ URL/);
  });

  it('reads nanobot’s dm keys: dm.allowFrom joins allowFrom, dm.policy "open" lets everyone in', () => {
    const tokens = { botToken: 'xoxb-1', appToken: 'xapp-1' };
    expect(slackChannel.parse({ ...tokens, allowFrom: ['U1'], dm: { allowFrom: ['U2'] } }).allowFrom).toEqual([
      'U1',
      'U2',
    ]);
    expect(slackChannel.parse({ ...tokens, dm: { policy: 'open' } }).allowFrom).toEqual(['*']);
  });

  it('keeps every part of a long reply valid mrkdwn under the limit', async () => {
    const slack = await fakeSlack();
    const { channel } = await channelOn(slack);
    const table = ['| a | b |', '|---|---|', ...Array.from({ length: 300 }, (_, i) => `| <${i}> | x & y |`)].join('\n');
    await send(channel, 'D0ME', `Intro with <angle> & ampersand.\n\n${table}`);
    const posts = slack.messagesIn('D0ME');
    expect(posts.length).toBeGreaterThan(1);
    for (const post of posts) assertSlackMrkdwn(post.text);
  });
});
