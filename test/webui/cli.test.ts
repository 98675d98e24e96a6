/** `nanobot webui` with the real binary: the link with the token, starting the gateway, and clear refusals. */
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { freePort } from '../channels/websocket/gateway-helpers.js';
import { editConfig, runCli, tempHome } from '../cli/cli-helpers.js';

const homes: string[] = [];
afterEach(async () => {
  // A gateway started in the background by `nanobot webui` is stopped the way a user would.
  for (const home of homes.splice(0)) await runCli(['gateway', 'stop'], home);
});

async function configuredHome(): Promise<{ home: string; port: number }> {
  const home = tempHome();
  await runCli(['onboard'], home);
  const port = await freePort();
  const healthPort = await freePort();
  editConfig(home, (c) => {
    c.agents.defaults.provider = 'custom';
    c.agents.defaults.model = 'test-model';
    c.providers.custom = { apiKey: 'k', apiBase: 'http://127.0.0.1:9/v1' };
    c.gateway = { port: healthPort, heartbeat: { enabled: false } };
    c.channels = { websocket: { port } };
  });
  return { home, port };
}

describe('nanobot webui', () => {
  it('--no-start prints how to start the gateway and the link with the token (0600 file)', async () => {
    const { home, port } = await configuredHome();
    const result = await runCli(['webui', '--no-open', '--no-start'], home);
    expect(result.code).toBe(0);
    const token = readFileSync(join(home, '.nanobot', 'webui-token'), 'utf8').trim();
    expect(statSync(join(home, '.nanobot', 'webui-token')).mode & 0o777).toBe(0o600);
    expect(result.stdout).toContain('nanobot gateway');
    expect(result.stdout).toContain(`http://127.0.0.1:${port}/#token=${token}`);
  });

  it('starts the gateway in the background and prints the link, which works', async () => {
    const { home, port } = await configuredHome();
    homes.push(home);
    const result = await runCli(['webui', '--no-open'], home);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('Gateway started');
    const link = /WebUI: (\S+)/.exec(result.stdout)?.[1] ?? '';
    const url = new URL(link);
    expect(url.origin).toBe(`http://127.0.0.1:${port}`);
    const token = new URLSearchParams(url.hash.slice(1)).get('token');
    const info = await fetch(`${url.origin}/api/info`, { headers: { authorization: `Bearer ${token}` } });
    expect(info.status).toBe(200);
    expect((await fetch(`${url.origin}/`)).status).toBe(200);

    // A second call finds it running and does not start another.
    const again = await runCli(['webui', '--no-open'], home);
    expect(again.code).toBe(0);
    expect(again.stdout).not.toContain('Starting');
    // The token never reaches the gateway's log.
    const log = readFileSync(join(home, '.nanobot', 'logs', 'gateway.log'), 'utf8');
    expect(log).not.toContain(token ?? '');
  }, 40_000);

  it('says how to turn the WebUI on when channels.websocket is disabled', async () => {
    const { home } = await configuredHome();
    editConfig(home, (c) => {
      c.channels = { websocket: { enabled: false } };
    });
    const result = await runCli(['webui', '--no-open'], home);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('channels.websocket.enabled is false');
  });
});

describe("nanobot webui: nanobot's -p, --gateway-port and --yes", () => {
  it('-p without --yes off a terminal names what it would save; with --yes it saves it and serves there', async () => {
    const { home } = await configuredHome();
    homes.push(home);
    const wsPort = await freePort();
    const refused = await runCli(['webui', '--no-open', '-p', String(wsPort)], home);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(`channels.websocket.port = ${wsPort}`);
    expect(refused.stderr).toContain('--yes');

    const result = await runCli(['webui', '--no-open', '-p', String(wsPort), '--gateway-port', '0', '-y'], home);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.stdout).toContain(`Saved channels.websocket.port = ${wsPort}`);
    expect(result.stdout).toContain(`WebUI: http://127.0.0.1:${wsPort}/#token=`);
    const config = JSON.parse(readFileSync(join(home, '.nanobot', 'config.json'), 'utf8')) as {
      channels: { websocket: { port: number } };
      gateway: { port: number };
    };
    expect(config.channels.websocket.port).toBe(wsPort);
    // --gateway-port is the started gateway's health port (0: a free one), not the configured one.
    const state = JSON.parse(readFileSync(join(home, '.nanobot', 'gateway.json'), 'utf8')) as {
      port: number;
      launchMode: string;
    };
    expect(state.port).not.toBe(config.gateway.port);
    expect(state.launchMode).toBe('background');
  }, 40_000);

  it('--yes turns a disabled WebUI on', async () => {
    const { home, port } = await configuredHome();
    editConfig(home, (c) => {
      c.channels = { websocket: { enabled: false, port } };
    });
    const result = await runCli(['webui', '--no-open', '--no-start', '--yes'], home);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('Saved channels.websocket.enabled = true');
    expect(result.stdout).toContain(`http://127.0.0.1:${port}/#token=`);
    const bad = await runCli(['webui', '--no-open', '--no-start', '-p', 'eighty', '-y'], home);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('--port expects');
  });
});
