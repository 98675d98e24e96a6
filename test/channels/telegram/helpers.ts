/** A gateway with the Telegram channel enabled against the fake Bot API and a fake LLM, in a throwaway data dir. */
import type { Gateway } from '../../../src/gateway/lifecycle.js';
import { type FakeLLM, startFakeLLM } from '../../helpers/fake-llm.js';
import { type ChannelHome, healthOf, startChannelGateway, writeChannelConfig } from '../gateway-harness.js';
import { type FakeBotApi, startFakeBotApi } from './fake-bot-api.js';

export interface TelegramGateway {
  gateway: Gateway;
  api: FakeBotApi;
  llm: FakeLLM;
  dataDir: string;
  workspace: string;
  close(): Promise<void>;
}

export const OWNER = { id: 501, username: 'owner_user' };

export function writeTelegramConfig(
  api: { url: string; token: string },
  llm: FakeLLM,
  telegram: Record<string, unknown> = {},
  channels: Record<string, unknown> = {},
): Promise<ChannelHome> {
  const settings = {
    token: api.token,
    apiBase: api.url,
    pollTimeout: 1,
    streamEditInterval: 0.05,
    allowFrom: [`@${OWNER.username}`],
    ...telegram,
  };
  return writeChannelConfig('telegram', llm, settings, channels);
}

export async function startTelegramGateway(
  telegram: Record<string, unknown> = {},
  channels: Record<string, unknown> = {},
): Promise<TelegramGateway> {
  const api = await startFakeBotApi();
  const llm = await startFakeLLM();
  const files = await writeTelegramConfig(api, llm, telegram, channels);
  const gateway = await startChannelGateway(files);
  return {
    gateway,
    api,
    llm,
    dataDir: files.dataDir,
    workspace: files.workspace,
    close: async () => {
      await gateway.shutdown('test end');
      await api.close();
      await llm.close();
    },
  };
}

export { healthOf };
