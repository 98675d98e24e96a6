/** A gateway with the NapCat channel enabled against the fake OneBot implementation and a fake LLM. */
import { expect } from 'vitest';
import type { Gateway } from '../../../src/gateway/lifecycle.js';
import { type FakeLLM, startFakeLLM } from '../../helpers/fake-llm.js';
import { eventually } from '../contract.js';
import { healthOf, startChannelGateway, writeChannelConfig } from '../gateway-harness.js';
import { type FakeOneBot, startFakeOneBot } from './fake-onebot.js';

export const OWNER = 10_001;
export const OWNER_CHAT = `private:${OWNER}`;
export const GROUP = 'group:424242';

export interface NapcatGateway {
  gateway: Gateway;
  bot: FakeOneBot;
  llm: FakeLLM;
  dataDir: string;
  workspace: string;
  close(): Promise<void>;
}

export async function startNapcatGateway(
  settings: Record<string, unknown> = {},
  fakeOptions: Parameters<typeof startFakeOneBot>[0] = {},
): Promise<NapcatGateway> {
  const bot = await startFakeOneBot(fakeOptions);
  const llm = await startFakeLLM();
  const files = await writeChannelConfig('napcat', llm, {
    wsUrl: bot.url,
    accessToken: bot.token,
    allowFrom: [String(OWNER)],
    ...settings,
  });
  const gateway = await startChannelGateway(files);
  return {
    gateway,
    bot,
    llm,
    dataDir: files.dataDir,
    workspace: files.workspace,
    close: async () => {
      await gateway.shutdown('test end');
      await bot.close();
      await llm.close();
    },
  };
}

export async function waitState(gateway: Gateway, state: string): Promise<void> {
  await eventually(async () => expect((await healthOf(gateway)).channels.napcat).toBe(state), 10_000);
}

export const lastUserText = (run: NapcatGateway, n = -1) =>
  JSON.stringify((run.llm.requests.at(n)?.body.messages as unknown[] | undefined)?.at(-1));

export const quiet = () => new Promise((resolve) => setTimeout(resolve, 400));

export { healthOf };
