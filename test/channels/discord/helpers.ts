/** A gateway with the Discord channel enabled against the fake Discord and a fake LLM, in a throwaway data dir. */
import type { Gateway } from '../../../src/gateway/lifecycle.js';
import { type FakeLLM, startFakeLLM } from '../../helpers/fake-llm.js';
import { type ChannelHome, healthOf, startChannelGateway, writeChannelConfig } from '../gateway-harness.js';
import { type FakeDiscord, startFakeDiscord } from './fake-discord.js';

export interface DiscordGateway {
  gateway: Gateway;
  discord: FakeDiscord;
  llm: FakeLLM;
  dataDir: string;
  workspace: string;
  close(): Promise<void>;
}

export const OWNER = { id: '501', username: 'owner_user' };

export function writeDiscordConfig(
  discord: { token: string; apiBase: string },
  llm: FakeLLM,
  settings: Record<string, unknown> = {},
): Promise<ChannelHome> {
  const channel = {
    token: discord.token,
    apiBase: discord.apiBase,
    streamEditInterval: 0.05,
    allowFrom: [`@${OWNER.username}`],
    ...settings,
  };
  return writeChannelConfig('discord', llm, channel);
}

export async function startDiscordGateway(
  settings: Record<string, unknown> = {},
  fakeOptions: Parameters<typeof startFakeDiscord>[0] = {},
): Promise<DiscordGateway> {
  const discord = await startFakeDiscord(fakeOptions);
  const llm = await startFakeLLM();
  const files = await writeDiscordConfig(discord, llm, settings);
  const gateway = await startChannelGateway(files);
  return {
    gateway,
    discord,
    llm,
    dataDir: files.dataDir,
    workspace: files.workspace,
    close: async () => {
      await gateway.shutdown('test end');
      await discord.close();
      await llm.close();
    },
  };
}

export { healthOf };
