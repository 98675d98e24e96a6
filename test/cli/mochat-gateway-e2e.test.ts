/**
 * The built `nanobot gateway` with the MoChat channel: the bundle loads socket.io-client and its msgpack parser,
 * connects to the loopback MoChat with upstream's snake_case keys, answers a session and a mentioned panel message
 * through the fake LLM, catches up after a dropped socket (the missed message answered once), and keeps the claw
 * token out of its output.
 */
import { describe, expect, it } from 'vitest';
import { eventually } from '../channels/contract.js';
import { AGENT_ID, CLAW_TOKEN, type FakeMochat, startFakeMochat } from '../channels/mochat/fake-mochat.js';
import { type FakeLLM, startFakeLLM } from '../helpers/fake-llm.js';
import { cleanupsAfterEach, homeWithChannel, type RunningGateway, spawnGateway } from './channel-e2e.js';

const OWNER = 'user_owner';
const DM = 'session_owner';
const PANEL = 'panel_general';

const cleanup = cleanupsAfterEach();

async function gatewayWith(mochat: FakeMochat, llm: FakeLLM): Promise<RunningGateway> {
  // Upstream's keys, snake_case as its older configs have them.
  const block = {
    enabled: true,
    base_url: mochat.url,
    claw_token: CLAW_TOKEN,
    agent_user_id: AGENT_ID,
    sessions: ['*'],
    panels: [PANEL],
    allow_from: [OWNER],
    reply_delay_mode: 'non-mention',
    groups: { [PANEL]: { require_mention: true } },
  };
  return spawnGateway(await homeWithChannel('mochat', llm, block, { asWritten: true }), cleanup);
}

describe('nanobot gateway with channels.mochat', () => {
  it('answers a session and a panel mention, catches up after a dropped socket, and never prints the token', async () => {
    const mochat = await startFakeMochat({ panels: [PANEL] });
    const llm = await startFakeLLM();
    cleanup(
      () => mochat.close(),
      () => llm.close(),
    );
    const gateway = await gatewayWith(mochat, llm);
    const fail = (err: unknown) => {
      throw new Error(`${String(err)}\n${JSON.stringify(mochat.sent)}\n${gateway.output()}`);
    };
    await eventually(() => expect(gateway.output()).toContain('connected to the MoChat socket'), 30_000).catch(fail);

    llm.enqueue({ text: 'Hello from the built gateway.' }, { text: 'Hi panel.' }, { text: 'Back again.' });
    mochat.userSays({ chatId: DM, author: OWNER, text: 'hi' });
    await eventually(() => expect(mochat.messagesIn(DM)).toEqual(['Hello from the built gateway.']), 20_000).catch(
      fail,
    );
    mochat.userSays({ chatId: PANEL, author: OWNER, text: `@${AGENT_ID} hello panel` });
    await eventually(() => expect(mochat.messagesIn(PANEL)).toEqual(['Hi panel.']), 20_000).catch(fail);

    mochat.drop();
    mochat.userSays({ chatId: DM, author: OWNER, text: 'still there?' });
    mochat.restore();
    await eventually(
      () => expect(mochat.messagesIn(DM)).toEqual(['Hello from the built gateway.', 'Back again.']),
      30_000,
    ).catch(fail);
    expect(mochat.socketConnections()).toBe(2);
    expect(llm.requests).toHaveLength(3);
    expect(gateway.output()).not.toContain(CLAW_TOKEN);
  }, 90_000);
});
