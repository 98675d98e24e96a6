/** Signal behaviours beyond the contract, through a real gateway and the fake signal-cli daemon. */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { signalChannel } from '../../../src/channels/signal/index.js';
import { eventually } from '../contract.js';
import { BOT, person, startFakeSignalCli } from './fake-signal-cli.js';
import {
  FRIEND,
  healthOf,
  OWNER,
  type SignalGateway,
  STRANGER,
  signalSettings,
  startSignalGateway,
  waitState,
} from './helpers.js';

const open: SignalGateway[] = [];
afterEach(async () => {
  for (const run of open.splice(0)) await run.close();
});

async function start(settings: Record<string, unknown> = {}) {
  const run = await startSignalGateway(settings);
  open.push(run);
  await waitState(run.gateway, 'running');
  return run;
}

const lastUserText = (run: SignalGateway, n = -1) =>
  JSON.stringify((run.llm.requests.at(n)?.body.messages as unknown[] | undefined)?.at(-1));
const quiet = () => new Promise((resolve) => setTimeout(resolve, 400));
const groupsOn = (groupId: string, extra: Record<string, unknown> = {}) => ({
  group: { enabled: true, allowFrom: [groupId], ...extra },
});

describe('signal direct messages', () => {
  it('answers with Signal text styles (bold, monospace), reacts 👀 to the message and shows "typing…"', async () => {
    const run = await start();
    run.llm.enqueue({ text: 'Use **npm** and `ci`.', delayMs: 300 });
    const timestamp = run.signal.userSays({ from: OWNER, text: 'how do I install?' });
    await eventually(() => expect(run.signal.messagesTo(OWNER)).toEqual(['Use npm and ci.']));
    const [reply] = run.signal.sentTo(OWNER);
    expect(reply?.recipient).toEqual([OWNER.number]);
    expect(reply?.textStyle).toEqual(['4:3:BOLD', '12:2:MONOSPACE']);
    expect(run.signal.reactions).toContainEqual(
      expect.objectContaining({
        emoji: '👀',
        targetTimestamp: timestamp,
        targetAuthor: OWNER.uuid,
        recipient: [OWNER.number],
      }),
    );
    expect(run.signal.typing).toContainEqual(expect.objectContaining({ recipient: [OWNER.number] }));
  });

  it('reactEmoji "" sends no reaction; replyToMessage quotes the user’s message', async () => {
    const run = await start({ reactEmoji: '', replyToMessage: true });
    run.llm.enqueue({ text: 'Quoted.' });
    const timestamp = run.signal.userSays({ from: OWNER, text: 'quote me' });
    await eventually(() => expect(run.signal.messagesTo(OWNER)).toEqual(['Quoted.']));
    expect(run.signal.sentTo(OWNER)[0]?.quote).toEqual({ timestamp, author: OWNER.uuid });
    expect(run.signal.reactions).toEqual([]);
  });

  it('reads an attached image from signal-cli’s attachments directory and shows it to the model', async () => {
    const run = await start();
    run.llm.enqueue({ text: 'A tiny picture.' });
    const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 1, 2, 3]);
    run.signal.userSays({
      from: OWNER,
      text: 'what is this?',
      attachments: [{ filename: 'cat.png', contentType: 'image/png', content: png }],
    });
    await eventually(() => expect(run.signal.messagesTo(OWNER)).toEqual(['A tiny picture.']));
    const sent = lastUserText(run);
    expect(sent).toContain('what is this?');
    expect(sent).toContain(`data:image/png;base64,${png.toString('base64')}`);
    const path = /\[image: ([^\]]+)\]/.exec(sent)?.[1] ?? '';
    expect(path.startsWith(join(run.dataDir, 'media', 'signal'))).toBe(true);
    expect(readFileSync(path)).toEqual(png);
  });

  it('sends a file from the message tool as an attachment (a data URI with its name)', async () => {
    const run = await start();
    writeFileSync(join(run.workspace, 'report.txt'), 'quarterly numbers');
    run.llm.enqueue(
      { toolCalls: [{ name: 'message', arguments: { content: 'Here is the report.', media: ['report.txt'] } }] },
      { text: 'Sent it.' },
    );
    run.signal.userSays({ from: OWNER, text: 'the report, please' });
    await eventually(() => expect(run.signal.messagesTo(OWNER)).toEqual(['Here is the report.', 'Sent it.']));
    const upload = run.signal.sentTo(OWNER).find((m) => m.attachments.length > 0);
    expect(upload?.attachments[0]).toMatchObject({ filename: 'report.txt', contentType: 'text/plain' });
    expect(upload?.attachments[0]?.data.toString()).toBe('quarterly numbers');
  });

  it('matches allowFrom by number with or without +, by UUID (Signal may hide the number), and dm.allowFrom', async () => {
    const hidden = { uuid: 'cccccccc-0000-4000-8000-00000000abcd', name: 'Hidden' };
    const run = await start({
      allowFrom: [OWNER.number?.slice(1)],
      dm: { allowFrom: [hidden.uuid.toUpperCase(), FRIEND.number] },
    });
    run.llm.enqueue({ text: 'hi owner' }, { text: 'hi hidden' }, { text: 'hi friend' });
    run.signal.userSays({ from: OWNER, text: 'one' });
    await eventually(() => expect(run.signal.messagesTo(OWNER)).toEqual(['hi owner']));
    run.signal.userSays({ from: hidden, text: 'two' });
    await eventually(() => expect(run.signal.messagesTo(hidden.uuid)).toEqual(['hi hidden']));
    run.signal.userSays({ from: FRIEND, text: 'three' });
    await eventually(() => expect(run.signal.messagesTo(FRIEND)).toEqual(['hi friend']));
  });

  it('allowFrom @username: Signal’s servers say whose it is; a stranger gets a pairing code', async () => {
    const signal = await startFakeSignalCli({ keepAliveMs: 200 });
    const alice = signal.addPerson(person(2001, { username: 'alice.42' }));
    const run = await startSignalGateway({ allowFrom: ['@alice.42'] }, signal);
    open.push(run);
    await waitState(run.gateway, 'running');
    run.llm.enqueue({ text: 'hello alice' });
    signal.userSays({ from: alice, text: 'hi' });
    await eventually(() => expect(signal.messagesTo(alice)).toEqual(['hello alice']));
    signal.userSays({ from: STRANGER, text: 'hi too' });
    await eventually(() => expect(signal.messagesTo(STRANGER).join('\n')).toMatch(/pairing code/i));
    expect(run.llm.requests).toHaveLength(1);
  });

  it('dm.enabled false ignores direct messages; dm.policy "open" lets anyone in', async () => {
    const off = await start({ dm: { enabled: false } });
    off.signal.userSays({ from: OWNER, text: 'anyone?' });
    await quiet();
    expect(off.llm.requests).toHaveLength(0);
    expect(off.signal.sent).toEqual([]);

    const openDm = await start({ allowFrom: [], dm: { policy: 'open' } });
    openDm.llm.enqueue({ text: 'Welcome, stranger.' });
    openDm.signal.userSays({ from: STRANGER, text: 'hello' });
    await eventually(() => expect(openDm.signal.messagesTo(STRANGER)).toEqual(['Welcome, stranger.']));
  });

  it('skips receipts, typing, reactions and the account’s own messages', async () => {
    const run = await start();
    const envelope = (extra: Record<string, unknown>) => ({
      envelope: { sourceNumber: OWNER.number, sourceUuid: OWNER.uuid, timestamp: Date.now(), ...extra },
      account: BOT.number,
    });
    run.signal.push(envelope({ receiptMessage: { type: 'DELIVERY', timestamps: [1] } }));
    run.signal.push(envelope({ typingMessage: { action: 'STARTED', timestamp: 1 } }));
    run.signal.push(envelope({ dataMessage: { timestamp: 5, reaction: { emoji: '👍', targetSentTimestamp: 1 } } }));
    run.signal.push({
      envelope: {
        sourceNumber: BOT.number,
        sourceUuid: BOT.uuid,
        timestamp: 9,
        dataMessage: { timestamp: 9, message: 'me' },
      },
    });
    run.llm.enqueue({ text: 'only this' });
    run.signal.userSays({ from: OWNER, text: 'a real one' });
    await eventually(() => expect(run.signal.messagesTo(OWNER)).toEqual(['only this']));
    expect(run.llm.requests).toHaveLength(1);
    // Not even a pairing code to itself.
    expect(run.signal.sentTo(BOT)).toEqual([]);
  });
});

