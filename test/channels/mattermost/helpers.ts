/** A gateway with the Mattermost channel enabled against the fake server and a fake LLM, in a throwaway data dir. */
import { expect } from 'vitest';
import type { Gateway } from '../../../src/gateway/lifecycle.js';
import { type FakeLLM, startFakeLLM } from '../../helpers/fake-llm.js';
import { eventually } from '../contract.js';
import { healthOf, startChannelGateway, writeChannelConfig } from '../gateway-harness.js';
import { type FakeMattermost, startFakeMattermost } from './fake-mattermost.js';

export interface MattermostGateway {
  gateway: Gateway;
  mm: FakeMattermost;
  llm: FakeLLM;
  dataDir: string;
  workspace: string;
  close(): Promise<void>;
}

/** The owner: named in allowFrom by username, resolved through GET /users/:id. */
export const OWNER = { id: 'owneruserid000000000000001', username: 'owner_user' };
export const OWNER_DM = 'dmchannel00000000000000001';
export const TOWN = 'townsquare0000000000000001';

export async function startMattermostGateway(settings: Record<string, unknown> = {}): Promise<MattermostGateway> {
  const mm = await startFakeMattermost();
  const llm = await startFakeLLM();
  const channel = {
    serverUrl: mm.url,
    token: mm.token,
    streamEditInterval: 0.05,
    allowFrom: [`@${OWNER.username}`],
    ...settings,
  };
  const files = await writeChannelConfig('mattermost', llm, channel);
  const gateway = await startChannelGateway(files);
  return {
    gateway,
    mm,
    llm,
    dataDir: files.dataDir,
    workspace: files.workspace,
    close: async () => {
      await gateway.shutdown('test end');
      await mm.close();
      await llm.close();
    },
  };
}

export async function waitState(gateway: Gateway, state: string): Promise<void> {
  await eventually(async () => expect((await healthOf(gateway)).channels.mattermost).toBe(state), 10_000);
}

export { healthOf };
