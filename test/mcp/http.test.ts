/** MCP over HTTP against the real server-everything (Streamable HTTP and SSE) on 127.0.0.1. */
import { type ChildProcess, spawn } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import type { McpServerConfig } from '../../src/config/schema.js';
import { type McpManager, startMcpServers } from '../../src/mcp/manager.js';
import { createNetworkPolicy } from '../../src/security/network.js';
import { ToolRegistry } from '../../src/tools/registry.js';
import { unfence } from '../helpers/fence.js';
import { context, EVERYTHING, freePort, serverConfig, toolCall } from './helpers.js';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** Starts server-everything in an HTTP mode and waits until it listens. */
async function startEverything(mode: 'streamableHttp' | 'sse', port: number): Promise<ChildProcess> {
  const child = spawn(process.execPath, [EVERYTHING, mode], {
    env: { PATH: process.env.PATH, PORT: String(port) },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const stop = () =>
    new Promise<void>((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) return resolve();
      child.once('exit', () => resolve());
      child.kill('SIGKILL');
    });
  cleanups.push(stop);
  await new Promise<void>((resolve, reject) => {
    child.stderr?.on('data', (data: Buffer) => {
      if (/listening|running/i.test(String(data))) resolve();
    });
    child.once('exit', (code) => reject(new Error(`server-everything exited with ${code}`)));
  });
  return child;
}

async function connect(servers: Record<string, McpServerConfig>, warnings: string[] = []) {
  const registry = new ToolRegistry();
  const manager: McpManager = await startMcpServers({
    servers,
    registry,
    network: createNetworkPolicy(),
    env: {},
    home: '/',
    log: { debug() {}, info() {}, warn: (message) => warnings.push(message), error() {} },
    connectTimeoutMs: 5_000,
    reconnectDelaysMs: [0, 200, 500],
    retryDelaysMs: [],
  });
  cleanups.push(() => manager.close());
  return { registry, manager };
}

describe('MCP over HTTP', () => {
  it('calls a Streamable HTTP server, and after the server restarts (session gone) reconnects and retries', async () => {
    const port = await freePort();
    const first = await startEverything('streamableHttp', port);
    const warnings: string[] = [];
    const { registry, manager } = await connect(
      { everything: serverConfig({ url: `http://127.0.0.1:${port}/mcp` }) },
      warnings,
    );
    expect(manager.status()[0]).toMatchObject({ transport: 'streamableHttp', state: 'connected' });
    const one = await registry.execute(toolCall('mcp_everything_echo', { message: 'one' }), context());
    expect(unfence(String(one.content))).toBe('Echo: one');

    first.kill('SIGKILL');
    await new Promise((resolve) => first.once('exit', resolve));
    await startEverything('streamableHttp', port);
    const again = await registry.execute(toolCall('mcp_everything_echo', { message: 'two' }), context());
    expect(unfence(String(again.content))).toBe('Echo: two');
    // The call itself found the session gone (the new server never saw it) and was retried after reconnecting.
    expect(warnings.join('\n')).toMatch(/connection lost .*session.*; reconnecting/i);
    expect(manager.status()[0]?.state).toBe('connected');
  });

  it('detects SSE from a url ending in /sse', async () => {
    const port = await freePort();
    await startEverything('sse', port);
    const { registry, manager } = await connect({ legacy: serverConfig({ url: `http://127.0.0.1:${port}/sse` }) });
    expect(manager.status()[0]).toMatchObject({ transport: 'sse', state: 'connected' });
    const echoed = await registry.execute(toolCall('mcp_legacy_echo', { message: 'sse' }), context());
    expect(unfence(String(echoed.content))).toBe('Echo: sse');
  });

  it('sends the configured headers, and a server that answers with errors is reported, not fatal', async () => {
    const seen: http.IncomingHttpHeaders[] = [];
    const server = http.createServer((req, res) => {
      seen.push(req.headers);
      res.writeHead(503, { 'content-type': 'text/plain' }).end('down for maintenance');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    cleanups.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
    const { port } = server.address() as AddressInfo;
    const { manager } = await connect({
      remote: serverConfig({ url: `http://127.0.0.1:${port}/mcp`, headers: { Authorization: 'Bearer t0ken' } }),
    });
    expect(manager.status()[0]).toMatchObject({ state: 'failed', error: expect.stringMatching(/503/) });
    expect(seen[0]?.authorization).toBe('Bearer t0ken');
  });
});
