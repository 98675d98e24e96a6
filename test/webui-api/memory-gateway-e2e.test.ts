/**
 * The built `nanobot gateway` over an upstream home (pyhome): the Memory page's API reads upstream's own memory files
 * and finds the history entry upstream wrote (session "old"), lists the memory commits, and `memory.restore` puts
 * MEMORY.md back byte for byte as upstream left it.
 */
import { appendFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { MemoryGit } from '../../src/memory/git.js';
import { eventually } from '../channels/contract.js';
import { freePort } from '../channels/websocket/gateway-helpers.js';
import { connect, type TestClient } from '../channels/websocket/helpers.js';
import { editConfig, spawnCli } from '../cli/cli-helpers.js';
import { startFakeLLM } from '../helpers/fake-llm.js';
import { upstreamHome } from '../helpers/upstream-homes.js';

const TOKEN = 'py-static-token-0123456789'; // pyhome's static WebSocket token
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

describe('the built gateway’s memory API over an upstream home', () => {
  it('reads upstream’s memory and history, and restores a memory commit', async () => {
    const h = upstreamHome('pyhome');
    cleanups.push(h.cleanup);
    const memoryPath = join(h.workspace, 'memory', 'MEMORY.md');
    const upstreamMemory = readFileSync(memoryPath, 'utf8');
    // A memory change recorded as Dream records one, on top of upstream's files.
    const git = new MemoryGit(h.workspace);
    await git.init();
    appendFileSync(memoryPath, '- Prefers rye sourdough\n');
    const sha = (await git.commitChanges('dream: note the rye')) ?? '';
    expect(sha).toMatch(/^[0-9a-f]{40}$/);

    const llm = await startFakeLLM([]);
    cleanups.push(() => llm.close());
    const wsPort = await freePort();
    const gatewayPort = await freePort();
    editConfig(h.home, (c) => {
      c.providers.custom = { ...(c.providers.custom ?? {}), apiBase: `${llm.url}/v1` };
      const channels = c.channels as Record<string, Record<string, unknown>>;
      channels.websocket = { ...channels.websocket, port: wsPort };
      c.gateway = { ...(c.gateway as Record<string, unknown>), port: gatewayPort, heartbeat: { enabled: false } };
    });
    const gateway = spawnCli(['gateway'], h.home);
    cleanups.push(async () => {
      gateway.child.kill('SIGTERM');
      await gateway.exited;
    });
    let client: TestClient | undefined;
    await eventually(async () => {
      client = await connect(wsPort, { token: TOKEN, clientId: 'webui' });
    }, 20_000).catch((error: unknown) => {
      throw new Error(`${(error as Error).message}\n${gateway.output()}`);
    });
    const c = client as TestClient;
    cleanups.push(() => c.close());
    await c.next((f) => f.event === 'ready');
    const get = async (path: string) => {
      const res = await fetch(`http://127.0.0.1:${wsPort}${path}`, { headers: { authorization: `Bearer ${TOKEN}` } });
      expect(res.status).toBe(200);
      return (await res.json()) as Record<string, unknown>;
    };

    const files = (await get('/api/webui/memory')).files as { path: string; content: string }[];
    expect(files.find((file) => file.path === 'USER.md')?.content).toBe(
      readFileSync(join(h.workspace, 'USER.md'), 'utf8'),
    );
    expect(files.find((file) => file.path === 'memory/MEMORY.md')?.content).toContain('Prefers rye sourdough');
    expect(await get('/api/webui/memory/history?q=sourdough')).toMatchObject({
      matched: 1,
      entries: [{ cursor: 1, session_key: 'old', content: expect.stringContaining('sourdough baking') }],
    });
    const log = (await get('/api/webui/memory/log')).commits as { sha: string }[];
    expect(log[0]?.sha).toBe(sha);

    c.send({ type: 'webui_request', request_id: 'restore-1', action: 'memory.restore', payload: { sha } });
    const answer = await c.next((f) => f.event === 'webui_response' && f.request_id === 'restore-1');
    expect(answer).toMatchObject({ ok: true, result: { restored: ['memory/MEMORY.md'] } });
    expect(readFileSync(memoryPath, 'utf8')).toBe(upstreamMemory);
  }, 60_000);
});
