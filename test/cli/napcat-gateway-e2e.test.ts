/**
 * The built `nanobot gateway` with the NapCat channel: the bundle connects to the loopback OneBot v11
 * implementation with its access token, answers an allowed QQ user and a group @mention through the fake LLM,
 * catches up on a message written while the connection was down, and keeps the token out of its output.
 */
import { describe, expect, it } from 'vitest';
import { eventually } from '../channels/contract.js';
import { type FakeOneBot, startFakeOneBot } from '../channels/napcat/fake-onebot.js';
import { type FakeLLM, startFakeLLM } from '../helpers/fake-llm.js';
import { cleanupsAfterEach, homeWithChannel, type RunningGateway, spawnGateway } from './channel-e2e.js';

const OWNER = 10_001;
const CHAT = `private:${OWNER}`;
const GROUP = 'group:424242';
const TOKEN = 'secret-onebot-token-0123456789';

const cleanup = cleanupsAfterEach();

async function gatewayWith(bot: FakeOneBot, llm: FakeLLM): Promise<RunningGateway> {
  // Upstream's keys as its onboard writes them (snake_case is accepted too).
  const block = { enabled: true, ws_url: bot.url, access_token: bot.token, allow_from: [String(OWNER)] };
  return spawnGateway(await homeWithChannel('napcat', llm, block, { asWritten: true }), cleanup);
}

describe('nanobot gateway with channels.napcat', () => {
  it('answers a QQ user and a group mention, catches up after a drop, and never prints the token', async () => {
    const bot = await startFakeOneBot({ token: TOKEN });
    const llm = await startFakeLLM();
    cleanup(
      () => bot.close(),
      () => llm.close(),
    );
    const gateway = await gatewayWith(bot, llm);
    const fail = (err: unknown) => {
      throw new Error(`${String(err)}\n${JSON.stringify(bot.sent)}\n${gateway.output()}`);
    };
    await eventually(() => expect(bot.connections()).toBe(1), 30_000).catch(fail);
    await eventually(() => expect(bot.actions.map((a) => a.action)).toContain('get_login_info'), 10_000).catch(fail);

    llm.enqueue({ text: 'Hello from the built gateway.' }, { text: 'Hi group.' }, { text: 'Back again.' });
    bot.userSays({ chatId: CHAT, userId: OWNER, text: 'hi' });
    await eventually(() => expect(bot.messagesIn(CHAT)).toEqual(['Hello from the built gateway.']), 20_000).catch(fail);
    bot.userSays({ chatId: GROUP, userId: OWNER, nickname: 'Alice', text: '@bot hello all' });
    await eventually(() => expect(bot.messagesIn(GROUP)).toEqual(['Hi group.']), 20_000).catch(fail);

    bot.drop();
    bot.userSays({ chatId: CHAT, userId: OWNER, text: 'still there?' });
    bot.restore();
    await eventually(
      () => expect(bot.messagesIn(CHAT)).toEqual(['Hello from the built gateway.', 'Back again.']),
      30_000,
    ).catch(fail);
    expect(bot.actions.map((a) => a.action)).toContain('get_friend_msg_history');
    expect(gateway.output()).not.toContain(TOKEN);
  }, 90_000);
});
