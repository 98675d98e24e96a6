/**
 * The built binary: `gateway --background`, `gateway restart`, `gateway stop --timeout`, and `/restart` by
 * gateway.restartMode (exit, spawn, exec), as nanobot's CLI has them.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { isProcessAlive, readState } from '../../src/gateway/state-file.js';
import { connect } from '../channels/websocket/helpers.js';
import { editConfig, runCli, type SpawnedCli, spawnCli, tempHome } from '../cli/cli-helpers.js';
import { eventually } from '../helpers/eventually.js';
import { type FakeLLM, startFakeLLM } from '../helpers/fake-llm.js';
import { freePort } from '../mcp/helpers.js';

let fake: FakeLLM | undefined;
const pids: number[] = [];
const spawned: SpawnedCli[] = [];
afterEach(async () => {
  for (const pid of pids.splice(0)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone
    }
  }
  for (const s of spawned.splice(0)) s.child.kill('SIGKILL');
  await fake?.close();
  fake = undefined;
});

async function gatewayHome(restartMode?: string, wsPort?: number): Promise<string> {
  const home = tempHome();
  expect((await runCli(['onboard'], home)).code).toBe(0);
  fake = await startFakeLLM([]);
  editConfig(home, (c) => {
    c.agents.defaults.provider = 'custom';
    c.agents.defaults.model = 'test-model';
    c.providers.custom = { apiKey: 'k', apiBase: `${fake?.url}/v1` };
    c.channels = { websocket: wsPort ? { port: wsPort, pingIntervalS: 60 } : { enabled: false } };
    if (restartMode) c.gateway = { restartMode };
  });
  return home;
}

const dataDir = (home: string) => join(home, '.nanobot');

function livePid(home: string): number {
  const state = readState(dataDir(home), () => {});
  if (!state || !isProcessAlive(state.pid)) throw new Error('no live gateway in gateway.json');
  pids.push(state.pid);
  return state.pid;
}

describe('nanobot gateway --background / restart / stop', () => {
  it('starts detached, says so again instead of starting twice, restarts with a new pid, and stops', async () => {
    const home = await gatewayHome();
    const started = await runCli(['gateway', '--background', '-p', '0'], home);
    expect(started.stderr).toBe('');
    expect(started.code).toBe(0);
    expect(started.stdout).toMatch(/Gateway started in the background \(pid \d+, port \d+\)/);
    const first = livePid(home);
    expect(readState(dataDir(home))?.launchMode).toBe('background');

    const again = await runCli(['gateway', '--background', '-p', '0'], home);
    expect(again.code).toBe(0);
    expect(again.stdout).toContain(`already running in the background (pid ${first}`);

    const status = await runCli(['gateway', 'status'], home);
    expect(status.stdout).toContain(`Gateway: running (pid ${first}`);

    const restarted = await runCli(['gateway', 'restart', '-p', '0', '--timeout', '15'], home);
    expect(restarted.code).toBe(0);
    expect(restarted.stdout).toContain(`Gateway stopped (pid ${first})`);
    expect(restarted.stdout).toMatch(/Gateway restarted in the background \(pid \d+/);
    const second = livePid(home);
    expect(second).not.toBe(first);
    expect(isProcessAlive(first)).toBe(false);

    const stopped = await runCli(['gateway', 'stop', '--timeout', '15'], home);
    expect(stopped.code).toBe(0);
    expect(stopped.stdout).toContain(`Gateway stopped (pid ${second})`);
    expect(isProcessAlive(second)).toBe(false);
    const log = readFileSync(join(dataDir(home), 'logs', 'gateway.log'), 'utf8');
    expect(log).toMatch(/gateway/);
  });

  it('restart refuses a gateway running in a terminal, and says when there is none', async () => {
    const home = await gatewayHome();
    const none = await runCli(['gateway', 'restart'], home);
    expect(none.code).toBe(1);
    expect(none.stdout).toContain('nothing to restart');

    const fg = spawnCli(['gateway', '--port', '0'], home);
    spawned.push(fg);
    const pid = await eventually(() => livePid(home), { timeoutMs: 20_000 });
    expect(readState(dataDir(home))?.launchMode).toBe('foreground');
    const refused = await runCli(['gateway', 'restart'], home);
    expect(refused.code).toBe(1);
    expect(refused.stdout).toContain('attached to a terminal');
    expect(isProcessAlive(pid)).toBe(true);
    const both = await runCli(['gateway', '--background', '-p', '0'], home);
    expect(both.code).toBe(1);
    expect(both.stdout).toContain(`already running (pid ${pid}`);
    const bad = await runCli(['gateway', '--foreground', '--background'], home);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('exclude each other');
  });
});

/** Sends a command from a WebUI chat of the running gateway, as a user would, and waits for its reply. */
async function sendCommand(home: string, wsPort: number, command: string, reply: RegExp): Promise<void> {
  const url = `http://127.0.0.1:${wsPort}`;
  await eventually(async () => (await fetch(`${url}/api/info`).catch(() => undefined))?.status === 401, {
    timeoutMs: 20_000,
  });
  const token = readFileSync(join(dataDir(home), 'webui-token'), 'utf8').trim();
  const client = await connect(wsPort, { token, clientId: 'restart-test', origin: url });
  try {
    await client.next((f) => f.event === 'ready');
    client.send({ type: 'new_chat' });
    const attached = await client.next((f) => f.event === 'attached');
    const chatId = attached.event === 'attached' ? attached.chat_id : '';
    client.send({ type: 'message', chat_id: chatId, content: command });
    await client.next((f) => f.event === 'message' && reply.test(f.text ?? ''));
  } finally {
    client.close();
  }
}

