/** A gateway with the Telegram channel enabled against the fake Bot API and a fake LLM, in a throwaway data dir. */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../../src/config/load.js';
import { type Gateway, startGateway } from '../../../src/gateway/runtime.js';
import { type FakeLLM, startFakeLLM } from '../../helpers/fake-llm.js';
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

export async function writeTelegramConfig(
  api: { url: string; token: string },
  llm: FakeLLM,
  telegram: Record<string, unknown> = {},
  channels: Record<string, unknown> = {},
) {
  const home = mkdtempSync(join(tmpdir(), 'nb-telegram-'));
  const dataDir = join(home, '.nanobot');
  const workspace = join(dataDir, 'workspace');
  await mkdir(workspace, { recursive: true });
  const configPath = join(dataDir, 'config.json');
  const config = {
    agents: { defaults: { workspace, provider: 'custom', model: 'test-model' } },
    providers: { custom: { apiKey: 'test-key', apiBase: `${llm.url}/v1` } },
    tools: { web: { enable: false } },
    gateway: { heartbeat: { enabled: false } },
    channels: {
      sendToolHints: false,
      showReasoning: false,
      ...channels,
      websocket: { enabled: false },
      telegram: {
        enabled: true,
        token: api.token,
        apiBase: api.url,
        pollTimeout: 1,
        streamEditInterval: 0.05,
        allowFrom: [`@${OWNER.username}`],
        ...telegram,
      },
    },
  };
  writeFileSync(configPath, JSON.stringify(config, null, 2));
  return { home, dataDir, workspace, configPath };
}

export async function startTelegramGateway(
  telegram: Record<string, unknown> = {},
  channels: Record<string, unknown> = {},
): Promise<TelegramGateway> {
  const api = await startFakeBotApi();
  const llm = await startFakeLLM();
  const { home, dataDir, workspace, configPath } = await writeTelegramConfig(api, llm, telegram, channels);
  const loaded = await loadConfig({ configPath, home, env: {} });
  const gateway = await startGateway({
    loaded,
    port: 0,
    env: {},
    watchConfig: false,
    writeStateFile: false,
    channelBackoff: { initialMs: 50, maxMs: 300 },
  });
  return {
    gateway,
    api,
    llm,
    dataDir,
    workspace,
    close: async () => {
      await gateway.shutdown('test end');
      await api.close();
      await llm.close();
    },
  };
}

export async function healthOf(gateway: Gateway): Promise<{
  channels: Record<string, string>;
  channelDetails: Record<string, { state: string; error?: string; restarts: number }>;
}> {
  const res = await fetch(`http://127.0.0.1:${gateway.port}/health`);
  return (await res.json()) as Awaited<ReturnType<typeof healthOf>>;
}
