/** `nanobot status` and `nanobot agent -m` with a working and a broken MCP server, through the built CLI. */
import { afterEach, describe, expect, it } from 'vitest';
import { editConfig, runCli, tempHome } from '../cli/cli-helpers.js';
import { type FakeLLM, startFakeLLM } from '../helpers/fake-llm.js';
import { EVERYTHING } from './helpers.js';

let fake: FakeLLM | undefined;
afterEach(async () => {
  await fake?.close();
  fake = undefined;
});

async function homeWithServers(apiBase: string) {
  const home = tempHome();
  expect((await runCli(['onboard'], home)).code).toBe(0);
  editConfig(home, (config) => {
    config.agents.defaults.provider = 'custom';
    config.agents.defaults.model = 'test-model';
    config.providers.custom = { apiKey: 'test-key', apiBase };
    config.tools = {
      ...(config.tools as Record<string, unknown>),
      web: { enable: false },
      mcpServers: {
        everything: { command: process.execPath, args: [EVERYTHING, 'stdio'] },
        broken: { command: 'nanobot-test-no-such-mcp-server', args: ['--token', 'secret-arg'] },
      },
    };
  });
  return home;
}

describe('MCP in the CLI', () => {
  it('nanobot status lists each server with its state and tool count, or why it failed', async () => {
    const home = await homeWithServers('http://127.0.0.1:9/v1');
    const result = await runCli(['status'], home);
    expect(result.code).toBe(0);
    const section = result.stdout.slice(result.stdout.indexOf('MCP servers:'));
    expect(section).toMatch(/everything\s+connected, \d+ tools, \d+ resources, \d+ prompts\s+\(stdio /);
    expect(section).toMatch(/broken\s+failed: cannot start "nanobot-test-no-such-mcp-server": command not found/);
    expect(result.stdout).not.toContain('secret-arg');
  });

  it('nanobot agent -m still answers when a server fails to start, and uses the working one', async () => {
    fake = await startFakeLLM([
      { toolCalls: [{ name: 'mcp_everything_get-sum', arguments: { a: 2, b: 40 } }] },
      { text: 'The sum is 42.' },
    ]);
    const home = await homeWithServers(`${fake.url}/v1`);
    const result = await runCli(['agent', '-m', 'add 2 and 40'], home);
    expect(result.code).toBe(0);
    expect(result.stdout.trim()).toBe('The sum is 42.');
    expect(result.stderr).toMatch(/MCP server 'broken' is unavailable: cannot start/);
    expect(JSON.stringify(fake.requests[1]?.body.messages)).toContain('The sum of 2 and 40 is 42');
  });
});
