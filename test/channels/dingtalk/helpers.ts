/** A gateway with the DingTalk channel enabled against the fake DingTalk and a fake LLM. */
import { expect } from 'vitest';
import type { Gateway } from '../../../src/gateway/lifecycle.js';
import { type FakeLLM, startFakeLLM } from '../../helpers/fake-llm.js';
import { eventually } from '../contract.js';
import { healthOf, startChannelGateway, writeChannelConfig } from '../gateway-harness.js';
import { type FakeDingtalk, type FakeDingtalkOptions, startFakeDingtalk } from './fake-dingtalk.js';

/** Staff ids (user ids inside the organisation) and a group's openConversationId. */
export const OWNER = 'manager4821';
export const MEMBER = 'staff0042';
export const GROUP = 'group:cidQ8m1pZr3xGroup==';

export interface DingtalkGatewayRun {
  gateway: Gateway;
  dingtalk: FakeDingtalk;
  llm: FakeLLM;
  dataDir: string;
  workspace: string;
  close(): Promise<void>;
}

export async function startDingtalkGateway(
  settings: Record<string, unknown> = {},
  fakeOptions: FakeDingtalkOptions = {},
): Promise<DingtalkGatewayRun> {
  const dingtalk = await startFakeDingtalk(fakeOptions);
  const llm = await startFakeLLM();
  const files = await writeChannelConfig('dingtalk', llm, {
    ...dingtalk.settings,
    allowFrom: [OWNER, MEMBER],
    ...settings,
  });
  const gateway = await startChannelGateway(files);
  return {
    gateway,
    dingtalk,
    llm,
    dataDir: files.dataDir,
    workspace: files.workspace,
    close: async () => {
      await gateway.shutdown('test end');
      await dingtalk.close();
      await llm.close();
    },
  };
}

export async function waitState(gateway: Gateway, state: string): Promise<void> {
  await eventually(async () => expect((await healthOf(gateway)).channels.dingtalk).toBe(state), 10_000);
}

export const lastUserText = (run: DingtalkGatewayRun, n = -1) =>
  JSON.stringify((run.llm.requests.at(n)?.body.messages as unknown[] | undefined)?.at(-1));

/** Gives a wrong message time to arrive before asserting that none did. */
export const quiet = () => new Promise((resolve) => setTimeout(resolve, 400));
