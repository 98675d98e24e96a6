/** A gateway with the MoChat channel enabled against the loopback MoChat and a fake LLM. */
import { expect } from 'vitest';
import type { Gateway } from '../../../src/gateway/lifecycle.js';
import { createLogger } from '../../../src/util/log.js';
import { type FakeLLM, startFakeLLM } from '../../helpers/fake-llm.js';
import { eventually } from '../contract.js';
import { type ChannelHome, healthOf, startChannelGateway, writeChannelConfig } from '../gateway-harness.js';
import { type FakeMochat, type FakeMochatOptions, startFakeMochat } from './fake-mochat.js';

export const OWNER = 'user_owner';
export const FRIEND = 'user_friend';
export const STRANGER = 'user_stranger';
export const DM = 'session_owner';
export const PANEL = 'panel_general';

export interface MochatGatewayRun {
  gateway: Gateway;
  mochat: FakeMochat;
  llm: FakeLLM;
  files: ChannelHome;
  close(): Promise<void>;
  /** Stops only the gateway (the fake and the data dir stay), for a restart. */
  stopGateway(): Promise<void>;
}

export async function startMochatGateway(
  settings: Record<string, unknown> = {},
  fakeOptions: FakeMochatOptions = {},
  reuse?: { mochat: FakeMochat; llm: FakeLLM; files: ChannelHome },
): Promise<MochatGatewayRun> {
  const mochat = reuse?.mochat ?? (await startFakeMochat({ panels: [PANEL], ...fakeOptions }));
  const llm = reuse?.llm ?? (await startFakeLLM());
  const files =
    reuse?.files ??
    (await writeChannelConfig('mochat', llm, { ...mochat.settings, allowFrom: [OWNER, FRIEND], ...settings }));
  const debug = process.env.CONTRACT_DEBUG ? { log: createLogger('debug') } : {};
  const gateway = await startChannelGateway(files, debug);
  let stopped = false;
  const stopGateway = async () => {
    if (stopped) return;
    stopped = true;
    await gateway.shutdown('test end');
  };
  return {
    gateway,
    mochat,
    llm,
    files,
    stopGateway,
    close: async () => {
      await stopGateway();
      await mochat.close();
      await llm.close();
    },
  };
}

export async function waitState(gateway: Gateway, state: string): Promise<void> {
  await eventually(async () => expect((await healthOf(gateway)).channels.mochat).toBe(state), 10_000);
}

export const lastUserText = (run: MochatGatewayRun, n = -1) =>
  JSON.stringify((run.llm.requests.at(n)?.body.messages as unknown[] | undefined)?.at(-1));

/** Gives a wrong message time to arrive before asserting that none did. */
export const quiet = () => new Promise((resolve) => setTimeout(resolve, 400));
