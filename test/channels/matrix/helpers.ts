/** A gateway with the Matrix channel enabled against the fake homeserver and a fake LLM, in a throwaway data dir. */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'vitest';
import { loadConfig } from '../../../src/config/load.js';
import { type Gateway, startGateway } from '../../../src/gateway/runtime.js';
import { type FakeLLM, startFakeLLM } from '../../helpers/fake-llm.js';
import { eventually } from '../contract.js';
import { type FakeHomeserver, startFakeHomeserver } from './fake-homeserver.js';
import { visibleText } from './matrix-html.js';

export const OWNER = '@owner_user:localhost';
export const STRANGER = '@stranger:localhost';

export interface MatrixGateway {
  gateway: Gateway;
  hs: FakeHomeserver;
  llm: FakeLLM;
  dataDir: string;
  workspace: string;
  close(): Promise<void>;
}

export async function startMatrixGateway(
  options: { matrix?: Record<string, unknown>; hs?: FakeHomeserver; waitForRunning?: boolean } = {},
): Promise<MatrixGateway> {
  const hs = options.hs ?? (await startFakeHomeserver());
  const llm = await startFakeLLM();
  const home = mkdtempSync(join(tmpdir(), 'nb-matrix-'));
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
      matrix: {
        enabled: true,
        homeserver: hs.url,
        userId: hs.botId,
        accessToken: hs.token,
        allowFrom: [OWNER],
        ...options.matrix,
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
  const run = {
    gateway,
    hs,
    llm,
    dataDir,
    workspace,
    close: async () => {
      await gateway.shutdown('test end');
      await hs.close();
      await llm.close();
    },
  };
  if (options.waitForRunning !== false) {
    await eventually(async () => expect((await healthOf(gateway)).channels.matrix).toBe('running'), 10_000);
  }
  return run;
}

export async function healthOf(gateway: Gateway): Promise<{
  channels: Record<string, string>;
  channelDetails: Record<string, { state: string; error?: string; restarts: number }>;
}> {
  const res = await fetch(`http://127.0.0.1:${gateway.port}/health`);
  return (await res.json()) as Awaited<ReturnType<typeof healthOf>>;
}

/** The bot's messages in a room as a user reads them. */
export function shown(hs: FakeHomeserver, roomId: string): string[] {
  return hs.messagesIn(roomId).map((m) => visibleText(String(m.content.formatted_body ?? m.content.body)));
}

export const lastUserText = (llm: FakeLLM) =>
  JSON.stringify((llm.requests.at(-1)?.body.messages as unknown[] | undefined)?.at(-1));

export const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
