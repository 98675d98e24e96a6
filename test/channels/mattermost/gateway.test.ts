/** Mattermost behaviours beyond the contract, through a real gateway, the real @mattermost/client and the fake server. */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { mattermostChannel } from '../../../src/channels/mattermost/index.js';
import { eventually } from '../contract.js';
import { BOT, startFakeMattermost } from './fake-mattermost.js';
import {
  healthOf,
  type MattermostGateway,
  OWNER,
  OWNER_DM,
  startMattermostGateway,
  TOWN,
  waitState,
} from './helpers.js';
import { visibleText } from './mattermost-markdown.js';

const open: MattermostGateway[] = [];
afterEach(async () => {
  for (const run of open.splice(0)) await run.close();
});

async function start(settings: Record<string, unknown> = {}) {
  const run = await startMattermostGateway(settings);
  open.push(run);
  await waitState(run.gateway, 'running');
  return run;
}

const mention = `@${BOT.username}`;
const lastUserText = (run: MattermostGateway, n = -1) =>
  JSON.stringify((run.llm.requests.at(n)?.body.messages as unknown[] | undefined)?.at(-1));
const requestText = (run: MattermostGateway, n = -1) => JSON.stringify(run.llm.requests.at(n)?.body.messages);
const shown = (run: MattermostGateway, channelId: string) =>
  run.mm.messagesIn(channelId).map((post) => visibleText(post.message));
const quiet = () => new Promise((resolve) => setTimeout(resolve, 400));
const dm = { channelId: OWNER_DM, kind: 'dm' as const, user: OWNER };

