/**
 * The built `nanobot gateway` with the NapCat channel: the bundle connects to the loopback OneBot v11
 * implementation with its access token, answers an allowed QQ user and a group @mention through the fake LLM,
 * catches up on a message written while the connection was down, and keeps the token out of its output.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { eventually } from '../channels/contract.js';
import { type FakeOneBot, startFakeOneBot } from '../channels/napcat/fake-onebot.js';
import { type FakeLLM, startFakeLLM } from '../helpers/fake-llm.js';
import { editConfig, runCli, type SpawnedCli, spawnCli, tempHome } from './cli-helpers.js';

const OWNER = 10_001;
const CHAT = `private:${OWNER}`;
const GROUP = 'group:424242';
const TOKEN = 'secret-onebot-token-0123456789';

let cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  cleanups = [];
});

async function gatewayWith(bot: FakeOneBot, llm: FakeLLM): Promise<SpawnedCli> {
  const home = tempHome();
  expect((await runCli(['onboard'], home)).code).toBe(0);
  editConfig(home, (c) => {
    c.agents.defaults.provider = 'custom';
    c.agents.defaults.model = 'test-model';
    c.providers.custom = { apiKey: 'k', apiBase: `${llm.url}/v1` };
    const channels = c.channels as Record<string, Record<string, unknown>>;
    channels.websocket = { ...channels.websocket, enabled: false };
    // Upstream's keys as its onboard writes them (snake_case is accepted too).
    channels.napcat = { enabled: true, ws_url: bot.url, access_token: bot.token, allow_from: [String(OWNER)] };
  });
  const gateway = spawnCli(['gateway', '--port', '0'], home);
  cleanups.push(async () => {
    gateway.child.kill('SIGTERM');
    await gateway.exited;
  });
  return gateway;
}

describe('nanobot gateway with channels.napcat', () => {
  it('answers a QQ user and a group mention, catches up after a drop, and never prints the token', async () => {
    const bot = await startFakeOneBot({ token: TOKEN });
    const llm = await startFakeLLM();
    cleanups.push(
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
