/** Slack behaviours beyond the contract, through a real gateway, the real @slack/bolt and the fake Slack. */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { eventually } from '../contract.js';
import { BOT } from './fake-slack.js';
import { CHANNEL, DM, healthOf, OWNER, type SlackGateway, startSlackGateway, waitRunning } from './helpers.js';
import { assertSlackMrkdwn, visibleMrkdwn } from './mrkdwn.js';

const open: SlackGateway[] = [];
afterEach(async () => {
  for (const run of open.splice(0)) await run.close();
});

async function start(slack: Record<string, unknown> = {}) {
  const run = await startSlackGateway(slack);
  open.push(run);
  await waitRunning(run.gateway);
  return run;
}

const mention = `<@${BOT.userId}>`;
const requestText = (run: SlackGateway, n = -1) => JSON.stringify(run.llm.requests.at(n)?.body.messages);
const lastUserText = (run: SlackGateway, n = -1) =>
  JSON.stringify((run.llm.requests.at(n)?.body.messages as unknown[] | undefined)?.at(-1));
const shown = (run: SlackGateway, channel: string) => run.slack.messagesIn(channel).map((p) => visibleMrkdwn(p.text));
const quiet = () => new Promise((resolve) => setTimeout(resolve, 400));

describe('slack channel', () => {
  it('answers a channel mention in a thread under it, and a reply in that thread continues the conversation', async () => {
    const run = await start();
    run.llm.enqueue({ text: 'It is **4**.' }, { text: 'Yes, still 4.' });
    const root = run.slack.userSays({
      channel: CHANNEL,
      user: OWNER.id,
      text: `${mention} what is 2+2?`,
      appMention: true,
    });
    await eventually(() =>
      expect(run.slack.messagesIn(CHANNEL)).toMatchObject([{ text: 'It is *4*.', threadTs: root }]),
    );
    expect(lastUserText(run)).toContain('what is 2+2?');
    expect(lastUserText(run)).not.toContain(BOT.userId);

    run.slack.userSays({
      channel: CHANNEL,
      user: OWNER.id,
      text: `${mention} sure?`,
      threadTs: root,
      appMention: true,
    });
    await eventually(() => expect(shown(run, CHANNEL)).toEqual(['It is 4.', 'Yes, still 4.']));
    expect(run.slack.messagesIn(CHANNEL)[1]?.threadTs).toBe(root);
    // The thread is one session: the second turn sees the first; message + app_mention made one turn each.
    expect(requestText(run)).toContain('what is 2+2?');
    expect(run.llm.requests).toHaveLength(2);
    // The bot opened this thread itself, so there was no earlier thread to fetch.
    expect(run.slack.callsOf('conversations.replies')).toHaveLength(0);
  });

  it('a progress update the agent sends with the message tool lands in the thread the user wrote in', async () => {
    const run = await start();
    run.llm.enqueue(
      { toolCalls: [{ name: 'message', arguments: { content: 'Working on it…' } }] },
      { text: 'Done: 4.' },
    );
    const root = run.slack.userSays({ channel: CHANNEL, user: OWNER.id, text: `${mention} add 2+2`, appMention: true });
    await eventually(() => expect(shown(run, CHANNEL)).toEqual(['Working on it…', 'Done: 4.']));
    expect(run.slack.messagesIn(CHANNEL).map((m) => m.threadTs)).toEqual([root, root]);
  });

  it('renders Markdown as Slack mrkdwn: bold, italics, links, inline code and code blocks', async () => {
    const run = await start();
    run.llm.enqueue({
      text: '**Bold** and *it* with [the docs](https://example.com/docs), `x < y` and\n\n```js\nconst a = 1 && 2;\n```',
    });
    run.slack.userSays({ channel: DM, user: OWNER.id, text: 'format, please' });
    await eventually(() => expect(run.slack.messagesIn(DM)).toHaveLength(1));
    const [post] = run.slack.messagesIn(DM);
    expect(post?.text).toBe(
      '*Bold* and _it_ with <https://example.com/docs|the docs>, `x &lt; y` and\n\n```\nconst a = 1 &amp;&amp; 2;\n```',
    );
    expect(post?.threadTs).toBeUndefined();
    assertSlackMrkdwn(post?.text ?? '');
  });

  it('ignores channel messages without a mention under groupPolicy "mention", and answers a mention once', async () => {
    const run = await start();
    run.slack.userSays({ channel: CHANNEL, user: OWNER.id, text: 'just chatting among humans' });
    await quiet();
    expect(run.llm.requests).toHaveLength(0);
    expect(run.slack.messagesIn(CHANNEL)).toEqual([]);

    run.llm.enqueue({ text: 'Hello there.' }, { text: 'Hi again.' });
    // An app subscribed to app_mention only…
    run.slack.userSays({ channel: CHANNEL, user: OWNER.id, text: `${mention} hello`, onlyAppMention: true });
    await eventually(() => expect(shown(run, CHANNEL)).toEqual(['Hello there.']));
    // …and one that also gets message.channels: the same message twice, answered once.
    run.slack.userSays({ channel: CHANNEL, user: OWNER.id, text: `hi ${mention}`, appMention: true });
    await eventually(() => expect(shown(run, CHANNEL)).toEqual(['Hello there.', 'Hi again.']));
    await quiet();
    expect(run.llm.requests).toHaveLength(2);
  });

  it('with groupPolicy "allowlist" and groupRequireMention answers only mentions in the listed channels', async () => {
    const run = await start({ groupPolicy: 'allowlist', groupAllowFrom: [CHANNEL], groupRequireMention: true });
    run.slack.userSays({ channel: CHANNEL, user: OWNER.id, text: 'no mention here' });
    run.slack.userSays({ channel: 'C0OTHER', user: OWNER.id, text: `${mention} not this channel`, appMention: true });
    await quiet();
    expect(run.llm.requests).toHaveLength(0);
    run.llm.enqueue({ text: 'Listed and mentioned.' });
    run.slack.userSays({ channel: CHANNEL, user: OWNER.id, text: `${mention} now?`, appMention: true });
    await eventually(() => expect(shown(run, CHANNEL)).toEqual(['Listed and mentioned.']));
    expect(run.slack.messagesIn('C0OTHER')).toEqual([]);
  });

  it('gives the agent the thread so far when first mentioned inside a thread someone else started', async () => {
    const run = await start();
    run.slack.addUser('U0ALICE', 'alice');
    const root = run.slack.userSays({ channel: CHANNEL, user: 'U0ALICE', text: 'Should we ship on Friday?' });
    run.slack.userSays({ channel: CHANNEL, user: 'U0ALICE', text: 'I think Monday is safer.', threadTs: root });
    run.llm.enqueue({ text: 'Monday.' });
    run.slack.userSays({ channel: CHANNEL, user: OWNER.id, text: `${mention} what do you think?`, threadTs: root });
    await eventually(() => expect(run.slack.messagesIn(CHANNEL)).toMatchObject([{ text: 'Monday.', threadTs: root }]));
    const sent = lastUserText(run);
    expect(sent).toContain('Should we ship on Friday?');
    expect(sent).toContain('I think Monday is safer.');
    expect(sent).toContain('what do you think?');
    expect(run.llm.requests).toHaveLength(1);
  });

  it('downloads a shared image with the bot token and shows it to the model', async () => {
    const run = await start();
    run.llm.enqueue({ text: 'A tiny picture.' });
    const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 1, 2, 3]);
    run.slack.userSays({
      channel: DM,
      user: OWNER.id,
      text: 'what is this?',
      files: [{ name: 'cat.png', mimetype: 'image/png', content: png }],
    });
    await eventually(() => expect(shown(run, DM)).toEqual(['A tiny picture.']));
    const sent = lastUserText(run);
    expect(sent).toContain('what is this?');
    expect(sent).toContain(`data:image/png;base64,${png.toString('base64')}`);
    const path = /\[image: ([^\]]+)\]/.exec(sent)?.[1] ?? '';
    expect(path.startsWith(join(run.dataDir, 'media', 'slack'))).toBe(true);
    expect(readFileSync(path)).toEqual(png);
  });

  it('sends a file from the message tool with files.uploadV2', async () => {
    const run = await start();
    writeFileSync(join(run.workspace, 'report.txt'), 'quarterly numbers');
    run.llm.enqueue(
      { toolCalls: [{ name: 'message', arguments: { content: 'Here is the report.', media: ['report.txt'] } }] },
      { text: 'Sent it.' },
    );
    run.slack.userSays({ channel: DM, user: OWNER.id, text: 'the report, please' });
    await eventually(() => expect(shown(run, DM)).toEqual(['', 'Here is the report.', 'Sent it.']));
    const [upload] = run.slack.messagesIn(DM);
    expect(upload?.files?.map((f) => [f.name, f.content.toString()])).toEqual([['report.txt', 'quarterly numbers']]);
    expect(run.slack.callsOf('files.getUploadURLExternal')).toHaveLength(1);
    expect(run.slack.callsOf('files.completeUploadExternal')[0]?.params.channel_id).toBe(DM);
  });

  it('runs the agent’s commands from registered slash commands, and from a mention like "@bot /help"', async () => {
    const run = await start();
    run.slack.slashCommand({ command: '/help', text: '', user: OWNER.id, channel: DM });
    await eventually(() => expect(shown(run, DM).join('\n')).toContain('/new'));
    run.slack.userSays({ channel: CHANNEL, user: OWNER.id, text: `${mention} /help`, appMention: true });
    await eventually(() => expect(shown(run, CHANNEL).join('\n')).toContain('/new'));
    expect(run.llm.requests).toHaveLength(0);
  });

  it('matches @handles in allowFrom only for people of the bot’s own workspace', async () => {
    const run = await start();
    // Someone from another workspace (Slack Connect) with the owner's handle is a stranger.
    run.slack.addUser('U0EXTERNAL', OWNER.name, 'T2');
    run.slack.userSays({ channel: 'D0EXTERNAL', user: 'U0EXTERNAL', text: 'it is me, the owner' });
    await eventually(() => expect(shown(run, 'D0EXTERNAL').join('\n')).toMatch(/pairing code/i));
    expect(run.llm.requests).toHaveLength(0);
  });

  it('dm.policy "open" lets anyone in the workspace talk to the agent', async () => {
    const run = await start({ dm: { policy: 'open' } });
    run.slack.addUser('U0BOB', 'bob');
    run.llm.enqueue({ text: 'Hi Bob.' });
    run.slack.userSays({ channel: 'D0BOB', user: 'U0BOB', text: 'hello' });
    await eventually(() => expect(shown(run, 'D0BOB')).toEqual(['Hi Bob.']));
  });

  it('dm.enabled false ignores direct messages entirely', async () => {
    const run = await start({ dm: { enabled: false } });
    run.slack.userSays({ channel: DM, user: OWNER.id, text: 'anyone?' });
    run.slack.userSays({ channel: 'D0BOB', user: 'U0BOB', text: 'hello' });
    await quiet();
    expect(run.llm.requests).toHaveLength(0);
    expect([...run.slack.messagesIn(DM), ...run.slack.messagesIn('D0BOB')]).toEqual([]);
  });

  it('stops with a clear error when Slack rejects the bot token, without retrying', async () => {
    const run = await startSlackGateway({ botToken: 'xoxb-revoked' });
    open.push(run);
    await eventually(async () => expect((await healthOf(run.gateway)).channels.slack).toBe('error'));
    const details = (await healthOf(run.gateway)).channelDetails.slack;
    expect(details?.error).toContain('channels.slack.botToken (invalid_auth)');
    await quiet();
    expect(run.slack.callsOf('auth.test')).toHaveLength(1);
  });
});
