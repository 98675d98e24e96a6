/**
 * The built `nanobot gateway` with the Mattermost channel: the bundle loads @mattermost/client on demand, talks to the
 * loopback fake server through it, answers an allowed user's DM through the fake LLM, comes back after the
 * connection drops, and keeps the SDK's own console chatter (and the token) out of its output.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { eventually } from '../channels/contract.js';
import { type FakeMattermost, startFakeMattermost } from '../channels/mattermost/fake-mattermost.js';
import { type FakeLLM, startFakeLLM } from '../helpers/fake-llm.js';
import { editConfig, runCli, type SpawnedCli, spawnCli, tempHome } from './cli-helpers.js';

const OWNER = { id: 'owneruserid000000000000001', username: 'owner_user' };
const DM = 'dmchannel00000000000000001';

let cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  cleanups = [];
});

async function gatewayWith(mm: FakeMattermost, llm: FakeLLM): Promise<SpawnedCli> {
  const home = tempHome();
  expect((await runCli(['onboard'], home)).code).toBe(0);
  editConfig(home, (c) => {
    c.agents.defaults.provider = 'custom';
    c.agents.defaults.model = 'test-model';
    c.providers.custom = { apiKey: 'k', apiBase: `${llm.url}/v1` };
    const channels = c.channels as Record<string, Record<string, unknown>>;
    channels.websocket = { ...channels.websocket, enabled: false };
    channels.mattermost = {
      ...channels.mattermost,
      enabled: true,
      serverUrl: mm.url,
      token: mm.token,
      allowFrom: [`@${OWNER.username}`],
    };
  });
  const gateway = spawnCli(['gateway', '--port', '0'], home);
  cleanups.push(async () => {
    gateway.child.kill('SIGTERM');
    await gateway.exited;
  });
  return gateway;
}

describe('nanobot gateway with channels.mattermost', () => {
  it('answers a DM through the real SDK, reconnects after a drop, and prints neither SDK chatter nor the token', async () => {
    const mm = await startFakeMattermost({ token: 'secret-mm-token-0123456789' });
    const llm = await startFakeLLM();
    cleanups.push(
      () => mm.close(),
      () => llm.close(),
    );
    const gateway = await gatewayWith(mm, llm);
    await eventually(() => expect(mm.connections()).toBe(1), 30_000).catch((err: unknown) => {
      throw new Error(`${String(err)}\n${gateway.output()}`);
    });

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
        `${String(err)}\n${JSON.stringify(mm.messagesIn(DM).map((p) => p.message))}\n${gateway.output()}`,
      );
    });
    const output = gateway.output();
    expect(output).not.toMatch(/websocket connecting|websocket closed|ErrorEvent/);
    expect(output).not.toContain('secret-mm-token-0123456789');
  }, 90_000);
});
