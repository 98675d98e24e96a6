/** A gateway with the WeCom channel enabled against the fake long connection and a fake LLM. */
import { expect } from 'vitest';
import type { Gateway } from '../../../src/gateway/lifecycle.js';
import { type FakeLLM, startFakeLLM } from '../../helpers/fake-llm.js';
import { eventually } from '../contract.js';
import { healthOf, startChannelGateway, writeChannelConfig } from '../gateway-harness.js';
import { type FakeWecom, type FakeWecomOptions, startFakeWecom } from './fake-wecom.js';

export const OWNER = 'zhangsan';
export const GROUP = 'wrkSFfCgAAxxxxGROUP01';

export interface WecomGatewayRun {
  gateway: Gateway;
  wecom: FakeWecom;
  llm: FakeLLM;
  dataDir: string;
  workspace: string;
  logs: string[];
  close(): Promise<void>;
}

export async function startWecomGateway(
  settings: Record<string, unknown> = {},
  fakeOptions: FakeWecomOptions = {},
): Promise<WecomGatewayRun> {
  const wecom = await startFakeWecom(fakeOptions);
  const llm = await startFakeLLM();
  const files = await writeChannelConfig('wecom', llm, { ...wecom.settings, allowFrom: [OWNER], ...settings });
  const logs: string[] = [];
  const line = (m: string) => {
    logs.push(m);
  };
  const gateway = await startChannelGateway(files, { log: { debug: line, info: line, warn: line, error: line } });
  return {
    gateway,
    wecom,
    llm,
    dataDir: files.dataDir,
    workspace: files.workspace,
    logs,
    close: async () => {
      await gateway.shutdown('test end');
      await wecom.close();
      await llm.close();
    },
  };
}

export async function waitState(gateway: Gateway, state: string): Promise<void> {
  await eventually(async () => expect((await healthOf(gateway)).channels.wecom).toBe(state), 10_000);
}

export const lastUserText = (run: WecomGatewayRun, n = -1) =>
  JSON.stringify((run.llm.requests.at(n)?.body.messages as unknown[] | undefined)?.at(-1));

/** Gives a wrong message time to arrive before asserting that none did. */
export const quiet = () => new Promise((resolve) => setTimeout(resolve, 400));
