/** Teams behaviours beyond the contract, through a real gateway, jose and the loopback fake Bot Framework. */
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { referencesPath } from '../../../src/channels/msteams/references.js';
import { eventually } from '../contract.js';
import { BOT_NAME } from './fake-teams.js';
import {
  dm,
  healthOf,
  lastUserText,
  OWNER,
  OWNER_DM,
  quiet,
  restartGateway,
  shown,
  startTeamsGateway,
  type TeamsGateway,
  waitState,
} from './helpers.js';

const open: TeamsGateway[] = [];
afterEach(async () => {
  for (const run of open.splice(0)) await run.close();
});

async function start(settings: Record<string, unknown> = {}, channels: Record<string, unknown> = {}) {
  const run = await startTeamsGateway(settings, channels);
  open.push(run);
  await waitState(run.gateway, 'running');
  return run;
}

const GROUP = '19:group-chat-0001@thread.v2';
const CHANNEL = '19:general-0001@thread.tacv2';
const BOB = { aadObjectId: 'aad-bob-0002', name: 'Bob Builder', upn: 'bob@contoso.example' };

describe('msteams channel', () => {
  it('answers a 1:1 message as a reply to it, in Teams HTML, with "typing…" first and the bot’s token', async () => {
    const run = await start();
    run.llm.enqueue({ text: '## Plan\n\nShip **today**, then ~~rest~~ celebrate.' });
    await run.teams.userSays(dm('what now?', { id: 'user-msg-1' }));
    await eventually(() => expect(shown(run, OWNER_DM)).toEqual(['Plan\nShip today, then rest celebrate.']));
    const [reply] = run.teams.messagesIn(OWNER_DM);
    expect(reply).toMatchObject({ replyToId: 'user-msg-1', textFormat: 'xml' });
    expect(reply?.text).toBe(
      '<p><strong>Plan</strong></p><p>Ship <strong>today</strong>, then <strike>rest</strike> celebrate.</p>',
    );
    expect(reply?.authorization).toMatch(/^Bearer fake-bot-token-/);
    const kinds = run.teams.posted().map((activity) => activity.type);
    expect(kinds.indexOf('typing')).toBeGreaterThanOrEqual(0);
    expect(kinds.indexOf('typing')).toBeLessThan(kinds.indexOf('message'));
    expect(lastUserText(run)).toContain('what now?');
  });

  it('in a group chat answers only when @mentioned, with the mention taken out and other people’s kept', async () => {
    const run = await start({ allowFrom: [`@${OWNER.upn}`, `@${BOB.upn}`] });
    await run.teams.userSays({ conversationId: GROUP, conversationType: 'groupChat', user: BOB, text: 'lunch?' });
    await quiet();
    expect(run.llm.requests).toHaveLength(0);

    run.llm.enqueue({ text: 'Noon works.' });
    await run.teams.userSays({
      conversationId: GROUP,
      conversationType: 'groupChat',
      user: BOB,
      text: 'ask <at>Olivia Owner</at> about noon &amp; tell me',
      mentionBot: true,
    });
    await eventually(() => expect(shown(run, GROUP)).toEqual(['Noon works.']));
    const sent = lastUserText(run);
    expect(sent).toContain('ask @Olivia Owner about noon & tell me');
    expect(sent).not.toContain(`<at>${BOT_NAME}</at>`);
    expect(sent).not.toContain('&amp;');
  });

  it('in a channel answers inside the post’s thread, each thread its own session; replyInThread false posts anew', async () => {
    const run = await start();
    run.llm.enqueue({ text: 'Thread one answer.' }, { text: 'Thread two answer.' });
    const thread = (root: string) => `${CHANNEL};messageid=${root}`;
    await run.teams.userSays({
      id: '1001',
      conversationId: thread('1001'),
      conversationType: 'channel',
      user: OWNER,
      text: 'first topic: apples',
      mentionBot: true,
    });
    await eventually(() => expect(shown(run, thread('1001'))).toEqual(['Thread one answer.']));
    expect(run.teams.messagesIn(thread('1001'))[0]?.replyToId).toBe('1001');
    await run.teams.userSays({
      id: '2002',
      conversationId: thread('2002'),
      conversationType: 'channel',
      user: OWNER,
      text: 'second topic',
      mentionBot: true,
    });
    await eventually(() => expect(shown(run, thread('2002'))).toEqual(['Thread two answer.']));
    // A new thread is a new conversation for the agent: the first thread's words are not in its prompt.
    expect(JSON.stringify(run.llm.requests[1]?.body.messages)).not.toContain('apples');

    const flat = await start({ replyInThread: false });
    flat.llm.enqueue({ text: 'A new post.' });
    await flat.teams.userSays({
      id: '3003',
      conversationId: thread('3003'),
      conversationType: 'channel',
      user: OWNER,
      text: 'answer at the top',
      mentionBot: true,
    });
    await eventually(() => expect(shown(flat, CHANNEL)).toEqual(['A new post.']));
    expect(flat.teams.messagesIn(CHANNEL)[0]?.replyToId).toBeUndefined();
  });

  it('groupPolicy allowlist: answers every message in a listed channel, none elsewhere', async () => {
    const run = await start({ groupPolicy: 'allowlist', groupAllowFrom: [CHANNEL] });
    run.llm.enqueue({ text: 'Heard you.' });
    await run.teams.userSays({
      conversationId: '19:other@thread.tacv2;messageid=9',
      conversationType: 'channel',
      user: OWNER,
      text: 'not here',
      mentionBot: true,
    });
    await run.teams.userSays({
      conversationId: `${CHANNEL};messageid=10`,
      conversationType: 'channel',
      user: OWNER,
      text: 'no mention needed',
    });
    await eventually(() => expect(shown(run, `${CHANNEL};messageid=10`)).toEqual(['Heard you.']));
    await quiet();
    expect(run.llm.requests).toHaveLength(1);
  });

  it('an @mention alone gives the agent mentionOnlyResponse; an empty one ignores it', async () => {
    const run = await start();
    run.llm.enqueue({ text: 'Hello!' });
    await run.teams.userSays(dm('', { mentionBot: true }));
    await eventually(() => expect(shown(run, OWNER_DM)).toEqual(['Hello!']));
    expect(lastUserText(run)).toContain('Hi — what can I help with?');

    const silent = await start({ mentionOnlyResponse: '' });
    await silent.teams.userSays(dm('', { mentionBot: true }));
    await quiet();
    expect(silent.llm.requests).toHaveLength(0);
  });

  it('reaches a 1:1 chat after a restart (cron, message tool); the saved references are private', async () => {
    const run = await start({ allowFrom: [`@${OWNER.upn}`, `@${BOB.upn}`] });
    run.llm.enqueue({ text: 'noted' }, { text: 'group noted' });
    await run.teams.userSays(dm('remind me later'));
    await run.teams.userSays({
      conversationId: GROUP,
      conversationType: 'groupChat',
      user: BOB,
      text: 'hi',
      mentionBot: true,
    });
    await eventually(() => expect(shown(run, GROUP)).toEqual(['group noted']));

    await restartGateway(run);
    await waitState(run.gateway, 'running');
    run.gateway.bus.publishOutbound({ channel: 'msteams', chatId: OWNER_DM, content: 'Your **reminder**.' });
    await eventually(() => expect(shown(run, OWNER_DM)).toEqual(['noted', 'Your reminder.']));

    const path = referencesPath(run.files.dataDir);
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(statSync(join(run.files.dataDir, 'msteams')).mode & 0o777).toBe(0o700);
    const saved = JSON.parse(readFileSync(path, 'utf8')) as { conversations: Record<string, unknown> };
    // pruneNonPersonalRefs (upstream's default): the group chat is not kept across restarts.
    expect(Object.keys(saved.conversations)).toEqual([OWNER_DM]);
    expect(saved.conversations[OWNER_DM]).toMatchObject({
      serviceUrl: run.teams.serviceUrl,
      conversationType: 'personal',
      user: { id: OWNER.aadObjectId, upn: OWNER.upn },
    });
    expect(readFileSync(path, 'utf8')).not.toContain('fake-bot-token');
  });

  it('keeps replies through an outage longer than the router’s retries, and the endpoint stays up meanwhile', async () => {
    const run = await start({}, { sendMaxRetries: 0 });
    run.llm.enqueue({ text: 'before' });
    await run.teams.userSays(dm('hello'));
    await eventually(() => expect(shown(run, OWNER_DM)).toEqual(['before']));
    run.teams.drop();
    run.llm.enqueue({ text: 'answer after the outage' });
    await run.teams.userSays(dm('are you there?'));
    run.gateway.bus.publishOutbound({ channel: 'msteams', chatId: OWNER_DM, content: 'queued note' });
    // Each message is tried, refused and tried again (the connector client retries, not the router).
    await eventually(() => expect(run.teams.refusedWhileDropped()).toBeGreaterThanOrEqual(4), 10_000);
    expect((await healthOf(run.gateway)).channels.msteams).toBe('running');
    run.teams.restore();
    await eventually(
      () => expect(shown(run, OWNER_DM).sort()).toEqual(['answer after the outage', 'before', 'queued note']),
      15_000,
    );
  });

  it('downloads a pasted image with the bot’s token and a shared file without it, and shows both to the model', async () => {
    const run = await start();
    const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 7, 7, 7]);
    const image = run.teams.serveFile('pasted.png', png);
    const doc = run.teams.serveFile('notes.txt', Buffer.from('meeting notes'));
    run.llm.enqueue({ text: 'Got both.' });
    await run.teams.userSays(
      dm('look at these', {
        attachments: [
          { contentType: 'image/png', contentUrl: image.botUrl },
          {
            contentType: 'application/vnd.microsoft.teams.file.download.info',
            name: 'notes.txt',
            content: { downloadUrl: doc.shareUrl, uniqueId: 'u1', fileType: 'txt' },
          },
          { contentType: 'text/html', content: '<p>look at these</p>' },
        ],
      }),
    );
    await eventually(() => expect(shown(run, OWNER_DM)).toEqual(['Got both.']));
    const sent = lastUserText(run);
    expect(sent).toContain(`data:image/png;base64,${png.toString('base64')}`);
    const notes = /\[file: ([^\]]+)\]/.exec(sent)?.[1] ?? '';
    expect(notes.startsWith(join(run.files.dataDir, 'media', 'msteams'))).toBe(true);
    expect(readFileSync(notes, 'utf8')).toBe('meeting notes');
    expect(run.teams.stats.fileRequests).toEqual(['/files/pasted.png with token', '/share/notes.txt without token']);
  });

  it('sends an image from the message tool inline; a file it cannot carry is named instead', async () => {
    const run = await start();
    const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 1, 2, 3]);
    writeFileSync(join(run.files.workspace, 'chart.png'), png);
    writeFileSync(join(run.files.workspace, 'report.pdf'), 'pdf');
    run.llm.enqueue(
      { toolCalls: [{ name: 'message', arguments: { content: 'The chart.', media: ['chart.png', 'report.pdf'] } }] },
      { text: 'Sent.' },
    );
    await run.teams.userSays(dm('the chart please'));
    await eventually(() => expect(shown(run, OWNER_DM)).toContain('Sent.'));
    const withImage = run.teams.messagesIn(OWNER_DM).find((activity) => activity.attachments?.length);
    expect(withImage?.attachments?.[0]).toEqual({
      contentType: 'image/png',
      contentUrl: `data:image/png;base64,${png.toString('base64')}`,
      name: 'chart.png',
    });
    expect(shown(run, OWNER_DM)).toContain('(could not send report.pdf)');
  });

  it('ignores a tenant other than the configured one', async () => {
    const tenantId = '11111111-2222-3333-4444-555555555555';
    const run = await start({ tenantId });
    run.llm.enqueue({ text: 'for my tenant' });
    await run.teams.userSays(dm('from elsewhere', { tenantId: '99999999-2222-3333-4444-555555555555' }));
    await run.teams.userSays(dm('from home', { tenantId }));
    await eventually(() => expect(shown(run, OWNER_DM)).toEqual(['for my tenant']));
    expect(run.llm.requests).toHaveLength(1);
    expect(lastUserText(run)).toContain('from home');
  });

  it('stops with a clear error when Microsoft rejects the client secret, without retrying', async () => {
    const run = await startTeamsGateway({ appPassword: 'wrong-secret-value' });
    open.push(run);
    await waitState(run.gateway, 'error');
    const details = (await healthOf(run.gateway)).channelDetails.msteams;
    expect(details?.error).toContain('AADSTS7000215');
    expect(details?.error).toContain('appPassword');
    expect(details?.error).not.toContain('wrong-secret-value');
    await quiet();
    expect(run.teams.stats.tokenRequests).toBe(1);
  });
});