describe('mattermost channel', () => {
  it('answers a channel post when @mentioned, in a thread under it; groupPolicyInThread "open" continues the thread', async () => {
    const run = await start({ groupPolicyInThread: 'open' });
    run.mm.userSays({ channelId: TOWN, user: OWNER, text: 'just chatting among humans' });
    await quiet();
    expect(run.llm.requests).toHaveLength(0);

    run.llm.enqueue({ text: 'It is **4**.' }, { text: 'That is 6.' });
    const root = run.mm.userSays({ channelId: TOWN, user: OWNER, text: `${mention} what is 2+2?` });
    await eventually(() => expect(run.mm.messagesIn(TOWN)).toMatchObject([{ message: 'It is **4**.', root_id: root }]));
    expect(lastUserText(run)).toContain('what is 2+2?');
    expect(lastUserText(run)).not.toContain(mention);

    run.mm.userSays({ channelId: TOWN, user: OWNER, text: 'and 3+3?', rootId: root });
    await eventually(() => expect(shown(run, TOWN)).toEqual(['It is 4.', 'That is 6.']));
    expect(run.mm.messagesIn(TOWN)[1]?.root_id).toBe(root);
    // The thread is one conversation: the second turn sees the first.
    expect(requestText(run)).toContain('what is 2+2?');
  });

  it('under groupPolicy "mention" (the default for threads too) a thread reply without a mention is not answered', async () => {
    const run = await start();
    run.llm.enqueue({ text: 'Hello.' });
    const root = run.mm.userSays({ channelId: TOWN, user: OWNER, text: `hi ${mention}` });
    await eventually(() => expect(shown(run, TOWN)).toEqual(['Hello.']));
    run.mm.userSays({ channelId: TOWN, user: OWNER, text: 'thanks', rootId: root });
    await quiet();
    expect(run.llm.requests).toHaveLength(1);
  });

  it('gives the agent the thread so far when first mentioned inside a thread someone else started', async () => {
    const run = await start();
    const alice = { id: 'aliceuserid000000000000001', username: 'alice' };
    const root = run.mm.userSays({ channelId: TOWN, user: alice, text: 'Should we ship on Friday?' });
    run.mm.userSays({ channelId: TOWN, user: alice, text: 'I think Monday is safer.', rootId: root });
    run.llm.enqueue({ text: 'Monday.' });
    run.mm.userSays({ channelId: TOWN, user: OWNER, text: `${mention} what do you think?`, rootId: root });
    await eventually(() => expect(run.mm.messagesIn(TOWN)).toMatchObject([{ message: 'Monday.', root_id: root }]));
    const sent = lastUserText(run);
    expect(sent).toContain('@alice: Should we ship on Friday?');
    expect(sent).toContain('@alice: I think Monday is safer.');
    expect(sent).toContain('what do you think?');
    expect(run.llm.requests).toHaveLength(1);
  });

  it('downloads an attached image with the token and shows it to the model', async () => {
    const run = await start();
    run.llm.enqueue({ text: 'A tiny picture.' });
    const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 1, 2, 3]);
    run.mm.userSays({
      ...dm,
      text: 'what is this?',
      files: [{ name: 'cat.png', mimeType: 'image/png', content: png }],
    });
    await eventually(() => expect(shown(run, OWNER_DM)).toEqual(['A tiny picture.']));
    const sent = lastUserText(run);
    expect(sent).toContain('what is this?');
    expect(sent).toContain(`data:image/png;base64,${png.toString('base64')}`);
    const path = /\[image: ([^\]]+)\]/.exec(sent)?.[1] ?? '';
    expect(path.startsWith(join(run.dataDir, 'media', 'mattermost'))).toBe(true);
    expect(readFileSync(path)).toEqual(png);
  });

  it('sends a file from the message tool as an upload attached to a post', async () => {
    const run = await start();
    writeFileSync(join(run.workspace, 'report.txt'), 'quarterly numbers');
    run.llm.enqueue(
      { toolCalls: [{ name: 'message', arguments: { content: 'Here is the report.', media: ['report.txt'] } }] },
      { text: 'Sent it.' },
    );
    run.mm.userSays({ ...dm, text: 'the report, please' });
    await eventually(() => expect(shown(run, OWNER_DM)).toEqual(['', 'Here is the report.', 'Sent it.']));
    const [upload] = run.mm.messagesIn(OWNER_DM);
    expect(upload?.file_ids).toHaveLength(1);
    expect(run.mm.fileInfo(upload?.file_ids[0] ?? '')).toMatchObject({ name: 'report.txt', channel_id: OWNER_DM });
    expect(run.mm.fileContent(upload?.file_ids[0] ?? '')?.toString()).toBe('quarterly numbers');
  });

  it('catches up after a dropped connection, also in a channel it had not heard from; each post answered once', async () => {
    const run = await start({ allowFrom: [`@${OWNER.username}`, '@bob'] });
    run.llm.enqueue({ text: 'first answer' });
    run.mm.userSays({ ...dm, text: 'first' });
    await eventually(() => expect(shown(run, OWNER_DM)).toEqual(['first answer']));
    // The first turn has ended (its reply written) before the connection drops.
    await eventually(() => expect(run.gateway.agent().loop.isActive(`mattermost:${OWNER_DM}`)).toBe(false));

    run.mm.drop();
    await waitState(run.gateway, 'reconnecting');
    const bob = { id: 'bobuserid00000000000000001', username: 'bob' };
    run.mm.userSays({ ...dm, text: 'written while you were away' });
    run.mm.userSays({ channelId: 'dmbob000000000000000000001', kind: 'dm', user: bob, text: 'hello, first time' });
    // The two chats' turns run side by side: each answer follows what its chat said, not the order they reach the model.
    const answer = (body: Record<string, unknown>) => ({
      text: JSON.stringify(body.messages).includes('hello, first time') ? 'hi bob' : 'caught up',
    });
    run.llm.enqueue(answer, answer);
    run.mm.restore();

    await eventually(() => expect(shown(run, OWNER_DM)).toEqual(['first answer', 'caught up']), 10_000);
    await eventually(() => expect(shown(run, 'dmbob000000000000000000001')).toEqual(['hi bob']), 10_000);
    await waitState(run.gateway, 'running');
    await quiet();
    expect(run.llm.requests).toHaveLength(3);
    // The SDK did not reconnect on its own beside the channel manager: one live connection.
    expect(run.mm.connections()).toBe(1);
  });

  it('a post whose answer was lost is sent again with the same pending_post_id, so the chat shows it once', async () => {
    const run = await start();
    run.mm.loseNextPostAnswers(1);
    run.llm.enqueue({ text: 'Said once.' });
    run.mm.userSays({ ...dm, text: 'hello' });
    const creates = () => run.mm.callsTo('POST', /\/posts$/);
    await eventually(() => expect(creates().length).toBeGreaterThanOrEqual(2), 20_000);
    await eventually(() => expect(shown(run, OWNER_DM)).toEqual(['Said once.']));
    const [first, retry] = creates();
    expect(first?.body.pending_post_id).toEqual(expect.any(String));
    expect(retry?.body.pending_post_id).toBe(first?.body.pending_post_id);
  });

  it('with teamId serves only that team’s channels; direct messages still work', async () => {
    const run = await start({ teamId: 'teamA0000000000000000000t1' });
    run.mm.userSays({ channelId: TOWN, user: OWNER, text: `${mention} other team` });
    await quiet();
    expect(run.llm.requests).toHaveLength(0);
    run.llm.enqueue({ text: 'Team A here.' }, { text: 'Private hello.' });
    run.mm.userSays({
      channelId: 'teamAchan00000000000000001',
      teamId: 'teamA0000000000000000000t1',
      user: OWNER,
      text: `${mention} hi`,
    });
    await eventually(() => expect(shown(run, 'teamAchan00000000000000001')).toEqual(['Team A here.']));
    run.mm.userSays({ ...dm, text: 'hello' });
    await eventually(() => expect(shown(run, OWNER_DM)).toEqual(['Private hello.']));
  });

  it('shows "typing…" while a turn runs, and a reply never pings the whole channel', async () => {
    const run = await start();
    run.llm.enqueue({ text: 'Hey @channel and @all, look!', delayMs: 300 });
    run.mm.userSays({ ...dm, text: 'announce it' });
    await eventually(() => expect(run.mm.messagesIn(OWNER_DM)).toHaveLength(1));
    const [post] = run.mm.messagesIn(OWNER_DM);
    expect(post?.message).not.toMatch(/@(channel|all)\b/);
    expect(post?.message.replace(/\u200b/g, '')).toBe('Hey @channel and @all, look!');
    expect(run.mm.typing.map((t) => t.channelId)).toContain(OWNER_DM);
  });

  it('username allowFromMatchMode: bare allowFrom entries are usernames; a stranger gets a pairing code', async () => {
    const run = await start({ allowFrom: [], allowFromMatchMode: 'username', dm: { allowFrom: [OWNER.username] } });
    run.llm.enqueue({ text: 'Welcome, owner.' });
    run.mm.userSays({ ...dm, text: 'hi' });
    await eventually(() => expect(shown(run, OWNER_DM)).toEqual(['Welcome, owner.']));
    // A user whose *id* is the owner's username is still a stranger.
    const impostor = { id: OWNER.username, username: 'mallory' };
    run.mm.userSays({ channelId: 'dmmallory0000000000000001', kind: 'dm', user: impostor, text: 'let me in' });
    await eventually(() => expect(shown(run, 'dmmallory0000000000000001').join('\n')).toMatch(/pairing code/i));
    expect(run.llm.requests).toHaveLength(1);
  });
});

