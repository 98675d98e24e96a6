/** A gateway with the Matrix channel enabled against the fake homeserver and a fake LLM, in a throwaway data dir. */
import { expect } from 'vitest';
import type { Gateway } from '../../../src/gateway/lifecycle.js';
import { type FakeLLM, startFakeLLM } from '../../helpers/fake-llm.js';
import { eventually } from '../contract.js';
import { healthOf, startChannelGateway, writeChannelConfig } from '../gateway-harness.js';
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
  const settings = {
    homeserver: hs.url,
    userId: hs.botId,
    accessToken: hs.token,
    allowFrom: [OWNER],
    ...options.matrix,
  };
  const files = await writeChannelConfig('matrix', llm, settings);
  const gateway = await startChannelGateway(files);
  const run = {
    gateway,
    hs,
    llm,
    dataDir: files.dataDir,
    workspace: files.workspace,
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

export { healthOf };

/** The bot's messages in a room as a user reads them. */
export function shown(hs: FakeHomeserver, roomId: string): string[] {
  return hs.messagesIn(roomId).map((m) => visibleText(String(m.content.formatted_body ?? m.content.body)));
}

export const lastUserText = (llm: FakeLLM) =>
  JSON.stringify((llm.requests.at(-1)?.body.messages as unknown[] | undefined)?.at(-1));

export const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
