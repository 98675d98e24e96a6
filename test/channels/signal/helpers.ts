/** A gateway with the Signal channel enabled against the fake signal-cli daemon and a fake LLM, in a throwaway home. */
import { expect } from 'vitest';
import type { Gateway } from '../../../src/gateway/lifecycle.js';
import { type FakeLLM, startFakeLLM } from '../../helpers/fake-llm.js';
import { eventually } from '../contract.js';
import { healthOf, startChannelGateway, writeChannelConfig } from '../gateway-harness.js';
import { BOT, type FakeSignalCli, person, startFakeSignalCli } from './fake-signal-cli.js';

export interface SignalGateway {
  gateway: Gateway;
  signal: FakeSignalCli;
  llm: FakeLLM;
  dataDir: string;
  workspace: string;
  close(): Promise<void>;
}

/** The owner: named in allowFrom by phone number. */
export const OWNER = person(1001, { name: 'Owner' });
export const FRIEND = person(1002, { name: 'Friend' });
export const STRANGER = person(1003, { name: 'Stranger' });

/** The settings that point the channel at `signal`. */
export function signalSettings(signal: FakeSignalCli): Record<string, unknown> {
  return {
    phoneNumber: BOT.number,
    daemonHost: '127.0.0.1',
    daemonPort: signal.port,
    attachmentsDir: signal.attachmentsDir,
  };
}

export async function startSignalGateway(
  settings: Record<string, unknown> = {},
  signal?: FakeSignalCli,
): Promise<SignalGateway> {
  const fake = signal ?? (await startFakeSignalCli({ keepAliveMs: 200 }));
  for (const p of [OWNER, FRIEND, STRANGER]) fake.addPerson(p);
  const llm = await startFakeLLM();
  const files = await writeChannelConfig('signal', llm, {
    ...signalSettings(fake),
    allowFrom: [OWNER.number],
    ...settings,
  });
  const gateway = await startChannelGateway(files);
  return {
    gateway,
    signal: fake,
    llm,
    dataDir: files.dataDir,
    workspace: files.workspace,
    close: async () => {
      await gateway.shutdown('test end');
      await fake.close();
      await llm.close();
    },
  };
}

export async function waitState(gateway: Gateway, state: string): Promise<void> {
  await eventually(async () => expect((await healthOf(gateway)).channels.signal).toBe(state), 10_000);
}

export { healthOf };
