/**
 * The built `nanobot gateway` with the Teams channel: the bundle loads jose on demand, checks the fake Bot
 * Framework's signed activities with it, answers an allowed user's 1:1 message through the fake LLM and the fake
 * connector API, keeps a reply through an outage of that API, refuses an unsigned activity, and prints neither the
 * client secret nor a token.
 */
import { describe, expect, it } from 'vitest';
import { eventually } from '../channels/contract.js';
import { type FakeTeams, freePort, startFakeTeams } from '../channels/msteams/fake-teams.js';
import { visibleText } from '../channels/msteams/teams-html.js';
import { type FakeLLM, startFakeLLM } from '../helpers/fake-llm.js';
import { cleanupsAfterEach, homeWithChannel, type RunningGateway, spawnGateway, withOutput } from './channel-e2e.js';

const OWNER = { aadObjectId: 'aad-owner-0001', name: 'Olivia Owner', upn: 'olivia@contoso.example' };
const DM = 'a:1-owner-personal-chat';

const cleanup = cleanupsAfterEach();

async function gatewayWith(teams: FakeTeams, llm: FakeLLM, port: number): Promise<RunningGateway> {
  const block = { ...teams.settings(port), enabled: true, allowFrom: [`@${OWNER.upn}`] };
  return spawnGateway(await homeWithChannel('msteams', llm, block), cleanup);
}

const shown = (teams: FakeTeams) => teams.messagesIn(DM).map((activity) => visibleText(activity.text ?? ''));

describe('nanobot gateway with channels.msteams', () => {
  it('answers a signed 1:1 message, keeps a reply through an outage, refuses an unsigned one, leaks no secret', async () => {
    const teams = await startFakeTeams({ appPassword: 'e2e-client-secret-value-42' });
    const llm = await startFakeLLM();
    cleanup(
      () => teams.close(),
      () => llm.close(),
    );
    const port = await freePort();
    teams.setEndpoint(`http://127.0.0.1:${port}/api/messages`);
    const gateway = await gatewayWith(teams, llm, port);
    await eventually(() => expect(gateway.output()).toContain('messaging endpoint listening'), 30_000).catch(
      withOutput(gateway),
    );

    llm.enqueue({ text: 'Hello from the **built** gateway.' }, { text: 'Still here.' });
    expect(await teams.userSays({ conversationId: DM, user: OWNER, text: 'hi' })).toBe(200);
    await eventually(() => expect(shown(teams)).toEqual(['Hello from the built gateway.']), 20_000);

    teams.drop();
    expect(await teams.userSays({ conversationId: DM, user: OWNER, text: 'still there?' })).toBe(200);
    await eventually(() => expect(teams.refusedWhileDropped()).toBeGreaterThanOrEqual(1), 20_000);
    teams.restore();
    await eventually(
      () => expect(shown(teams)).toEqual(['Hello from the built gateway.', 'Still here.']),
      30_000,
    ).catch(withOutput(gateway));

    const unsigned = await teams.post(teams.activityFor({ conversationId: DM, user: OWNER, text: 'forged' }));
    expect(unsigned.status).toBe(401);
    expect(llm.requests).toHaveLength(2);
    const output = gateway.output();
    expect(output).not.toContain('e2e-client-secret-value-42');
    expect(output).not.toContain('fake-bot-token-');
    expect(output).not.toMatch(/needs the jose package/);
  }, 90_000);
});