describe('signal groups', () => {
  it('answers in a listed group when @mentioned, with what was said before as context; ignores the rest', async () => {
    const signal = await startFakeSignalCli({ keepAliveMs: 200 });
    const team = signal.addGroup('Team', [OWNER, FRIEND]);
    const other = signal.addGroup('Other', [OWNER]);
    const run = await startSignalGateway({ allowFrom: [OWNER.number, FRIEND.number], ...groupsOn(team) }, signal);
    open.push(run);
    await waitState(run.gateway, 'running');
    run.llm.enqueue({ text: 'I would pick Tuesday.' });
    signal.userSays({ from: FRIEND, groupId: team, text: 'shall we meet Tuesday or Friday?' });
    signal.userSays({
      from: OWNER,
      groupId: other,
      text: '\uFFFC hello there',
      mentions: [{ person: BOT, start: 0, length: 1 }],
    });
    signal.userSays({
      from: OWNER,
      groupId: team,
      text: '\uFFFC what do you think?',
      mentions: [{ person: BOT, start: 0, length: 1 }],
    });
    await eventually(() => expect(signal.messagesTo(team)).toEqual(['I would pick Tuesday.']));
    expect(signal.sentTo(team)[0]?.groupId).toBe(team);
    const sent = lastUserText(run);
    expect(sent).toContain('what do you think?');
    expect(sent).not.toContain('\uFFFC');
    expect(sent).toContain('Friend: shall we meet Tuesday or Friday?');
    await quiet();
    expect(run.llm.requests).toHaveLength(1);
    expect(signal.messagesTo(other)).toEqual([]);
  });

  it('a reply to the bot’s message counts as addressing it; other people’s mentions read @number', async () => {
    const signal = await startFakeSignalCli({ keepAliveMs: 200 });
    const team = signal.addGroup('Team', [OWNER, FRIEND]);
    const run = await startSignalGateway(groupsOn(team), signal);
    open.push(run);
    await waitState(run.gateway, 'running');
    run.llm.enqueue({ text: 'First.' }, { text: 'Second.' });
    signal.userSays({
      from: OWNER,
      groupId: team,
      text: '\uFFFC hi',
      mentions: [{ person: BOT, start: 0, length: 1 }],
    });
    await eventually(() => expect(signal.messagesTo(team)).toEqual(['First.']));
    const first = signal.sentTo(team)[0];
    signal.userSays({
      from: OWNER,
      groupId: team,
      text: 'tell \uFFFC about it',
      mentions: [{ person: FRIEND, start: 5, length: 1 }],
      quote: { timestamp: first?.timestamp ?? 0, author: BOT },
    });
    await eventually(() => expect(signal.messagesTo(team)).toEqual(['First.', 'Second.']));
    expect(lastUserText(run)).toContain(`tell @${FRIEND.number} about it`);
  });

  it('group.requireMention false answers every message of an admitted sender; strangers stay unanswered', async () => {
    const signal = await startFakeSignalCli({ keepAliveMs: 200 });
    const team = signal.addGroup('Team', [OWNER, STRANGER]);
    const run = await startSignalGateway(groupsOn(team, { requireMention: false }), signal);
    open.push(run);
    await waitState(run.gateway, 'running');
    run.llm.enqueue({ text: 'Noted.' });
    signal.userSays({ from: STRANGER, groupId: team, text: 'let me in' });
    signal.userSays({ from: OWNER, groupId: team, text: 'buy milk' });
    await eventually(() => expect(signal.messagesTo(team)).toEqual(['Noted.']));
    await quiet();
    expect(run.llm.requests).toHaveLength(1);
    expect(signal.messagesTo(STRANGER)).toEqual([]);
  });

  it('groups are off by default (upstream’s group.enabled false); group.policy "open" serves every group', async () => {
    const signal = await startFakeSignalCli({ keepAliveMs: 200 });
    const team = signal.addGroup('Team', [OWNER]);
    const off = await startSignalGateway({}, signal);
    open.push(off);
    await waitState(off.gateway, 'running');
    const mention = { mentions: [{ person: BOT, start: 0, length: 1 }] };
    signal.userSays({ from: OWNER, groupId: team, text: '\uFFFC hi', ...mention });
    await quiet();
    expect(off.llm.requests).toHaveLength(0);
    await off.gateway.shutdown('next');

    const second = await startFakeSignalCli({ keepAliveMs: 200 });
    const any = second.addGroup('Any', [OWNER]);
    const run = await startSignalGateway({ group: { enabled: true, policy: 'open' } }, second);
    open.push(run);
    await waitState(run.gateway, 'running');
    run.llm.enqueue({ text: 'Here.' });
    second.userSays({ from: OWNER, groupId: any, text: '\uFFFC hi', ...mention });
    await eventually(() => expect(second.messagesTo(any)).toEqual(['Here.']));
  });
});