const sendRestart = (home: string, wsPort: number) => sendCommand(home, wsPort, '/restart', /Restarting/i);

async function restartHome(mode: string): Promise<{ home: string; wsPort: number }> {
  const wsPort = await freePort();
  return { home: await gatewayHome(mode, wsPort), wsPort };
}

describe('gateway.restartMode', () => {
  it('exit: /restart shuts down and exits 0 for the supervisor', async () => {
    const { home, wsPort } = await restartHome('exit');
    const gw = spawnCli(['gateway', '--port', '0'], home);
    spawned.push(gw);
    await eventually(() => livePid(home), { timeoutMs: 20_000 });
    await sendRestart(home, wsPort);
    expect(await gw.exited).toBe(0);
    expect(gw.output()).toContain('restartMode exit');
  });

  it('spawn: /restart starts a new gateway process (a new pid) and the old one exits 0', async () => {
    const { home, wsPort } = await restartHome('spawn');
    const gw = spawnCli(['gateway', '--port', '0'], home);
    spawned.push(gw);
    const first = await eventually(() => livePid(home), { timeoutMs: 20_000 });
    await sendRestart(home, wsPort);
    expect(await gw.exited).toBe(0);
    const second = await eventually(() => livePid(home) !== first && livePid(home), { timeoutMs: 20_000 });
    expect(second).not.toBe(first);
  });

  it.each(['exec', 'auto'])('%s: the process keeps its pid and runs a fresh gateway, again and again', async (mode) => {
    const { home, wsPort } = await restartHome(mode);
    const gw = spawnCli(['gateway', '--port', '0'], home);
    spawned.push(gw);
    const first = await eventually(() => livePid(home), { timeoutMs: 20_000 });
    expect(first).toBe(gw.child.pid);
    await sendRestart(home, wsPort);
    const second = await eventually(() => livePid(home) !== first && livePid(home), { timeoutMs: 20_000 });
    expect(isProcessAlive(first)).toBe(true); // the keeper: a supervisor still sees its process
    await sendRestart(home, wsPort);
    const third = await eventually(() => livePid(home) !== second && livePid(home), { timeoutMs: 20_000 });
    expect(isProcessAlive(second)).toBe(false); // the second restart did not stack another keeper
    expect(isProcessAlive(first)).toBe(true);
    // SIGTERM to the kept pid reaches the running gateway once: it drains and both exit 0.
    // An answer from the third gateway: it is past start-up (signal handlers are installed after the dispatcher).
    await sendCommand(home, wsPort, '/status', /test-model/);
    gw.child.kill('SIGTERM');
    expect(await gw.exited, gw.output()).toBe(0);
    await eventually(() => !isProcessAlive(third));
  });
});

describe('a stop asked for while the gateway starts', () => {
  it('SIGTERM during start-up: it finishes starting, drains and exits 0, and removes its state file', async () => {
    const home = await gatewayHome();
    // An MCP server that holds start-up (the gateway connects MCP servers before it serves) until the test says go.
    const started = join(home, 'mcp-started');
    const go = join(home, 'mcp-go');
    const script = `require('fs').writeFileSync(${JSON.stringify(started)}, '');
      setInterval(() => { if (require('fs').existsSync(${JSON.stringify(go)})) process.exit(1); }, 20);`;
    editConfig(home, (c) => {
      c.tools = { mcpServers: { slow: { command: process.execPath, args: ['-e', script] } } };
    });
    const gw = spawnCli(['gateway', '--port', '0'], home);
    spawned.push(gw);
    await eventually(() => existsSync(started), { timeoutMs: 20_000 });
    gw.child.kill('SIGTERM');
    writeFileSync(go, '');
    expect(await gw.exited, gw.output()).toBe(0);
    expect(gw.output()).toContain('shutting down (SIGTERM)');
    expect(readState(dataDir(home), () => {})).toBeUndefined();
  });
});
