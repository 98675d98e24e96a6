/**
 * The agent with real MCP servers (server-everything and server-filesystem over stdio) and a fake LLM: tool results
 * reach the model, a killed server comes back on the next call, and a server that cannot start does not stop the
 * agent from answering.
 */
import { mkdirSync, mkdtempSync, realpathSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { type Agent, createAgent } from '../../src/app/agent.js';
import { loadConfig } from '../../src/config/load.js';
import { type FakeLLM, startFakeLLM } from '../helpers/fake-llm.js';
import { EVERYTHING, FILESYSTEM, waitFor } from './helpers.js';

let agent: Agent | undefined;
let fake: FakeLLM | undefined;
afterEach(async () => {
  await agent?.shutdown();
  await fake?.close();
  agent = undefined;
  fake = undefined;
});

async function agentWithServers(fakeLlm: FakeLLM, mcpServers: Record<string, unknown>) {
  const home = realpathSync(mkdtempSync(join(tmpdir(), 'nb-mcp-home-')));
  const dataDir = join(home, '.nanobot');
  mkdirSync(join(dataDir, 'workspace'), { recursive: true });
  const configPath = join(dataDir, 'config.json');
  const config = {
    agents: { defaults: { workspace: join(dataDir, 'workspace'), provider: 'custom', model: 'test-model' } },
    providers: { custom: { apiKey: 'test-key', apiBase: `${fakeLlm.url}/v1` } },
    tools: { web: { enable: false }, mcpServers },
  };
  writeFileSync(configPath, JSON.stringify(config, null, 2));
  const loaded = await loadConfig({ configPath, home, env: {} });
  return createAgent(loaded, { env: { PATH: process.env.PATH, HOME: home } });
}

const turn = (content: string) => agent?.loop.processMessage({ channel: 'cli', chatId: 'direct', content });

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** The tool messages of one recorded request. */
function toolMessages(request: FakeLLM['requests'][number] | undefined): { name?: string; content?: unknown }[] {
  const messages = (request?.body.messages ?? []) as { role: string; content?: unknown; name?: string }[];
  return messages.filter((message) => message.role === 'tool');
}

describe('the agent with MCP servers', () => {
  it('calls server-everything and server-filesystem tools and the results reach the model', async () => {
    const shared = realpathSync(mkdtempSync(join(tmpdir(), 'nb-mcp-files-')));
    writeFileSync(join(shared, 'notes.txt'), 'the launch code is 4711\n');
    fake = await startFakeLLM([
      { toolCalls: [{ name: 'mcp_everything_echo', arguments: { message: 'hello over MCP' } }] },
      { toolCalls: [{ name: 'mcp_filesystem_read_text_file', arguments: { path: join(shared, 'notes.txt') } }] },
      { text: 'The code is 4711.' },
    ]);
    agent = await agentWithServers(fake, {
      everything: { command: process.execPath, args: [EVERYTHING, 'stdio'] },
      filesystem: { command: process.execPath, args: [FILESYSTEM, shared] },
      broken: { command: 'nanobot-test-no-such-mcp-server' },
    });

    const output = await turn('What is the launch code?');
    expect(output?.content).toBe('The code is 4711.');

    const advertised = ((fake.requests[0]?.body.tools ?? []) as { function: { name: string } }[]).map(
      (tool) => tool.function.name,
    );
    const firstMcp = advertised.findIndex((name) => name.startsWith('mcp_'));
    expect(firstMcp).toBeGreaterThan(0);
    expect(advertised.slice(firstMcp).every((name) => name.startsWith('mcp_'))).toBe(true);
    expect(advertised).toContain('mcp_everything_echo');
    expect(advertised).toContain('mcp_filesystem_read_text_file');
    expect(advertised).toContain('mcp_everything_prompt_simple-prompt');

    expect(JSON.stringify(toolMessages(fake.requests[1]))).toContain('Echo: hello over MCP');
    expect(JSON.stringify(toolMessages(fake.requests[2]))).toContain('the launch code is 4711');

    const status = Object.fromEntries((agent.mcp?.status() ?? []).map((s) => [s.name, s]));
    expect(status.everything?.state).toBe('connected');
    expect(status.filesystem?.state).toBe('connected');
    expect(status.broken).toMatchObject({ state: 'failed', error: expect.stringMatching(/command not found/) });

    // Agent.shutdown stops the server processes.
    const pids = [status.everything?.pid ?? 0, status.filesystem?.pid ?? 0];
    expect(pids.every((pid) => pid > 0)).toBe(true);
    await agent.shutdown();
    agent = undefined;
    await waitFor(() => pids.every((pid) => !isRunning(pid)), 'the MCP server processes to exit');
  });

  it('reconnects a stdio server that was killed mid-session and the call succeeds', async () => {
    fake = await startFakeLLM([
      { toolCalls: [{ name: 'mcp_everything_echo', arguments: { message: 'first' } }] },
      { text: 'ok 1' },
      { toolCalls: [{ name: 'mcp_everything_echo', arguments: { message: 'after the crash' } }] },
      { text: 'ok 2' },
    ]);
    agent = await agentWithServers(fake, { everything: { command: process.execPath, args: [EVERYTHING, 'stdio'] } });
    expect((await turn('echo first'))?.content).toBe('ok 1');

    const before = agent.mcp?.status()[0];
    expect(before?.pid).toBeGreaterThan(0);
    process.kill(before?.pid ?? 0, 'SIGKILL');
    await waitFor(() => agent?.mcp?.status()[0]?.state === 'disconnected', 'the crash to be noticed');

    expect((await turn('echo again'))?.content).toBe('ok 2');
    const results = toolMessages(fake.requests[3]);
    expect(JSON.stringify(results.at(-1))).toContain('Echo: after the crash');
    const after = agent.mcp?.status()[0];
    expect(after?.state).toBe('connected');
    expect(after?.pid).not.toBe(before?.pid);
  });
});
