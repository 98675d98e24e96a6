/** A gateway with the Discord channel enabled against the fake Discord and a fake LLM, in a throwaway data dir. */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../../src/config/load.js';
import { type Gateway, startGateway } from '../../../src/gateway/runtime.js';
import { type FakeLLM, startFakeLLM } from '../../helpers/fake-llm.js';
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

export async function writeDiscordConfig(
  discord: { token: string; apiBase: string },
  llm: FakeLLM,
  settings: Record<string, unknown> = {},
) {
  const home = mkdtempSync(join(tmpdir(), 'nb-discord-'));
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
      websocket: { enabled: false },
      discord: {
        enabled: true,
        token: discord.token,
        apiBase: discord.apiBase,
        streamEditInterval: 0.05,
        allowFrom: [`@${OWNER.username}`],
        ...settings,
      },
    },
  };
  writeFileSync(configPath, JSON.stringify(config, null, 2));
  return { home, dataDir, workspace, configPath };
}

export async function startDiscordGateway(
  settings: Record<string, unknown> = {},
  fakeOptions: Parameters<typeof startFakeDiscord>[0] = {},
): Promise<DiscordGateway> {
  const discord = await startFakeDiscord(fakeOptions);
  const llm = await startFakeLLM();
  const { home, dataDir, workspace, configPath } = await writeDiscordConfig(discord, llm, settings);
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
    discord,
    llm,
    dataDir,
    workspace,
    close: async () => {
      await gateway.shutdown('test end');
      await discord.close();
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
