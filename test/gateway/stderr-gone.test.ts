/**
 * A gateway whose stderr went away (its terminal closed, its parent died): every log line met EPIPE, the uncaught
 * error was logged to stderr again, and the loop filled gateway.log with gigabytes while SIGTERM went unheard.
 */
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { editConfig, runCli, type SpawnedCli, spawnCli, tempHome } from '../cli/cli-helpers.js';
import { eventually } from '../helpers/eventually.js';

let running: SpawnedCli | undefined;
afterEach(() => {
  running?.child.kill('SIGKILL');
  running = undefined;
});

describe('the gateway after its stderr closed', () => {
  it('keeps its log small and still stops on SIGTERM', async () => {
    const home = tempHome();
    expect((await runCli(['onboard'], home)).code).toBe(0);
    editConfig(home, (c) => {
      c.agents.defaults.provider = 'custom';
      c.agents.defaults.model = 'test-model';
      c.providers.custom = { apiKey: 'k', apiBase: 'http://127.0.0.1:9/v1' }; // never reached
      (c.channels as Record<string, unknown>).websocket = { enabled: false };
    });
    running = spawnCli(['gateway', '--port', '0'], home);
    await eventually(() => expect(running?.output()).toContain('gateway: listening'), { timeoutMs: 20_000 });
    running.child.stderr?.destroy(); // the reading end is gone: the next write gets EPIPE
    running.child.stdout?.destroy();
    running.child.kill('SIGTERM'); // shutting down logs several lines, into the closed pipe
    expect(await running.exited).toBe(0);
    const log = statSync(join(home, '.nanobot', 'logs', 'gateway.log')).size;
    expect(log).toBeLessThan(64 * 1024);
  });
});
