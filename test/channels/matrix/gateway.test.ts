/** Matrix behaviours beyond the contract, through a real gateway, the real matrix-js-sdk and the fake homeserver. */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { PairingStore } from '../../../src/channels/pairing.js';
import { eventually } from '../contract.js';
import { startFakeHomeserver } from './fake-homeserver.js';
import {
  healthOf,
  lastUserText,
  type MatrixGateway,
  OWNER,
  pause,
  STRANGER,
  shown,
  startMatrixGateway,
} from './helpers.js';

const open: MatrixGateway[] = [];
afterEach(async () => {
  for (const run of open.splice(0)) await run.close();
});

async function start(options: Parameters<typeof startMatrixGateway>[0] = {}) {
  const run = await startMatrixGateway(options);
  open.push(run);
  return run;
}

describe('matrix channel', () => {
  it('answers every message in a group room by default (groupPolicy "open"), as HTML with a plain body', async () => {
    const run = await start();
    const room = run.hs.createRoom({ members: [OWNER, '@bystander:localhost'] });
    run.llm.enqueue({ text: 'It is **noon** <sharp>.' });
    run.hs.userSays({ roomId: room, sender: OWNER, body: 'what time is it?' });
    await eventually(() => expect(shown(run.hs, room)).toEqual(['It is noon <sharp>.']));
    expect(run.hs.messagesIn(room)[0]?.content).toEqual({
      msgtype: 'm.text',
      body: 'It is noon <sharp>.',
      format: 'org.matrix.custom.html',
      formatted_body: '<p>It is <strong>noon</strong> &lt;sharp&gt;.</p>',
      'm.mentions': {},
    });
    expect(lastUserText(run.llm)).toContain('what time is it?');
  });

  it('with groupPolicy "mention", answers only when mentioned or replied to, without the mention', async () => {
    const run = await start({ matrix: { groupPolicy: 'mention' } });
    const room = run.hs.createRoom({ members: [OWNER, '@bystander:localhost'] });
    run.hs.userSays({ roomId: room, sender: OWNER, body: 'just chatting among humans' });
    await pause(500);
    expect(run.llm.requests).toHaveLength(0);

    run.llm.enqueue({ text: 'It is noon.' }, { text: 'You are welcome.' });
    run.hs.userSays({
      roomId: room,
      sender: OWNER,
      body: 'Nano: what time is it?',
      content: {
        format: 'org.matrix.custom.html',
        formatted_body: '<a href="https://matrix.to/#/@nanobot:localhost">Nano</a>: what time is it?',
        'm.mentions': { user_ids: ['@nanobot:localhost'] },
      },
    });
    await eventually(() => expect(shown(run.hs, room)).toEqual(['It is noon.']));
    expect(lastUserText(run.llm)).toContain('what time is it?');
    expect(lastUserText(run.llm)).not.toContain('Nano');

    const answer = run.hs.messagesIn(room)[0]?.eventId;
    run.hs.userSays({
      roomId: room,
      sender: OWNER,
      body: 'thanks',
      content: { 'm.relates_to': { 'm.in_reply_to': { event_id: answer } } },
    });
    await eventually(() => expect(shown(run.hs, room)).toEqual(['It is noon.', 'You are welcome.']));
  });

  it('joins rooms it is invited to by allowed users only, then talks there', async () => {
    const run = await start();
    const spam = run.hs.createRoom({ bot: 'invite', inviter: STRANGER });
    const dm = run.hs.createRoom({ bot: 'invite', inviter: OWNER, isDirect: true });
    await eventually(() => expect(run.hs.botMembership(dm)).toBe('join'));
    await pause(300);
    expect(run.hs.botMembership(spam)).toBe('invite');
    expect(run.hs.requests.filter((r) => r.kind === 'join').map((r) => r.path)).toEqual([
      `/_matrix/client/v3/join/${dm}`,
    ]);

    run.llm.enqueue({ text: 'Hello in here.' });
    run.hs.userSays({ roomId: dm, sender: OWNER, body: 'hi' });
    await eventually(() => expect(shown(run.hs, dm)).toEqual(['Hello in here.']));
  });

  it('ignores its own messages and what was said before it started', async () => {
    const hs = await startFakeHomeserver();
    const room = hs.createRoom({ members: [OWNER] });
    hs.userSays({ roomId: room, sender: OWNER, body: 'an old question from yesterday' });
    const run = await start({ hs });
    hs.userSays({ roomId: room, sender: hs.botId, body: 'a message the bot sent from another device' });
    run.llm.enqueue({ text: 'Fresh answer.' });
    hs.userSays({ roomId: room, sender: OWNER, body: 'a new question' });
    await eventually(() =>
      expect(shown(hs, room)).toEqual(['a message the bot sent from another device', 'Fresh answer.']),
    );
    await pause(300);
    expect(run.llm.requests).toHaveLength(1);
    const asked = JSON.stringify(run.llm.requests[0]?.body.messages);
    expect(asked).toContain('a new question');
    expect(asked).not.toContain('old question');
    expect(asked).not.toContain('another device');
  });

  it('with e2eeEnabled false, tells an allowed user once that it cannot read an encrypted room, no turn', async () => {
    const run = await start({ matrix: { e2eeEnabled: false } });
    const room = run.hs.createRoom({ members: [OWNER], encrypted: true });
    const encrypted = { algorithm: 'm.megolm.v1.aes-sha2', ciphertext: 'AwgAEnAC', session_id: 's', device_id: 'D' };
    run.hs.userSays({ roomId: room, sender: OWNER, type: 'm.room.encrypted', content: encrypted });
    run.hs.userSays({ roomId: room, sender: OWNER, type: 'm.room.encrypted', content: encrypted });
    await eventually(() => expect(shown(run.hs, room)).toHaveLength(1));
    await pause(300);
    expect(shown(run.hs, room)[0]).toMatch(/end-to-end encrypted.*cannot read/);
    expect(run.hs.messagesIn(room)[0]?.content.msgtype).toBe('m.notice');
    expect(run.llm.requests).toHaveLength(0);
  });

  it('gives a stranger in a direct room a pairing code; once approved they are answered', async () => {
    const run = await start();
    const dm = run.hs.createRoom({ members: [STRANGER] });
    run.hs.userSays({ roomId: dm, sender: STRANGER, body: 'hello?' });
    await eventually(() => expect(shown(run.hs, dm).join('\n')).toMatch(/pairing code/i));
    const pairing = new PairingStore({ dir: join(run.dataDir, 'pairing') });
    const [pending] = pairing.listPending();
    expect(pending).toMatchObject({ channel: 'matrix', senderId: STRANGER, username: 'stranger', chatId: dm });
    await pairing.approve(pending?.code ?? '');
    run.llm.enqueue({ text: 'Welcome aboard.' });
    run.hs.userSays({ roomId: dm, sender: STRANGER, body: 'and now?' });
    await eventually(() => expect(shown(run.hs, dm).at(-1)).toBe('Welcome aboard.'));
    expect(run.llm.requests).toHaveLength(1);
  });

  it('answers a message in a thread inside that thread', async () => {
    const run = await start();
    const room = run.hs.createRoom({ members: [OWNER, '@bystander:localhost'] });
    const root = run.hs.userSays({ roomId: room, sender: OWNER, body: 'a topic' });
    run.llm.enqueue({ text: 'On the topic.' }, { text: 'In the thread.' });
    await eventually(() => expect(shown(run.hs, room)).toEqual(['On the topic.']));
    run.hs.userSays({
      roomId: room,
      sender: OWNER,
      body: 'a detail',
      content: { 'm.relates_to': { rel_type: 'm.thread', event_id: root, is_falling_back: true } },
    });
    await eventually(() => expect(shown(run.hs, room)).toHaveLength(2));
    expect(run.hs.messagesIn(room)[1]?.content['m.relates_to']).toMatchObject({ rel_type: 'm.thread', event_id: root });
  });

  it('downloads an image a user sends and shows it to the model', async () => {
    const run = await start();
    const room = run.hs.createRoom({ members: [OWNER] });
    const jpeg = Buffer.from([0xff, 0xd8, 0xff, 0xe0, 1, 2, 3, 4]);
    const url = run.hs.upload(jpeg);
    run.llm.enqueue({ text: 'A tiny picture.' });
    run.hs.userSays({
      roomId: room,
      sender: OWNER,
      content: {
        msgtype: 'm.image',
        body: 'what is this?',
        filename: 'cat.jpg',
        url,
        info: { mimetype: 'image/jpeg', size: jpeg.length },
      },
    });
    await eventually(() => expect(shown(run.hs, room)).toEqual(['A tiny picture.']));
    const sent = lastUserText(run.llm);
    expect(sent).toContain('what is this?');
    expect(sent).toContain(`data:image/jpeg;base64,${jpeg.toString('base64')}`);
    const path = /\[image: ([^\]]+)\]/.exec(sent)?.[1] ?? '';
    expect(readFileSync(path)).toEqual(jpeg);
  });

  it('uploads a file from the message tool and sends it as m.file', async () => {
    const run = await start();
    const room = run.hs.createRoom({ members: [OWNER] });
    writeFileSync(join(run.workspace, 'report.txt'), 'quarterly numbers');
    run.llm.enqueue(
      { toolCalls: [{ name: 'message', arguments: { content: 'Here is the report.', media: ['report.txt'] } }] },
      { text: 'Sent it.' },
    );
    run.hs.userSays({ roomId: room, sender: OWNER, body: 'send me the report' });
    await eventually(() => expect(run.hs.messagesIn(room)).toHaveLength(3));
    const file = run.hs.messagesIn(room).find((m) => m.content.msgtype === 'm.file')?.content;
    expect(file).toMatchObject({
      body: 'report.txt',
      filename: 'report.txt',
      info: { mimetype: 'text/plain', size: 17 },
    });
    expect(run.hs.uploaded(String(file?.url))?.toString()).toBe('quarterly numbers');
    expect(shown(run.hs, room)).toEqual(['report.txt', 'Here is the report.', 'Sent it.']);
  });

  it('recovers from homeserver errors during sync and catches up on what was said meanwhile', async () => {
    const run = await start();
    const room = run.hs.createRoom({ members: [OWNER] });
    run.llm.enqueue({ text: 'first' }, { text: 'second' });
    run.hs.userSays({ roomId: room, sender: OWNER, body: 'one' });
    await eventually(() => expect(shown(run.hs, room)).toEqual(['first']));
    const failure = { status: 502, errcode: 'M_UNKNOWN', error: 'Bad Gateway' };
    run.hs.failNext('sync', failure, failure, failure);
    await eventually(async () => expect((await healthOf(run.gateway)).channels.matrix).not.toBe('running'));
    run.hs.userSays({ roomId: room, sender: OWNER, body: 'two' });
    await eventually(() => expect(shown(run.hs, room)).toEqual(['first', 'second']), 10_000);
    const health = await healthOf(run.gateway);
    expect(health.channels.matrix).toBe('running');
    expect(health.channelDetails.matrix?.restarts).toBeGreaterThanOrEqual(1);
    // Reconnects resume from the last sync token: only the very first sync started from nothing.
    const syncs = run.hs.requests.filter((r) => r.kind === 'sync');
    expect(syncs.map((r) => r.query.has('since'))).toEqual([false, ...syncs.slice(1).map(() => true)]);
  });
});
