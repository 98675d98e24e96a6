import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { chooseTransport } from '../../src/mcp/transport.js';

async function load(tools: unknown, env: NodeJS.ProcessEnv = {}) {
  const home = mkdtempSync(join(tmpdir(), 'nb-mcp-config-'));
  const configPath = join(home, 'config.json');
  writeFileSync(configPath, JSON.stringify({ tools }));
  return (await loadConfig({ configPath, home, env })).config.tools.mcpServers;
}

describe('tools.mcpServers in config.json', () => {
  it("reads nanobot's snake_case keys and keeps server, env and header names as written", async () => {
    const servers = await load(
      {
        mcp_servers: {
          my_server: {
            url: 'https://mcp.example.com/mcp',
            type: 'http',
            tool_timeout: 5,
            enabled_tools: ['search_issues'],
            headers: { 'X-Api-Key': '${MCP_KEY}' },
          },
          local_fs: { command: 'npx', args: ['-y', 'server'], env: { API_TOKEN: 'abc', some_var: '1' } },
        },
      },
      { MCP_KEY: 'from-env' },
    );
    expect(servers.my_server).toMatchObject({
      toolTimeout: 5,
      enabledTools: ['search_issues'],
      headers: { 'X-Api-Key': 'from-env' },
    });
    expect(
      chooseTransport(servers.my_server ?? { args: [], env: {}, headers: {}, toolTimeout: 30, enabledTools: [] }),
    ).toEqual({ ok: true, type: 'streamableHttp' });
    expect(servers.local_fs).toMatchObject({
      env: { API_TOKEN: 'abc', some_var: '1' },
      toolTimeout: 30,
      enabledTools: ['*'],
    });
  });
});
