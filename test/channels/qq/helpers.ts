/** A gateway with the QQ channel enabled against the fake QQ bot platform and a fake LLM. */
import { expect } from 'vitest';
import type { Gateway } from '../../../src/gateway/lifecycle.js';
import { type FakeLLM, startFakeLLM } from '../../helpers/fake-llm.js';
import { eventually } from '../contract.js';
import { healthOf, startChannelGateway, writeChannelConfig } from '../gateway-harness.js';
import { type FakeQq, startFakeQq } from './fake-qq.js';

/** A user_openid (private chats) and the same person's member_openid in the group: QQ gives them different ids. */
export const OWNER = 'E1B2C3D4OWNER0000000000000000001';
export const OWNER_IN_GROUP = 'F9E8D7C6MEMBER00000000000000001';
export const GROUP_OPENID = 'A0B1C2D3GROUP000000000000000001';
export const GROUP = `group:${GROUP_OPENID}`;

export interface QqGatewayRun {
  gateway: Gateway;
  qq: FakeQq;
  llm: FakeLLM;
  dataDir: string;
  workspace: string;
  close(): Promise<void>;
}

export async function startQqGateway(
  settings: Record<string, unknown> = {},
  fakeOptions: Parameters<typeof startFakeQq>[0] = {},
): Promise<QqGatewayRun> {
  const qq = await startFakeQq(fakeOptions);
  const llm = await startFakeLLM();
  const files = await writeChannelConfig('qq', llm, {
    ...qq.settings,
    allowFrom: [OWNER, OWNER_IN_GROUP],
    ...settings,
  });
  const gateway = await startChannelGateway(files);
  return {
    gateway,
    qq,
    llm,
    dataDir: files.dataDir,
    workspace: files.workspace,
    close: async () => {
      await gateway.shutdown('test end');
      await qq.close();
      await llm.close();
    },
  };
}

export async function waitState(gateway: Gateway, state: string): Promise<void> {
  await eventually(async () => expect((await healthOf(gateway)).channels.qq).toBe(state), 10_000);
}

export const lastUserText = (run: QqGatewayRun, n = -1) =>
  JSON.stringify((run.llm.requests.at(n)?.body.messages as unknown[] | undefined)?.at(-1));

/** Gives a wrong message time to arrive before asserting that none did. */
export const quiet = () => new Promise((resolve) => setTimeout(resolve, 400));