describe('signal connection', () => {
  it('says how to start the daemon when none answers, and connects once it does', async () => {
    const signal = await startFakeSignalCli({ keepAliveMs: 200 });
    signal.drop();
    const run = await startSignalGateway({}, signal);
    open.push(run);
    await eventually(async () =>
      expect((await healthOf(run.gateway)).channelDetails.signal?.error).toContain(
        `signal-cli -a ${BOT.number} daemon --http 127.0.0.1:${signal.port} --receive-mode on-connection`,
      ),
    );
    run.llm.enqueue({ text: 'Up now.' });
    run.signal.userSays({ from: OWNER, text: 'are you there?' });
    signal.restore();
    await waitState(run.gateway, 'running');
    await eventually(() => expect(signal.messagesTo(OWNER)).toEqual(['Up now.']));
  });

  it('reconnects when the daemon stops and starts again; a message redelivered after that is answered once', async () => {
    const run = await start();
    run.llm.enqueue({ text: 'one' }, { text: 'two' }, { text: 'three?!' });
    const timestamp = run.signal.userSays({ from: OWNER, text: 'first' });
    await eventually(() => expect(run.signal.messagesTo(OWNER)).toEqual(['one']));
    run.signal.drop();
    await eventually(async () => expect((await healthOf(run.gateway)).channels.signal).not.toBe('running'));
    run.signal.userSays({ from: OWNER, text: 'while it was down' });
    run.signal.userSays({ from: OWNER, text: 'first', timestamp });
    run.signal.restore();
    await eventually(() => expect(run.signal.messagesTo(OWNER)).toEqual(['one', 'two']), 10_000);
    await quiet();
    expect(run.llm.requests).toHaveLength(2);
  });

  it('a send signal-cli refuses (rate limit) is reported and retried, not lost', async () => {
    const run = await start({ reactEmoji: '' });
    run.signal.failNext('send', { code: -5, message: 'Failed to send message due to rate limiting' });
    run.llm.enqueue({ text: 'eventually' });
    run.signal.userSays({ from: OWNER, text: 'hi' });
    await eventually(() => expect(run.signal.messagesTo(OWNER)).toEqual(['eventually']), 10_000);
    expect(run.signal.calls.filter((c) => c.method === 'send')).toHaveLength(2);
  });
});

describe('signal setup', () => {
  it('names the key when phoneNumber is missing or not a number, and refuses a daemon on another machine', () => {
    expect(() => signalChannel.parse({ enabled: true })).toThrow(/channels\.signal\.phoneNumber is not set/);
    expect(() => signalChannel.parse({ enabled: true, phoneNumber: '0151 1234' })).toThrow(/international format/);
    expect(() =>
      signalChannel.parse({ enabled: true, phoneNumber: '+4915112345678', daemonHost: '192.168.1.5' }),
    ).toThrow(/daemonHost must be this machine/);
  });

  it('verify: pass with the account’s UUID when the daemon knows it, warn when no daemon answers', async () => {
    const signal = await startFakeSignalCli();
    try {
      const block = { enabled: true, ...signalSettings(signal) };
      expect(await signalChannel.verify?.(block)).toMatchObject({
        status: 'pass',
        identity: { name: BOT.number, account: BOT.uuid },
      });
      expect(await signalChannel.verify?.({ ...block, phoneNumber: '+15559999999' })).toMatchObject({ status: 'fail' });
      signal.drop();
      expect(await signalChannel.verify?.(block)).toMatchObject({ status: 'warn' });
    } finally {
      await signal.close();
    }
  });
});
