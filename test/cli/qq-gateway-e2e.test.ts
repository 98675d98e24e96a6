/**
 * The built `nanobot gateway` with the QQ channel: the bundle takes an access token for upstream's appId + secret,
 * identifies on the loopback QQ gateway, answers a private and a group @-message through the fake LLM with passive
 * replies, resumes the session after a dropped connection (the missed message answered once), and keeps the secret
 * and the access tokens out of its output.
 */
import { describe, expect, it } from 'vitest';
import { eventually } from '../channels/contract.js';
import { APP_ID, type FakeQq, SECRET, startFakeQq } from '../channels/qq/fake-qq.js';
import { type FakeLLM, startFakeLLM } from '../helpers/fake-llm.js';
import { cleanupsAfterEach, homeWithChannel, type RunningGateway, spawnGateway } from './channel-e2e.js';

const OWNER = 'E1B2C3D4OWNER0000000000000000001';
const MEMBER = 'F9E8D7C6MEMBER00000000000000001';
const GROUP = 'group:A0B1C2D3GROUP000000000000000001';

const cleanup = cleanupsAfterEach();

async function gatewayWith(qq: FakeQq, llm: FakeLLM): Promise<RunningGateway> {
  // Upstream's keys (snake_case as its older configs have them), plus the fake's addresses.
  const block = {
    enabled: true,
    app_id: APP_ID,
    secret: SECRET,
    allow_from: [OWNER, MEMBER],
    ack_message: '',
    api_base: qq.url,
    token_url: `${qq.url}/app/getAppAccessToken`,
  };
  return spawnGateway(await homeWithChannel('qq', llm, block, { asWritten: true }), cleanup);
}

describe('nanobot gateway with channels.qq', () => {
  it('answers a QQ user and a group @-message, resumes after a drop, and never prints the secret', async () => {
    const qq = await startFakeQq();
    const llm = await startFakeLLM();
    cleanup(
      () => qq.close(),
      () => llm.close(),
    );
    const gateway = await gatewayWith(qq, llm);
    const fail = (err: unknown) => {
      throw new Error(`${String(err)}\n${JSON.stringify(qq.sent)}\n${gateway.output()}`);
    };
    await eventually(() => expect(qq.frames.filter((f) => f.op === 2)).toHaveLength(1), 30_000).catch(fail);
    // READY precedes the first dispatch: wait until the session exists on the bot's side too.
    await eventually(() => expect(gateway.output()).toContain('connected to the QQ gateway'), 10_000).catch(fail);

    llm.enqueue({ text: 'Hello from the built gateway.' }, { text: 'Hi group.' }, { text: 'Back again.' });
    const first = qq.userSays({ chatId: OWNER, userOpenid: OWNER, text: 'hi' });
    await eventually(() => expect(qq.messagesIn(OWNER)).toEqual(['Hello from the built gateway.']), 20_000).catch(fail);
    expect(qq.sent[0]?.body).toMatchObject({ msg_id: first, msg_seq: 1 });
    qq.userSays({ chatId: GROUP, userOpenid: MEMBER, text: 'hello all' });
    await eventually(() => expect(qq.messagesIn(GROUP)).toEqual(['Hi group.']), 20_000).catch(fail);

    qq.drop();
    qq.userSays({ chatId: OWNER, userOpenid: OWNER, text: 'still there?' });
    qq.restore();
    await eventually(
      () => expect(qq.messagesIn(OWNER)).toEqual(['Hello from the built gateway.', 'Back again.']),
      30_000,
    ).catch(fail);
    expect(qq.frames.filter((f) => f.op === 6)).toHaveLength(1);
    expect(llm.requests).toHaveLength(3);
    const output = gateway.output();
    expect(output).not.toContain(SECRET);
    for (const token of qq.tokens()) expect(output).not.toContain(token);
  }, 90_000);
});
