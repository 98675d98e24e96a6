/**
 * A channel whose platform never answers (Telegram with no network: grammy retries getMe for ever) must not sit in
 * "starting" without a word: the real gateway gives its start a deadline, logs why, backs off, shows it in /health and
 * `channels status`, and keeps serving.
 */
import type { ChildProcess } from 'node:child_process';
import { createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { readState } from '../../src/gateway/state-file.js';
import { eventually } from '../channels/contract.js';
import { editConfig, runCli, spawnCli, tempHome } from '../cli/cli-helpers.js';
import { type FakeLLM, startFakeLLM } from '../helpers/fake-llm.js';

const TOKEN = '123456:AAE-secret-bot-token-value';
const children: ChildProcess[] = [];
const cleanups: (() => Promise<void>)[] = [];

afterEach(async () => {
  for (const child of children.splice(0)) child.kill('SIGKILL');
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

/** Accepts every connection and never says a byte: a proxy or firewall that swallows the request. */
async function startSilentServer(): Promise<{ url: string; connections: () => number }> {
  const sockets: Socket[] = [];
  const server: Server = createServer((socket) => {
    sockets.push(socket);
    socket.on('error', () => undefined);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (!address || typeof address === 'string') throw new Error('no address');
  cleanups.push(
    () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  );
  return { url: `http://127.0.0.1:${address.port}`, connections: () => sockets.length };
}

interface Health {
  status: string;
  channels: Record<string, string>;
  channelDetails: Record<string, { state: string; error?: string; restarts: number; retryAt?: string }>;
}

describe('gateway channel start deadline', () => {
  it('reports a Telegram channel that never connects, retries it with backoff, and keeps serving', async () => {
    const home = tempHome();
    await runCli(['onboard'], home);
    const silent = await startSilentServer();
    const llm: FakeLLM = await startFakeLLM([]);
    cleanups.push(() => llm.close());
    editConfig(home, (c) => {
      c.agents.defaults.provider = 'custom';
      c.agents.defaults.model = 'test-model';
      c.providers.custom = { apiKey: 'k', apiBase: `${llm.url}/v1` };
      c.gateway = { heartbeat: { enabled: false } };
      c.channels = {
        startTimeout: 0.5,
        websocket: { enabled: false },
        telegram: { enabled: true, token: TOKEN, apiBase: silent.url, allowFrom: ['*'] },
      };
    });

    const { child, output } = spawnCli(['gateway', '--port', '0', '--verbose'], home);
    children.push(child);
    const dataDir = join(home, '.nanobot');
    let port = 0;
    await eventually(() => {
      port = readState(dataDir)?.port ?? 0;
      expect(port).toBeGreaterThan(0);
    }, 15_000);
    const health = async (): Promise<Health> =>
      (await (await fetch(`http://127.0.0.1:${port}/health`)).json()) as Health;

    // The log says why, and the channel is retried (a second start reaches the silent server again).
    await eventually(
      () => expect(output()).toMatch(/telegram: did not connect within 500 ms.*reconnecting in/),
      15_000,
    );
    await eventually(() => expect(silent.connections()).toBeGreaterThanOrEqual(2), 15_000);
    await eventually(async () => {
      const report = await health();
      expect(report.status).toBe('ok');
      expect(report.channels.telegram).toBe('reconnecting');
      expect(report.channelDetails.telegram?.error).toMatch(/did not connect within 500 ms/);
      expect(report.channelDetails.telegram?.restarts).toBeGreaterThanOrEqual(1);
    }, 15_000);

    // While it waits out its backoff, `channels status` says why and when the next try is.
    let status = { code: -1, stdout: '', stderr: '' };
    await eventually(async () => {
      status = await runCli(['channels', 'status'], home);
      expect(status.code).toBe(0);
      expect(status.stdout).toMatch(
        /Telegram .*reconnecting \(did not connect within 500 ms.*; next try \d\d:\d\d:\d\d UTC\)/,
      );
    }, 20_000);
    expect(output() + status.stdout).not.toContain(TOKEN);
    expect(child.exitCode).toBeNull();
  }, 60_000);
});