describe('mattermost policies', () => {
  it('dm.enabled false ignores direct messages; dm.policy "open" lets anyone in', async () => {
    const closed = await start({ dm: { enabled: false } });
    closed.mm.userSays({ ...dm, text: 'anyone?' });
    await quiet();
    expect(closed.llm.requests).toHaveLength(0);
    expect(closed.mm.messagesIn(OWNER_DM)).toEqual([]);

    const openDm = await start({ dm: { policy: 'open' } });
    const bob = { id: 'bobuserid00000000000000001', username: 'bob' };
    openDm.llm.enqueue({ text: 'Hi Bob.' });
    openDm.mm.userSays({ channelId: 'dmbob000000000000000000001', kind: 'dm', user: bob, text: 'hello' });
    await eventually(() => expect(shown(openDm, 'dmbob000000000000000000001')).toEqual(['Hi Bob.']));
  });

  it('groupPolicy "allowlist" answers every post in the listed channels only; replyInThread false answers flat', async () => {
    const run = await start({ groupPolicy: 'allowlist', groupAllowFrom: [TOWN], replyInThread: false });
    run.mm.userSays({ channelId: 'otherchannel00000000000001', user: OWNER, text: `${mention} not here` });
    await quiet();
    expect(run.llm.requests).toHaveLength(0);
    run.llm.enqueue({ text: 'Listed.' });
    run.mm.userSays({ channelId: TOWN, user: OWNER, text: 'no mention needed' });
    await eventually(() => expect(run.mm.messagesIn(TOWN)).toMatchObject([{ message: 'Listed.', root_id: '' }]));
  });
});

describe('mattermost setup mistakes', () => {
  it('stops with a clear error when the server rejects the token, without retrying', async () => {
    const run = await startMattermostGateway({ token: 'revoked-token' });
    open.push(run);
    await waitState(run.gateway, 'error');
    expect((await healthOf(run.gateway)).channelDetails.mattermost?.error).toContain(
      'Mattermost rejected channels.mattermost.token',
    );
    await quiet();
    expect(run.mm.callsTo('GET', /\/users\/me$/)).toHaveLength(1);
  });
});

describe('mattermost credentials check (the WebUI’s "check" button)', () => {
  it('passes with the bot’s name for a good token, fails for a refused one, warns when the server is not Mattermost', async () => {
    const mm = await startFakeMattermost();
    try {
      const block = (extra: Record<string, unknown>) => ({
        enabled: true,
        serverUrl: mm.url,
        token: mm.token,
        ...extra,
      });
      expect(await mattermostChannel.verify?.(block({}))).toMatchObject({
        status: 'pass',
        identity: { name: BOT.username, account: BOT.id },
      });
      expect(await mattermostChannel.verify?.(block({ token: 'wrong' }))).toMatchObject({ status: 'fail' });
      expect(await mattermostChannel.verify?.(block({ serverUrl: `${mm.url}/not-here` }))).toMatchObject({
        status: 'warn',
      });
    } finally {
      await mm.close();
    }
  });
});
