/**
 * The built `nanobot gateway` (bin/nanobot.js) driven as nanobot's WebUI drives it: add an MCP server with
 * `settings.mcp.custom`, see it connected in `GET /api/settings/mcp-presets`, and a turn (fake LLM) calls its tool
 * without a restart; install a skill from a folder with `skill.install` and see it in `GET /api/webui/skills`.
 */
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { freePort } from '../channels/websocket/gateway-helpers.js';
import { connect } from '../channels/websocket/helpers.js';
import { spawnCli, tempHome } from '../cli/cli-helpers.js';
import { eventually } from '../helpers/eventually.js';
import { type FakeLLM, startFakeLLM } from '../helpers/fake-llm.js';
import { SCRIPTED } from '../mcp/helpers.js';
import { type ApiClient, apiClient } from './api-helpers.js';

const TOKEN = 'e2e-static-token-0123456789';
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function gateway(fake: FakeLLM): Promise<{ api: ApiClient; home: string; port: number }> {
  const home = tempHome();
  const dataDir = join(home, '.nanobot');
  const workspace = join(dataDir, 'workspace');
  mkdirSync(workspace, { recursive: true });
  const port = await freePort();
  const config = {
    agents: { defaults: { workspace, provider: 'custom', model: 'test-model' } },
    providers: { custom: { apiKey: 'test-key', apiBase: `${fake.url}/v1` } },
    tools: { web: { enable: false } },
    gateway: { port: await freePort(), heartbeat: { enabled: false } },
    channels: { websocket: { enabled: true, port, token: TOKEN, pingIntervalS: 60 } },
  };
  writeFileSync(join(dataDir, 'config.json'), JSON.stringify(config, null, 2));
  const run = spawnCli(['gateway'], home);
  cleanups.push(async () => {
    run.child.kill('SIGTERM');
    await run.exited;
  });
  await eventually(
    async () => {
      const probe = await connect(port, { token: TOKEN, clientId: 'probe' });
      await probe.close();
      return true;
    },
    { timeoutMs: 20_000, intervalMs: 50 },
  ).catch((error: unknown) => {
    throw new Error(`${(error as Error).message}\ngateway output:\n${run.output()}`);
  });
  const url = `http://127.0.0.1:${port}`;
  const api = await apiClient({ port, token: TOKEN, url });
  cleanups.push(() => api.close());
  return { api, home, port };
}

describe('the built gateway serves the WebUI MCP and skills API', () => {
  it('adds an MCP server from the WebUI and the next turn calls its tool', async () => {
    const fake = await startFakeLLM([
      { toolCalls: [{ name: 'mcp_fx_place', arguments: { at: { x: 4, y: 2 } } }] },
      { text: 'done' },
    ]);
    cleanups.push(() => fake.close());
    const { api, home, port } = await gateway(fake);
    const saved = await api.request('settings.mcp.custom', {
      name: 'fx',
      command: process.execPath,
      args: JSON.stringify([SCRIPTED]),
    });
    expect(saved).toMatchObject({ ok: true, result: { hot_reload: { ok: true } } });
    const config = JSON.parse(readFileSync(join(home, '.nanobot', 'config.json'), 'utf8'));
    expect(config.tools.mcpServers.fx).toMatchObject({ type: 'stdio', command: process.execPath, args: [SCRIPTED] });

    const list = await api.get('/api/settings/mcp-presets');
    const row = (list.body.presets as Record<string, unknown>[])[0];
    expect(row).toMatchObject({ name: 'fx', runtime_status: 'connected', source: 'custom' });
    expect(row?.tool_names).toContain('mcp_fx_place');

    const chat = await connect(port, { token: TOKEN, clientId: 'webui' });
    cleanups.push(() => chat.close());
    await chat.next((f) => f.event === 'ready');
    chat.send({ type: 'new_chat' });
    const { chat_id } = (await chat.next((f) => f.event === 'attached')) as { chat_id: string };
    chat.send({ type: 'message', chat_id, content: 'place it' });
    await chat.next((f) => f.event === 'turn_end', 20_000);
    const last = fake.requests.at(-1)?.body as { messages: { role: string; content: unknown }[] };
    expect(JSON.stringify(last.messages.find((m) => m.role === 'tool')?.content)).toContain('placed at');
  });

  it('checks a skill (skill.preview), installs it with the digest shown, and lists it', async () => {
    const fake = await startFakeLLM();
    cleanups.push(() => fake.close());
    const { api } = await gateway(fake);
    const source = join(mkdtempSync(join(tmpdir(), 'nb-e2e-skill-')), 'note-taker');
    mkdirSync(source);
    writeFileSync(join(source, 'SKILL.md'), '---\nname: note-taker\ndescription: Takes notes.\n---\n\n# Notes\n');
    const checked = await api.request('skill.preview', { source });
    expect(checked).toMatchObject({ ok: true, result: { preview: { name: 'note-taker', commands: [] } } });
    const { digest } = (checked.result as { preview: { digest: string } }).preview;
    const installed = await api.request('skill.install', { source, digest });
    expect(installed).toMatchObject({ ok: true, result: { last_action: { installed: true, name: 'note-taker' } } });
    const list = await api.get('/api/webui/skills');
    expect((list.body.skills as Record<string, unknown>[])[0]).toMatchObject({
      name: 'note-taker',
      description: 'Takes notes.',
      source: 'workspace',
      enabled: true,
      available: true,
    });
  });
});
