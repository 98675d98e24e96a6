/**
 * The built `nanobot gateway` with the WeCom channel: the bundle loads the official SDK, subscribes on the loopback
 * long connection with upstream's keys (snake_case, as older configs have them), answers a private chat and a group
 * @-message through the fake LLM, sends the welcome message, loses the connection and picks up the message pushed
 * meanwhile (answered once), and keeps the secret out of its output.
 */
import { describe, expect, it } from 'vitest';
import { eventually } from '../channels/contract.js';
import { BOT_ID, type FakeWecom, SECRET, startFakeWecom } from '../channels/wecom/fake-wecom.js';
import { type FakeLLM, startFakeLLM } from '../helpers/fake-llm.js';
import { cleanupsAfterEach, homeWithChannel, type RunningGateway, spawnGateway } from './channel-e2e.js';

const OWNER = 'zhangsan';
const GROUP = 'wrkSFfCgAAxxxxGROUP01';

const cleanup = cleanupsAfterEach();

async function gatewayWith(wecom: FakeWecom, llm: FakeLLM): Promise<RunningGateway> {
  const block = {
    enabled: true,
    bot_id: BOT_ID,
    secret: SECRET,
    allow_from: [OWNER],
    welcome_message: '欢迎',
    ws_url: wecom.settings.wsUrl,
  };
  return spawnGateway(await homeWithChannel('wecom', llm, block, { asWritten: true }), cleanup);
}

describe('nanobot gateway with channels.wecom', () => {
  it('answers a private chat and a group, welcomes, recovers from a drop, and never prints the secret', async () => {
    const wecom = await startFakeWecom();
    const llm = await startFakeLLM();
    cleanup(
      () => wecom.close(),
      () => llm.close(),
    );
    const gateway = await gatewayWith(wecom, llm);
    const fail = (err: unknown) => {
      throw new Error(`${String(err)}\n${JSON.stringify(wecom.messages)}\n${gateway.output()}`);
    };
    await eventually(() => expect(gateway.output()).toContain('connected to WeCom'), 30_000).catch(fail);

    llm.enqueue({ text: 'Hello from the built gateway.' }, { text: 'Hi group.' }, { text: 'Back again.' });
    wecom.userSays({ userId: OWNER, text: 'hi' });
    await eventually(() => expect(wecom.messagesIn(OWNER)).toEqual(['Hello from the built gateway.']), 20_000).catch(
      fail,
    );
    wecom.userSays({ userId: OWNER, chatType: 'group', chatId: GROUP, text: '@助手 hello all' });
    await eventually(() => expect(wecom.messagesIn(GROUP)).toEqual(['Hi group.']), 20_000).catch(fail);
    wecom.enterChat(OWNER);
    await eventually(() => expect(wecom.welcomes).toEqual([{ chatId: OWNER, content: '欢迎' }]), 20_000).catch(fail);

    wecom.drop();
    const id = 'msg-while-dropped';
    wecom.userSays({ userId: OWNER, id, text: 'still there?' });
    wecom.restore();
    await eventually(
      () => expect(wecom.messagesIn(OWNER)).toEqual(['Hello from the built gateway.', 'Back again.']),
      30_000,
    ).catch(fail);
    expect(wecom.subscribes()).toBeGreaterThanOrEqual(2);
    expect(llm.requests).toHaveLength(3);
    expect(gateway.output()).not.toContain(SECRET);
  }, 90_000);
});
