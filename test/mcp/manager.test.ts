import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { McpServerConfig } from '../../src/config/schema.js';
import { type McpManager, startMcpServers } from '../../src/mcp/manager.js';
import { createNetworkPolicy } from '../../src/security/network.js';
import { ToolRegistry } from '../../src/tools/registry.js';
import { defineTool, ok } from '../../src/tools/types.js';
import { unfence } from '../helpers/fence.js';
import { context, SCRIPTED, serverConfig, toolCall, waitFor } from './helpers.js';

const open: McpManager[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((manager) => manager.close()));
});

async function start(servers: Record<string, McpServerConfig>, registry = new ToolRegistry()) {
  const manager = await startMcpServers({
    servers,
    registry,
    network: createNetworkPolicy(),
    env: { PATH: process.env.PATH, HOME: process.env.HOME, OPENAI_API_KEY: 'sk-must-not-leak' },
    home: process.env.HOME ?? '/',
    log: { debug() {}, info() {}, warn() {}, error() {} },
    connectTimeoutMs: 10_000,
    reconnectDelaysMs: [0, 200],
    retryDelaysMs: [],
  });
  open.push(manager);
  return { manager, registry };
}

const scripted = (fields: Partial<McpServerConfig> = {}) =>
  serverConfig({ command: process.execPath, args: [SCRIPTED], ...fields });

