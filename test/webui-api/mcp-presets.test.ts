/**
 * Settings › MCP as nanobot's WebUI drives it (webui/src/lib/api.ts `fetchMcpPresets`, `saveCustomMcpServer`,
 * `importMcpConfig`, `updateMcpServerTools`, `runMcpPresetAction`): against a real gateway with the WebSocket
 * channel, a real stdio MCP server (test/mcp/fixtures/scripted-server.mjs) and the fake LLM. Rows have upstream's
 * `McpPresetInfo` shape, every change lands in config.json as the CLI writes it and restarts the MCP servers.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startWebUiGateway, type WebUiGateway } from '../channels/websocket/gateway-helpers.js';
import { SCRIPTED } from '../mcp/helpers.js';
import { type ApiClient, apiClient } from './api-helpers.js';

const open: { run: WebUiGateway; api: ApiClient }[] = [];
afterEach(async () => {
  for (const { run, api } of open.splice(0)) {
    await api.close();
    await run.close();
  }
});

async function start(script: Parameters<typeof startWebUiGateway>[0] = []) {
  const run = await startWebUiGateway(script);
  const api = await apiClient(run);
  open.push({ run, api });
  return { run, api };
}

const configOf = (run: WebUiGateway) =>
  JSON.parse(readFileSync(join(run.dataDir, 'config.json'), 'utf8')) as {
    tools: { mcpServers: Record<string, Record<string, unknown>> };
  };
type Row = Record<string, unknown> & { name: string; tool_names: string[] };
const rows = (result: unknown) => (result as { presets: Row[] }).presets;
const resultOf = (response: Record<string, unknown>) => {
  expect(response).toMatchObject({ ok: true });
  return response.result as Record<string, unknown>;
};

describe('Settings › MCP servers, as nanobot reads and writes them', () => {
  it('lists nothing at first, then adds a stdio server by command and shows it connected with its tools', async () => {
    const { run, api } = await start();
    expect((await api.get('/api/settings/mcp-presets')).body).toEqual({ presets: [], installed_count: 0 });

    // nanobot's form sends every value as text: args as a JSON array, env as a JSON object.
    const saved = resultOf(
      await api.request('settings.mcp.custom', {
        name: 'Fixture',
        command: process.execPath,
        args: JSON.stringify([SCRIPTED]),
        env: JSON.stringify({ FIXTURE_MODE: 'quiet' }),
        tool_timeout: '45',
      }),
    );
    expect(saved).toMatchObject({
      installed_count: 1,
      requires_restart: false,
      hot_reload: { ok: true },
      last_action: { ok: true, installed: true, verification: ['config_present'] },
    });
    const [row] = rows(saved);
    expect(row).toMatchObject({
      name: 'fixture',
      display_name: 'fixture',
      category: 'custom',
      transport: 'stdio',
      auth: null,
      installed: true,
      configured: true,
      available: true,
      status: 'configured',
      runtime_status: 'connected',
      required_fields: [],
      connection_summary: `${process.execPath} ${SCRIPTED}`,
      enabled_tools: ['*'],
      source: 'custom',
    });
    expect(row?.tool_names).toContain('mcp_fixture_structured');
    expect(row?.tool_count).toBe(row?.tool_names.length);

    expect(configOf(run).tools.mcpServers.fixture).toEqual({
      type: 'stdio',
      command: process.execPath,
      args: [SCRIPTED],
      env: { FIXTURE_MODE: 'quiet' },
      headers: {},
      toolTimeout: 45,
      enabledTools: ['*'],
    });
    // The running agent has the server's tools now, without a restart.
    expect(run.gateway.agent().tools.has('mcp_fixture_structured')).toBe(true);
    // The GET route shows the same row.
    expect(rows((await api.get('/api/settings/mcp-presets')).body)[0]).toMatchObject({ runtime_status: 'connected' });
  });

  it('turns tools off and on (enabledTools), and test lists every tool whatever is enabled', async () => {
    const { run, api } = await start();
    resultOf(await api.request('settings.mcp.custom', { name: 'fx', command: process.execPath, args: [SCRIPTED] }));

    const limited = resultOf(await api.request('settings.mcp.tools', { name: 'fx', enabled_tools: ['fail'] }));
    expect(configOf(run).tools.mcpServers.fx?.enabledTools).toEqual(['fail']);
    expect(rows(limited)[0]).toMatchObject({ enabled_tools: ['fail'], tool_names: ['mcp_fx_fail'] });
    expect(run.gateway.agent().tools.has('mcp_fx_structured')).toBe(false);

    const tested = resultOf(await api.request('settings.mcp.test', { name: 'fx' }));
    const action = tested.last_action as Record<string, unknown> & { tool_names: string[] };
    expect(action).toMatchObject({ ok: true });
    expect(action.tool_names).toEqual(expect.arrayContaining(['mcp_fx_fail', 'mcp_fx_structured', 'mcp_fx_place']));
    expect(action.tool_count).toBe(action.tool_names.length);
    expect(typeof action.checked_at).toBe('string');
    expect(rows(tested)[0]?.tool_names).toEqual(action.tool_names);

    // `*` anywhere means every tool again.
    resultOf(await api.request('settings.mcp.tools', { name: 'fx', enabled_tools: JSON.stringify(['fail', '*']) }));
    expect(configOf(run).tools.mcpServers.fx?.enabledTools).toEqual(['*']);
    expect(run.gateway.agent().tools.has('mcp_fx_structured')).toBe(true);
  });

  it('a turn calls the tool of a server added from the WebUI', async () => {
    const { run, api } = await start([
      { toolCalls: [{ name: 'mcp_fx_place', arguments: { at: { x: 1, y: 2 }, count: 3 } }] },
      { text: 'placed it' },
    ]);
    resultOf(await api.request('settings.mcp.custom', { name: 'fx', command: process.execPath, args: [SCRIPTED] }));
    const { connect } = await import('../channels/websocket/helpers.js');
    const chat = await connect(run.port, { token: run.token, clientId: 'webui', origin: run.url });
    open.push({ run: { close: async () => {} } as WebUiGateway, api: { close: () => chat.close() } as ApiClient });
    await chat.next((f) => f.event === 'ready');
    chat.send({ type: 'new_chat' });
    const attached = await chat.next((f) => f.event === 'attached');
    const chatId = (attached as { chat_id: string }).chat_id;
    chat.send({ type: 'message', chat_id: chatId, content: 'place it' });
    await chat.next((f) => f.event === 'turn_end', 20_000);
    const second = run.fake.requests.at(-1)?.body as { messages: { role: string; content: unknown }[] };
    const toolResult = second.messages.find((m) => m.role === 'tool');
    expect(JSON.stringify(toolResult?.content)).toContain('placed at {\\"x\\":1,\\"y\\":2} x3');
  });

  it('imports a Claude Desktop block, keeps secret values on a re-save that leaves them empty, and removes', async () => {
    const { run, api } = await start();
    const imported = resultOf(
      await api.request('settings.mcp.import_cursor', {
        config: JSON.stringify({
          mcpServers: {
            local: { command: process.execPath, args: [SCRIPTED], env: { API_TOKEN: 'tok-0123456789abcdef' } },
            remote: { url: 'http://127.0.0.1:9/mcp', headers: { Authorization: 'Bearer abc123def456' } },
          },
        }),
      }),
    );
    expect(rows(imported).map((r) => r.name)).toEqual(['local', 'remote']);
    expect(rows(imported)[1]).toMatchObject({
      transport: 'streamableHttp',
      connection_summary: 'http://127.0.0.1:9/mcp',
    });
    // The form never shows the stored values; saving it with them empty keeps them.
    resultOf(
      await api.request('settings.mcp.custom', {
        name: 'local',
        command: process.execPath,
        args: [SCRIPTED],
        env: { API_TOKEN: '' },
      }),
    );
    resultOf(await api.request('settings.mcp.custom', { name: 'remote', url: 'http://127.0.0.1:9/mcp' }));
    const servers = configOf(run).tools.mcpServers;
    expect(servers.local?.env).toEqual({ API_TOKEN: 'tok-0123456789abcdef' });
    expect(servers.remote?.headers).toEqual({ Authorization: 'Bearer abc123def456' });

    const removed = resultOf(await api.request('settings.mcp.remove', { name: 'remote' }));
    expect(removed.last_action).toMatchObject({ ok: true, removed: true, verification: ['config_absent'] });
    expect(Object.keys(configOf(run).tools.mcpServers)).toEqual(['local']);
    expect(await api.request('settings.mcp.remove', { name: 'remote' })).toMatchObject({
      ok: false,
      error: { status: 404, message: 'unknown MCP server' },
    });
  });

  it('a server that fails to start: its row says why, test says why, reconnect retries it', async () => {
    const { api } = await start();
    const saved = resultOf(
      await api.request('settings.mcp.custom', {
        name: 'broken',
        command: process.execPath,
        args: [SCRIPTED],
        env: { FIXTURE_FAIL_AT_START: 'cannot reach the widget service' },
      }),
    );
    expect(rows(saved)[0]).toMatchObject({ runtime_status: 'failed', tool_names: [] });
    expect(String(rows(saved)[0]?.error)).toContain('cannot reach the widget service');
    const tested = resultOf(await api.request('settings.mcp.test', { name: 'broken' }));
    expect(tested.last_action).toMatchObject({ ok: false, tool_count: 0, tool_names: [] });
    expect(String((tested.last_action as { error: string }).error)).toContain('cannot reach the widget service');
    const retried = resultOf(await api.request('settings.mcp.reconnect', { name: 'broken' }));
    expect(retried.last_action).toMatchObject({ ok: false });

    const missing = resultOf(
      await api.request('settings.mcp.custom', { name: 'absent', command: 'no-such-mcp-binary-here' }),
    );
    expect(rows(missing).find((r) => r.name === 'absent')).toMatchObject({
      status: 'missing_dependency',
      available: false,
    });
    const absentTest = resultOf(await api.request('settings.mcp.test', { name: 'absent' }));
    expect(absentTest.last_action).toMatchObject({ ok: false, error: 'missing dependency' });
  });

  it('answers 501 for what this version does not do: presets, switching a server off, MCP OAuth', async () => {
    const { run, api } = await start();
    for (const action of [
      'settings.mcp.enable',
      'settings.mcp.disable',
      'settings.mcp.oauth_start',
      'settings.mcp.oauth_complete',
      'settings.mcp.oauth_cancel',
    ]) {
      const answer = await api.request(action, { name: 'github', flow_id: 'x' });
      expect(answer, action).toMatchObject({ ok: false, error: { status: 501 } });
      expect(String((answer.error as { message: string }).message)).toMatch(/not (supported )?in this version|cannot/);
    }
    const status = await api.get('/api/settings/mcp-oauth/status?flow_id=x');
    expect(status.status).toBe(501);
    expect(String(status.body.error)).toContain('headers');
    const oauth = await api.request('settings.mcp.custom', {
      name: 'notion',
      url: 'https://mcp.notion.com/mcp',
      auth: 'oauth',
    });
    expect(oauth).toMatchObject({ ok: false, error: { status: 501 } });
    expect(configOf(run).tools.mcpServers ?? {}).toEqual({});
  });
});
