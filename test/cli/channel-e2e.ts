/**
 * The scaffolding of the built-gateway channel tests: a fresh home onboarded by the built CLI with the fake LLM as
 * its model and one channel configured, the gateway spawned on it, and cleanups that run after each test.
 */
import { afterEach, expect } from 'vitest';
import type { FakeLLM } from '../helpers/fake-llm.js';
import { editConfig, runCli, type SpawnedCli, spawnCli, tempHome } from './cli-helpers.js';

export type Cleanup = () => Promise<unknown> | unknown;

/** Registers an afterEach that runs what was pushed, last first; returns the push. */
export function cleanupsAfterEach(): (...cleanups: Cleanup[]) => void {
  let list: Cleanup[] = [];
  afterEach(async () => {
    const due = list.reverse();
    list = [];
    for (const cleanup of due) await cleanup();
  });
  return (...cleanups) => {
    list.push(...cleanups);
  };
}

export interface ChannelHomeOptions {
  /**
   * The block as written, without onboard's defaults for the channel (a test of upstream's snake_case keys must not
   * get camelCase twins beside them).
   */
  asWritten?: boolean;
}

/**
 * A home where `nanobot onboard` ran, the fake LLM is the model, the WebSocket channel is off and `channels.<name>` is
 * `block` (over onboard's defaults for it, unless `asWritten`).
 */
export async function homeWithChannel(
  name: string,
  llm: FakeLLM,
  block: Record<string, unknown>,
  options: ChannelHomeOptions = {},
): Promise<string> {
  const home = tempHome();
  expect((await runCli(['onboard'], home)).code).toBe(0);
  editConfig(home, (c) => {
    c.agents.defaults.provider = 'custom';
    c.agents.defaults.model = 'test-model';
    c.providers.custom = { apiKey: 'k', apiBase: `${llm.url}/v1` };
    const channels = c.channels as Record<string, Record<string, unknown>>;
    channels.websocket = { ...channels.websocket, enabled: false };
    channels[name] = options.asWritten ? block : { ...channels[name], ...block };
  });
  return home;
}

export type RunningGateway = SpawnedCli & { stop(): Promise<void> };

/** `nanobot gateway --port 0` on `home`; `stop()` (also registered as a cleanup) sends SIGTERM and waits for the exit. */
export function spawnGateway(
  home: string,
  cleanup: (...cleanups: Cleanup[]) => void,
  options: { env?: Record<string, string>; nodeArgs?: string[] } = {},
): RunningGateway {
  const run = spawnCli(['gateway', '--port', '0'], home, options);
  let stopped: Promise<void> | undefined;
  const stop = () => {
    stopped ??= (async () => {
      run.child.kill('SIGTERM');
      await run.exited;
    })();
    return stopped;
  };
  cleanup(stop);
  return Object.assign(run, { stop });
}

/** For `.catch(…)` on a wait: the failure with the gateway's output, which usually says why. */
export const withOutput = (run: SpawnedCli) => (err: unknown) => {
  throw new Error(`${String(err)}\n${run.output()}`);
};