describe('MCP servers in the tool registry', () => {
  it('registers wrapped, sanitised names after the built-ins and maps isError to an error result', async () => {
    const registry = new ToolRegistry();
    registry.register(
      defineTool({ name: 'zz_builtin', description: 'b', parameters: z.object({}), execute: async () => ok('b') }),
    );
    const { manager } = await start({ scripted: scripted() }, registry);

    const names = registry.names();
    expect(names[0]).toBe('zz_builtin');
    expect(names.slice(1)).toEqual([...names.slice(1)].sort());
    expect(names).toContain('mcp_scripted_add_tool');
    expect(names).toContain('mcp_scripted_fail');
    for (const name of names) expect(name).toMatch(/^[a-zA-Z0-9_-]{1,64}$/);
    const awkward = names.find((name) => name.startsWith('mcp_scripted_weird_name'));
    expect(awkward).toHaveLength(64);
    expect(unfence(String((await registry.execute(toolCall(awkward ?? ''), context())).content))).toMatch(
      /^ran weird\.name/,
    );

    const failed = await registry.execute(toolCall('mcp_scripted_fail'), context());
    expect(failed.isError).toBe(true);
    expect(failed.content).toMatch(
      /^Error: <<<UNTRUSTED_CONTENT nonce=\w+ source=mcp_scripted_fail>>>\nthe widget is broken\n/,
    );

    const picture = await registry.execute(toolCall('mcp_scripted_picture'), context());
    expect(picture.content).toEqual([
      {
        type: 'text',
        text: expect.stringMatching(/^<<<UNTRUSTED_CONTENT nonce=\w+ source=mcp_scripted_picture>>>\na red dot\n/),
      },
      { type: 'image_url', image_url: { url: expect.stringMatching(/^data:image\/png;base64,iVBOR/) } },
    ]);
    const structured = await registry.execute(toolCall('mcp_scripted_structured'), context());
    expect(structured.content).toContain('"temperature": 21');
    const placed = await registry.execute(
      toolCall('mcp_scripted_place', { at: { x: 1, y: 2 }, count: '3' }),
      context(),
    );
    expect(unfence(String(placed.content))).toBe('placed at {"x":1,"y":2} x3');

    expect(manager.status()).toEqual([
      expect.objectContaining({ name: 'scripted', state: 'connected', tools: 8, resources: 0, prompts: 0 }),
    ]);
  });

  it('starts stdio servers with a clean environment plus their own env', async () => {
    const { registry } = await start({ scripted: scripted({ env: { SERVER_TOKEN: 'for-this-server' } }) });
    const result = await registry.execute(toolCall('mcp_scripted_environment'), context());
    const names = unfence(String(result.content)).split(',');
    expect(names).toContain('SERVER_TOKEN');
    expect(names).toContain('PATH');
    expect(names).not.toContain('OPENAI_API_KEY');
  });

  it('picks up tools added at run time through notifications/tools/list_changed', async () => {
    const { registry, manager } = await start({ scripted: scripted() });
    const before = registry.definitions();
    expect(registry.has('mcp_scripted_late_tool')).toBe(false);
    const added = await registry.execute(toolCall('mcp_scripted_add_tool', { name: 'late tool' }), context());
    expect(unfence(String(added.content))).toBe('added late tool');
    await waitFor(() => registry.has('mcp_scripted_late_tool'), 'the refreshed tool list');
    expect(registry.definitions()).not.toBe(before);
    const late = await registry.execute(toolCall('mcp_scripted_late_tool'), context());
    expect(unfence(String(late.content))).toBe('ran late tool');
    expect(manager.status()[0]?.tools).toBe(9);
  });

  it("gives up on a call after the server's toolTimeout and says so", async () => {
    const { registry } = await start({ scripted: scripted({ toolTimeout: 0.3 }) });
    const result = await registry.execute(toolCall('mcp_scripted_slow'), context());
    expect(result.isError).toBe(true);
    expect(result.content).toMatch(/MCP server 'scripted' did not answer within 0.3s \(toolTimeout\)/);
  });

  it('a call that finds the stdio server killed reconnects and is retried', async () => {
    const { registry, manager } = await start({ scripted: scripted() });
    const pid = manager.status()[0]?.pid ?? 0;
    expect(pid).toBeGreaterThan(0);
    process.kill(pid, 'SIGKILL');
    // No waiting: the call may reach the dying process before the exit is noticed.
    const result = await registry.execute(toolCall('mcp_scripted_place', { at: { x: 0 } }), context());
    expect(unfence(String(result.content))).toBe('placed at {"x":0} x1');
    expect(manager.status()[0]?.state).toBe('connected');
    expect(manager.status()[0]?.pid).not.toBe(pid);
  });

  it('registers only the tools enabledTools names (raw or wrapped)', async () => {
    const { registry, manager } = await start({
      scripted: scripted({ enabledTools: ['fail', 'mcp_scripted_picture'] }),
      none: scripted({ enabledTools: [] }),
    });
    expect(registry.names()).toEqual(['mcp_scripted_fail', 'mcp_scripted_picture']);
    expect(manager.status().map((s) => [s.name, s.state, s.tools])).toEqual([
      ['none', 'connected', 0],
      ['scripted', 'connected', 2],
    ]);
  });

  it('reports servers that cannot start while the others work, and removes tools on close', async () => {
    const { registry, manager } = await start({
      good: scripted(),
      missing: serverConfig({ command: 'nanobot-no-such-mcp-server' }),
      crashing: scripted({ env: { FIXTURE_FAIL_AT_START: 'boom: SERVER_TOKEN is not set' } }),
      nothing: serverConfig({}),
    });
    const byName = Object.fromEntries(manager.status().map((status) => [status.name, status]));
    expect(byName.good?.state).toBe('connected');
    expect(byName.missing).toMatchObject({ state: 'failed', error: expect.stringMatching(/command not found/) });
    expect(byName.crashing).toMatchObject({ state: 'failed', error: expect.stringMatching(/SERVER_TOKEN is not set/) });
    expect(byName.nothing).toMatchObject({ state: 'failed', error: expect.stringMatching(/no "command"/) });
    expect(registry.names().every((name) => name.startsWith('mcp_good_'))).toBe(true);

    await manager.close();
    expect(registry.names()).toEqual([]);
    expect(manager.status().find((s) => s.name === 'good')?.state).toBe('closed');
  });
});
