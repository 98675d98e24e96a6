/** Feishu behaviours beyond the contract, through a real gateway, the real Lark SDK and the fake Open Platform. */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { Gateway } from '../../../src/gateway/lifecycle.js';
import { type FakeLLM, startFakeLLM } from '../../helpers/fake-llm.js';
import { eventually } from '../contract.js';
import { healthOf, startChannelGateway, writeChannelConfig } from '../gateway-harness.js';
import { APP, type FakeFeishu, startFakeFeishu } from './fake-open-platform.js';

const OWNER = { openId: 'ou_owner', userId: 'owner_user' };
const DM = 'oc_dm_owner';
const GROUP = 'oc_group';

interface Run {
  gateway: Gateway;
  fake: FakeFeishu;
  llm: FakeLLM;
  dataDir: string;
  workspace: string;
}

const open: Run[] = [];
afterEach(async () => {
  for (const run of open.splice(0)) {
    await run.gateway.shutdown('test end');
    await run.fake.close();
    await run.llm.close();
  }
});

async function start(feishu: Record<string, unknown> = {}, until = 'running'): Promise<Run> {
  const fake = await startFakeFeishu();
  const llm = await startFakeLLM();
  const settings = {
    app_id: APP.id,
    app_secret: APP.secret,
    domain: fake.url,
    allow_from: [OWNER.openId],
    group_policy: 'mention',
    streamEditInterval: 0.2,
    ...feishu,
  };
  const files = await writeChannelConfig('feishu', llm, settings);
  let gateway: Gateway;
  try {
    gateway = await startChannelGateway(files);
  } catch (err) {
    await fake.close();
    await llm.close();
    throw err;
  }
  const run = { gateway, fake, llm, dataDir: files.dataDir, workspace: files.workspace };
  open.push(run);
  await eventually(async () => expect(await stateOf(gateway)).toBe(until));
  return run;
}

async function stateOf(gateway: Gateway): Promise<string | undefined> {
  return (await healthOf(gateway)).channels.feishu;
}

const lastUserText = (run: Run) => JSON.stringify((run.llm.requests.at(-1)?.body.messages as unknown[])?.at(-1));
const settle = () => new Promise((resolve) => setTimeout(resolve, 500));

