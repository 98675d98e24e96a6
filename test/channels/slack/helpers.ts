/** A gateway with the Slack channel enabled against the fake Slack and a fake LLM, in a throwaway data dir. */
import { expect } from 'vitest';
import type { Gateway } from '../../../src/gateway/lifecycle.js';
import { type FakeLLM, startFakeLLM } from '../../helpers/fake-llm.js';
import { eventually } from '../contract.js';
import { healthOf, startChannelGateway, writeChannelConfig } from '../gateway-harness.js';
import { type FakeSlack, startFakeSlack } from './fake-slack.js';

export interface SlackGateway {
  gateway: Gateway;
  slack: FakeSlack;
  llm: FakeLLM;
  dataDir: string;
  workspace: string;
  close(): Promise<void>;
}

/** The owner: named in allowFrom by handle, resolved through users.info. */
export const OWNER = { id: 'U0OWNER', name: 'owner_user' };
export const DM = 'D0OWNER';
export const CHANNEL = 'C0GENERAL';

export async function startSlackGateway(
  slackSettings: Record<string, unknown> = {},
  channels: Record<string, unknown> = {},
): Promise<SlackGateway> {
  const slack = await startFakeSlack();
  slack.addUser(OWNER.id, OWNER.name);
  const llm = await startFakeLLM();
  const settings = {
    botToken: slack.botToken,
    appToken: slack.appToken,
    apiBase: slack.apiBase,
    streamEditInterval: 0.05,
    allowFrom: [`@${OWNER.name}`],
    ...slackSettings,
  };
  const files = await writeChannelConfig('slack', llm, settings, channels);
  const gateway = await startChannelGateway(files);
  return {
    gateway,
    slack,
    llm,
    dataDir: files.dataDir,
    workspace: files.workspace,
    close: async () => {
      await gateway.shutdown('test end');
      await slack.close();
      await llm.close();
    },
  };
}

export { healthOf };

export async function waitRunning(gateway: Gateway): Promise<void> {
  await eventually(async () => expect((await healthOf(gateway)).channels.slack).toBe('running'), 10_000);
}
