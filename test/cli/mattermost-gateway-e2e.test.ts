/**
 * The built `nanobot gateway` with the Mattermost channel: the bundle loads @mattermost/client on demand, talks to the
 * loopback fake server through it, answers an allowed user's DM through the fake LLM, comes back after the
 * connection drops, and keeps the SDK's own console chatter (and the token) out of its output.
 */
import { describe, expect, it } from 'vitest';
import { eventually } from '../channels/contract.js';
import { type FakeMattermost, startFakeMattermost } from '../channels/mattermost/fake-mattermost.js';
import { type FakeLLM, startFakeLLM } from '../helpers/fake-llm.js';
import { cleanupsAfterEach, homeWithChannel, type RunningGateway, spawnGateway, withOutput } from './channel-e2e.js';

const OWNER = { id: 'owneruserid000000000000001', username: 'owner_user' };
const DM = 'dmchannel00000000000000001';

const cleanup = cleanupsAfterEach();

async function gatewayWith(mm: FakeMattermost, llm: FakeLLM): Promise<RunningGateway> {
  const block = { enabled: true, serverUrl: mm.url, token: mm.token, allowFrom: [`@${OWNER.username}`] };
  return spawnGateway(await homeWithChannel('mattermost', llm, block), cleanup);
}

describe('nanobot gateway with channels.mattermost', () => {
  it('answers a DM through the real SDK, reconnects after a drop, and prints neither SDK chatter nor the token', async () => {
    const mm = await startFakeMattermost({ token: 'secret-mm-token-0123456789' });
    const llm = await startFakeLLM();
    cleanup(
      () => mm.close(),
      () => llm.close(),
    );
    const gateway = await gatewayWith(mm, llm);
    await eventually(() => expect(mm.connections()).toBe(1), 30_000).catch(withOutput(gateway));

    llm.enqueue({ text: 'Hello from the built gateway.' }, { text: 'Back again.' });
    mm.userSays({ channelId: DM, kind: 'dm', user: OWNER, text: 'hi' });
    await eventually(
      () => expect(mm.messagesIn(DM).map((p) => p.message)).toEqual(['Hello from the built gateway.']),
      20_000,
    );

    mm.drop();
    mm.userSays({ channelId: DM, kind: 'dm', user: OWNER, text: 'still there?' });
    mm.restore();
    await eventually(
      () => expect(mm.messagesIn(DM).map((p) => p.message)).toEqual(['Hello from the built gateway.', 'Back again.']),
      30_000,
    ).catch((err: unknown) => {
      throw new Error(
        `${String(err)}\n${JSON.stringify(mm.messagesIn(DM).map((p) => p.message))}\n${JSON.stringify(mm.calls.filter((c) => c.method !== 'GET'))}\n${gateway.output()}`,
      );
    });
    const output = gateway.output();
    expect(output).not.toMatch(/websocket connecting|websocket closed|ErrorEvent/);
    expect(output).not.toContain('secret-mm-token-0123456789');
  }, 90_000);
});