describe('feishu channel', () => {
  it('answers in groups only when @mentioned (in `mentions`) or replied to, without the mention in the text', async () => {
    const run = await start();
    const inGroup = { chatId: GROUP, chatType: 'group' as const, from: OWNER };
    run.fake.userSays({ ...inGroup, text: 'just chatting among humans' });
    run.fake.userSays({
      ...inGroup,
      text: '@_user_1 can you check this?',
      mentions: [{ key: '@_user_1', openId: 'ou_colleague', name: 'Colleague' }],
    });
    await settle();
    expect(run.llm.requests).toHaveLength(0);

    run.llm.enqueue({ text: 'It is noon.' }, { text: 'You are welcome.' });
    run.fake.userSays({ ...inGroup, text: 'what time is it?', mentionBot: true });
    await eventually(() => expect(run.fake.shown(GROUP)).toEqual(['It is noon.']));
    expect(lastUserText(run)).toContain('what time is it?');
    expect(lastUserText(run)).not.toContain('@_user_1');

    const answer = run.fake.messagesIn(GROUP)[0]?.messageId ?? '';
    run.fake.userSays({ ...inGroup, text: 'thanks', parentId: answer, rootId: answer });
    await eventually(() => expect(run.fake.shown(GROUP)).toEqual(['It is noon.', 'You are welcome.']));
  });

  it('replies with a shared JSON 2.0 card holding the Markdown', async () => {
    const run = await start({ streaming: false });
    run.llm.enqueue({ text: '## Plan\n\nRead **the docs** at [the site](https://example.com/a_(b)).' });
    run.fake.userSays({ chatId: DM, from: OWNER, text: 'plan?' });
    await eventually(() => expect(run.fake.messagesIn(DM)).toHaveLength(1));
    const [create] = run.fake.callsTo('/open-apis/im/v1/messages', 'POST');
    expect(create?.query.receive_id_type).toBe('chat_id');
    expect(create?.body).toMatchObject({ receive_id: DM, msg_type: 'interactive' });
    const card = JSON.parse(String(create?.body.content));
    expect(card).toEqual({
      schema: '2.0',
      config: {
        update_multi: true,
        summary: { content: 'Plan Read the docs at the site (https://example.com/a_(b)).' },
      },
      body: {
        elements: [
          { tag: 'markdown', content: '## Plan\n\nRead **the docs** at [the site](https://example.com/a_%28b%29).' },
        ],
      },
    });
  });

  it('answers a message Feishu delivers twice (same event, same message_id) once', async () => {
    const run = await start();
    run.llm.enqueue({ text: 'only once' }, { text: 'twice?!' });
    const id = run.fake.userSays({ chatId: DM, from: OWNER, text: 'hello' });
    run.fake.redeliver(id);
    await eventually(() => expect(run.fake.shown(DM)).toEqual(['only once']));
    run.fake.redeliver(id);
    await settle();
    expect(run.llm.requests).toHaveLength(1);
    expect(run.fake.shown(DM)).toEqual(['only once']);
  });

  it('hands an image to the model and sends a file from the message tool', async () => {
    const run = await start();
    const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 1, 2, 3]);
    writeFileSync(join(run.workspace, 'report.pdf'), '%PDF-1.4 numbers');
    run.llm.enqueue(
      { toolCalls: [{ name: 'message', arguments: { content: 'Here is the report.', media: ['report.pdf'] } }] },
      { text: 'Sent it.' },
    );
    run.fake.userSays({ chatId: DM, from: OWNER, image: png });
    await eventually(() => expect(run.fake.shown(DM)).toContain('Sent it.'));
    const path = /\[image: ([^\]]+)\]/.exec(JSON.stringify(run.llm.requests[0]?.body.messages))?.[1] ?? '';
    expect(path.startsWith(join(run.dataDir, 'media', 'feishu'))).toBe(true);
    expect(readFileSync(path)).toEqual(png);
    const [upload] = run.fake.callsTo('/open-apis/im/v1/files', 'POST');
    expect(upload?.body).toMatchObject({ file_type: 'pdf', file_name: 'report.pdf' });
    expect(upload?.files.file?.size).toBe(16);
    expect(run.fake.messagesIn(DM).map((m) => m.msgType)).toEqual(['file', 'interactive', 'interactive']);
  });

  it('keeps each topic of a topic group in its own session and answers inside the topic', async () => {
    const run = await start({ groupPolicy: 'open' });
    run.llm.enqueue({ text: 'In the topic.' }, { text: 'Still in it.' }, { text: 'Elsewhere.' });
    const topic = { chatId: GROUP, chatType: 'group' as const, from: OWNER, threadId: 'omt_1' };
    run.fake.userSays({ ...topic, messageId: 'om_root', text: 'a new topic' });
    await eventually(() => expect(run.fake.shown(GROUP)).toEqual(['In the topic.']));
    run.fake.userSays({ ...topic, text: 'more', rootId: 'om_root', parentId: 'om_root' });
    await eventually(() => expect(run.fake.shown(GROUP)).toHaveLength(2));
    for (const answer of run.fake.messagesIn(GROUP))
      expect(answer).toMatchObject({ replyTo: 'om_root', inThread: true });
    run.fake.userSays({ chatId: GROUP, chatType: 'group', from: OWNER, text: 'outside any topic' });
    await eventually(() => expect(run.fake.shown(GROUP)).toHaveLength(3));
    // The topic's two turns share a session; the message outside the topic starts another.
    const histories = run.llm.requests.map((r) => JSON.stringify(r.body.messages));
    expect(histories[1]).toContain('a new topic');
    expect(histories[2]).not.toContain('a new topic');
  });
});

describe('feishu setup', () => {
  it('refuses an App ID the long connection would reject, naming the key', async () => {
    await expect(start({ appId: 'cli_short', app_id: undefined })).rejects.toThrow(/channels\.feishu\.appId must be/);
  });

  it('refuses a plain-http domain that is not on this machine (the app secret goes there)', async () => {
    await expect(start({ domain: 'http://open.example.com' })).rejects.toThrow(/must be an https:\/\/ URL/);
  });

  it('shows a wrong App Secret as a setup error instead of retrying', async () => {
    const run = await start({ app_secret: 'wrong' }, 'error');
    const health = await healthOf(run.gateway);
    expect(health.channelDetails.feishu?.error).toMatch(
      /Feishu refused channels\.feishu\.appId \/ appSecret \(code 10014/,
    );
    await settle();
    expect(run.fake.callsTo('/open-apis/auth/v3/tenant_access_token/internal')).toHaveLength(1);
    expect(run.fake.callsTo('/callback/ws/endpoint')).toHaveLength(0);
  });
});
