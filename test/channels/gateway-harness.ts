/**
 * What every chat channel's gateway tests share: a throwaway data dir whose config enables one channel (aimed at that
 * channel's fake platform) beside a fake LLM, with everything else that would run in the background turned off, and
 * a gateway started from it with quick reconnects.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type StartGatewayOptions, startGateway } from '../../src/app/gateway.js';
import { loadConfig } from '../../src/config/load.js';
import type { Gateway } from '../../src/gateway/lifecycle.js';
import type { FakeLLM } from '../helpers/fake-llm.js';

export interface ChannelHome {
  home: string;
  dataDir: string;
  workspace: string;
  configPath: string;
}

/** A config with channel `name` enabled with `settings`; `channels` sets keys shared by all channels. */
export async function writeChannelConfig(
  name: string,
  llm: FakeLLM,
  settings: Record<string, unknown>,
  channels: Record<string, unknown> = {},
): Promise<ChannelHome> {
  const home = mkdtempSync(join(tmpdir(), `nb-${name}-`));
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
      [name]: { enabled: true, ...settings },
    },
  };
  writeFileSync(configPath, JSON.stringify(config, null, 2));
  return { home, dataDir, workspace, configPath };
}

/** Starts a gateway from a written config: an ephemeral health port, no state file, no config watching. */
export async function startChannelGateway(
  { configPath, home }: ChannelHome,
  options: Partial<StartGatewayOptions> = {},
): Promise<Gateway> {
  const loaded = await loadConfig({ configPath, home, env: {} });
  return startGateway({
    loaded,
    port: 0,
    env: {},
    watchConfig: false,
    writeStateFile: false,
    channelBackoff: { initialMs: 50, maxMs: 300 },
    ...options,
  });
}

export async function healthOf(gateway: Gateway): Promise<{
  channels: Record<string, string>;
  channelDetails: Record<string, { state: string; error?: string; restarts: number }>;
}> {
  const res = await fetch(`http://127.0.0.1:${gateway.port}/health`);
  return (await res.json()) as Awaited<ReturnType<typeof healthOf>>;
}
