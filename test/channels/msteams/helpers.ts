/** A gateway with the Teams channel enabled against the fake Bot Framework and a fake LLM, in a throwaway data dir. */
import { expect } from 'vitest';
import type { Gateway } from '../../../src/gateway/lifecycle.js';
import type { Logger } from '../../../src/util/log.js';
import { type FakeLLM, startFakeLLM } from '../../helpers/fake-llm.js';
import { eventually } from '../contract.js';
import { type ChannelHome, healthOf, startChannelGateway, writeChannelConfig } from '../gateway-harness.js';
import { type FakeTeams, freePort, startFakeTeams, type UserMessage } from './fake-teams.js';
import { visibleText } from './teams-html.js';

export interface TeamsGateway {
  gateway: Gateway;
  teams: FakeTeams;
  llm: FakeLLM;
  files: ChannelHome;
  port: number;
  close(): Promise<void>;
}

/** The owner: named in allowFrom by sign-in name, which the fake's members API gives. */
export const OWNER = { aadObjectId: 'aad-owner-0001', name: 'Olivia Owner', upn: 'olivia@contoso.example' };
export const OWNER_DM = 'a:1-owner-personal-chat';

export const dm = (text: string, extra: Partial<UserMessage> = {}): UserMessage => ({
  conversationId: OWNER_DM,
  user: OWNER,
  text,
  ...extra,
});

export async function startTeamsGateway(
  settings: Record<string, unknown> = {},
  channels: Record<string, unknown> = {},
  log?: Logger,
): Promise<TeamsGateway> {
  const teams = await startFakeTeams();
  const llm = await startFakeLLM();
  const port = await freePort();
  teams.setEndpoint(`http://127.0.0.1:${port}/api/messages`);
  const files = await writeChannelConfig(
    'msteams',
    llm,
    { ...teams.settings(port), allowFrom: [`@${OWNER.upn}`], ...settings },
    channels,
  );
  const run: TeamsGateway = {
    gateway: await startChannelGateway(files, log ? { log } : {}),
    teams,
    llm,
    files,
    port,
    close: async () => {
      await run.gateway.shutdown('test end');
      await teams.close();
      await llm.close();
    },
  };
  return run;
}

/** A second gateway on the same data dir (a restart). */
export async function restartGateway(run: TeamsGateway): Promise<void> {
  await run.gateway.shutdown('restart');
  run.gateway = await startChannelGateway(run.files);
}

export async function waitState(gateway: Gateway, state: string): Promise<void> {
  await eventually(async () => expect((await healthOf(gateway)).channels.msteams).toBe(state), 10_000);
}

export const shown = (run: TeamsGateway, conversationId: string): string[] =>
  run.teams.messagesIn(conversationId).map((activity) => visibleText(activity.text ?? ''));

export const lastUserText = (run: TeamsGateway, n = -1): string =>
  JSON.stringify((run.llm.requests.at(n)?.body.messages as unknown[] | undefined)?.at(-1));

export const quiet = (): Promise<unknown> => new Promise((resolve) => setTimeout(resolve, 400));

export { healthOf };
