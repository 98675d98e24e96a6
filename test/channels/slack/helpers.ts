/** A gateway with the Slack channel enabled against the fake Slack and a fake LLM, in a throwaway data dir. */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'vitest';
import { loadConfig } from '../../../src/config/load.js';
import { type Gateway, startGateway } from '../../../src/gateway/runtime.js';
import { type FakeLLM, startFakeLLM } from '../../helpers/fake-llm.js';
import { eventually } from '../contract.js';
import { type FakeSlack, startFakeSlack } from './fake-slack.js';

export interface SlackGateway {
  gateway: Gateway;
  slack: FakeSlack;
  llm: FakeLLM;
  dataDir: string;
  workspace: string;
  close(): Promise<void>;
}

/** The owner: named in allowFrom by handle, resolved through users.info. */
export const OWNER = { id: 'U0OWNER', name: 'owner_user' };
export const DM = 'D0OWNER';
export const CHANNEL = 'C0GENERAL';

export async function startSlackGateway(
  slackSettings: Record<string, unknown> = {},
  channels: Record<string, unknown> = {},
): Promise<SlackGateway> {
  const slack = await startFakeSlack();
  slack.addUser(OWNER.id, OWNER.name);
  const llm = await startFakeLLM();
  const home = mkdtempSync(join(tmpdir(), 'nb-slack-'));
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
      slack: {
        enabled: true,
        botToken: slack.botToken,
        appToken: slack.appToken,
        apiBase: slack.apiBase,
        streamEditInterval: 0.05,
        allowFrom: [`@${OWNER.name}`],
        ...slackSettings,
      },
    },
  };
  writeFileSync(configPath, JSON.stringify(config, null, 2));
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
    slack,
    llm,
    dataDir,
    workspace,
    close: async () => {
      await gateway.shutdown('test end');
      await slack.close();
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

export async function waitRunning(gateway: Gateway): Promise<void> {
  await eventually(async () => expect((await healthOf(gateway)).channels.slack).toBe('running'), 10_000);
}
