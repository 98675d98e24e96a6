/** A real gateway (agent + dispatcher + channels from the config) wired to the fake LLM, with the WebSocket on. */
import { writeFileSync } from 'node:fs';
import { mkdir, mkdtemp, readFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createAgent } from '../../../src/app/agent.js';
import { startGateway } from '../../../src/app/gateway.js';
import { loadConfig } from '../../../src/config/load.js';
import { CronService } from '../../../src/cron/service.js';
import type { Gateway, GatewayContext } from '../../../src/gateway/lifecycle.js';
import { cronRunner, cronService } from '../../../src/gateway/services.js';
import { type FakeLLM, type FakeScriptStep, startFakeLLM } from '../../helpers/fake-llm.js';

export interface WebUiGateway {
  gateway: Gateway;
  fake: FakeLLM;
  home: string;
  dataDir: string;
  workspace: string;
  port: number;
  token: string;
  url: string;
  close(): Promise<void>;
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

export async function startWebUiGateway(
  script: FakeScriptStep[] = [],
  websocket: Record<string, unknown> = {},
  /** An existing HOME (e.g. an upstream home): its config is pointed at the fake LLM and a free port. */
  existingHome?: string,
  /** More `channels.<name>` blocks next to the WebSocket one. */
  channels: Record<string, unknown> = {},
  /** `cron`: run a cron service as `nanobot gateway` does (jobs fire into their chats; the WebUI edits them). */
  options: { cron?: boolean; config?: Record<string, unknown>; providers?: Record<string, unknown> } = {},
): Promise<WebUiGateway> {
  const fake = await startFakeLLM(script);
  const home = existingHome ?? (await mkdtemp(join(tmpdir(), 'nb-webui-')));
  const dataDir = join(home, '.nanobot');
  const workspace = join(dataDir, 'workspace');
  await mkdir(workspace, { recursive: true });
  const port = await freePort();
  const configPath = join(dataDir, 'config.json');
  const theirs = existingHome ? (JSON.parse(await readFile(configPath, 'utf8')) as Record<string, unknown>) : {};
  const config = {
    ...theirs,
    agents: { defaults: { workspace, provider: 'custom', model: 'test-model' } },
    providers: { custom: { apiKey: 'test-key', apiBase: `${fake.url}/v1` }, ...options.providers },
    tools: { web: { enable: false } },
    gateway: { heartbeat: { enabled: false } },
    channels: { ...channels, websocket: { enabled: true, port, pingIntervalS: 60, ...websocket } },
    ...options.config,
  };
  writeFileSync(configPath, JSON.stringify(config, null, 2));
  const loaded = await loadConfig({ configPath, home, env: {} });
  let context: GatewayContext | undefined;
  const cron = options.cron
    ? new CronService({
        workspace,
        onRun: (job) =>
          context ? cronRunner(context)(job) : Promise.resolve({ status: 'error' as const, error: 'starting' }),
      })
    : undefined;
  const gateway = await startGateway({
    loaded,
    port: 0,
    env: {},
    watchConfig: false,
    writeStateFile: false,
    ...(cron
      ? {
          cron,
          createAgent: (l, o) => createAgent(l, { ...o, cron }),
          services: [
            (c: GatewayContext) => {
              context = c;
              return cronService(cron);
            },
          ],
        }
      : {}),
  });
  const url = `http://127.0.0.1:${port}`;
  // The channel starts in the background: wait until it answers.
  const deadline = Date.now() + 10_000;
  for (;;) {
    const up = await fetch(`${url}/api/info`).then(
      (res) => res.status === 401,
      () => false,
    );
    if (up) break;
    if (Date.now() > deadline) throw new Error('the WebSocket channel did not start');
    await new Promise((r) => setTimeout(r, 25));
  }
  const token =
    typeof websocket.token === 'string'
      ? websocket.token
      : (await readFile(join(dataDir, 'webui-token'), 'utf8')).trim();
  return {
    gateway,
    fake,
    home,
    dataDir,
    workspace,
    port,
    token,
    url,
    close: async () => {
      await gateway.shutdown('test end');
      await fake.close();
    },
  };
}
