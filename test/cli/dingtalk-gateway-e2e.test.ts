/**
 * The built `nanobot gateway` with the DingTalk channel: the bundle loads the dingtalk-stream SDK (kept out of the
 * bundle, installed on demand), registers its Stream connection for upstream's clientId + clientSecret, answers a
 * direct and a group @-message through the fake LLM over the robot API, comes back after a dropped connection (the
 * message pushed meanwhile answered once), renews an access token DingTalk stopped taking, and keeps the secret and
 * the access tokens out of its output.
 */
import { describe, expect, it } from 'vitest';
import { eventually } from '../channels/contract.js';
import { CLIENT_ID, CLIENT_SECRET, type FakeDingtalk, startFakeDingtalk } from '../channels/dingtalk/fake-dingtalk.js';
import { type FakeLLM, startFakeLLM } from '../helpers/fake-llm.js';
import { cleanupsAfterEach, homeWithChannel, type RunningGateway, spawnGateway } from './channel-e2e.js';

const OWNER = 'manager4821';
const MEMBER = 'staff0042';
const GROUP = 'group:cidQ8m1pZr3xGroup==';

const cleanup = cleanupsAfterEach();

async function gatewayWith(dingtalk: FakeDingtalk, llm: FakeLLM): Promise<RunningGateway> {
  // Upstream's keys (snake_case as its older configs have them), plus the fake's addresses.
  const home = await homeWithChannel(
    'dingtalk',
    llm,
    {
      enabled: true,
      client_id: CLIENT_ID,
      client_secret: CLIENT_SECRET,
      allow_from: [OWNER, MEMBER],
      group_user_isolation: false,
      api_base: dingtalk.url,
      oapi_base: dingtalk.url,
    },
    { asWritten: true },
  );
  return spawnGateway(home, cleanup);
}

describe('nanobot gateway with channels.dingtalk', () => {
  it('answers a DingTalk user and a group @-message, recovers from a drop and a dead token, never prints the secret', async () => {
    const dingtalk = await startFakeDingtalk();
    const llm = await startFakeLLM();
    cleanup(
      () => dingtalk.close(),
      () => llm.close(),
    );
    const gateway = await gatewayWith(dingtalk, llm);
    const fail = (err: unknown) => {
      throw new Error(`${String(err)}\n${JSON.stringify(dingtalk.sent)}\n${gateway.output()}`);
    };
    await eventually(() => expect(dingtalk.connections()).toBe(1), 30_000).catch(fail);
    await eventually(() => expect(gateway.output()).toContain('connected to DingTalk Stream Mode'), 10_000).catch(fail);

    llm.enqueue(
      { text: 'Hello from the **built** gateway.' },
      { text: 'Hi group.' },
      { text: 'Back again.' },
      { text: 'Fresh token.' },
    );
    dingtalk.userSays({ chatId: OWNER, staffId: OWNER, text: 'hi' });
    await eventually(
      () => expect(dingtalk.messagesIn(OWNER)).toEqual(['Hello from the **built** gateway.']),
      20_000,
    ).catch(fail);
    expect(dingtalk.sent[0]).toMatchObject({ msgKey: 'sampleMarkdown', robotCode: CLIENT_ID });
    dingtalk.userSays({ chatId: GROUP, staffId: MEMBER, text: 'hello all' });
    await eventually(() => expect(dingtalk.messagesIn(GROUP)).toEqual(['Hi group.']), 20_000).catch(fail);

    dingtalk.drop();
    const missed = dingtalk.userSays({ chatId: OWNER, staffId: OWNER, text: 'still there?' });
    dingtalk.restore();
    await eventually(
      () => expect(dingtalk.messagesIn(OWNER)).toEqual(['Hello from the **built** gateway.', 'Back again.']),
      30_000,
    ).catch(fail);
    expect(dingtalk.deliveries(missed)).toBe(1);
    expect(dingtalk.connections()).toBe(2);

    dingtalk.expireTokens();
    dingtalk.userSays({ chatId: OWNER, staffId: OWNER, text: 'and now?' });
    await eventually(() => expect(dingtalk.messagesIn(OWNER)).toHaveLength(3), 20_000).catch(fail);
    expect(dingtalk.messagesIn(OWNER)[2]).toBe('Fresh token.');
    expect(dingtalk.refusedTokens()).toBe(1);
    expect(llm.requests).toHaveLength(4);
    await eventually(() => expect(dingtalk.unacked()).toEqual([]), 10_000).catch(fail);

    const output = gateway.output();
    expect(output).not.toContain(CLIENT_SECRET);
    for (const token of dingtalk.tokens()) expect(output).not.toContain(token);
    expect(output).not.toContain('ticket-');
    // The SDK's own console lines stay out of the gateway's output.
    expect(output).not.toContain('connect success');
  }, 120_000);
});
