/**
 * `settings.tool_safety.update` (nanobot-ts only: the Tools page's exec sandbox mode, workspace restriction and SSRF
 * whitelist) over a real WebSocket against a real gateway: what lands in config.json, what `GET /api/settings`
 * shows back (`advanced`), that loosening needs `confirm_weaker`, and that the running agent takes it without a
 * restart.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startWebUiGateway, type WebUiGateway } from '../channels/websocket/gateway-helpers.js';
import { type ApiClient, apiClient } from './api-helpers.js';

const open: { run: WebUiGateway; api: ApiClient }[] = [];
afterEach(async () => {
  for (const { run, api } of open.splice(0)) {
    await api.close();
    await run.close();
  }
});

type Json = Record<string, unknown>;
interface Tools {
  restrictToWorkspace: boolean;
  ssrfWhitelist: string[];
  exec: Json & { sandbox: string };
}

async function start() {
  const run = await startWebUiGateway();
  const api = await apiClient(run);
  open.push({ run, api });
  const tools = () => (JSON.parse(readFileSync(join(run.dataDir, 'config.json'), 'utf8')) as { tools: Tools }).tools;
  return { run, api, tools };
}

describe('settings.tool_safety.update', () => {
  it('tightens at once, shows the values back in /api/settings, and the running gateway takes them', async () => {
    const { run, api, tools } = await start();
    const before = (await api.get('/api/settings')).body.advanced as Json;
    expect(before).toMatchObject({ restrict_to_workspace: true, exec_sandbox: 'auto', ssrf_whitelist: [] });

    const answer = await api.request('settings.tool_safety.update', { exec_sandbox: 'bwrap' });
    expect(answer).toMatchObject({
      ok: true,
      result: { advanced: { exec_sandbox: 'bwrap' }, requires_restart: false },
    });
    expect(tools().exec.sandbox).toBe('bwrap');
    // Applied by the hot reload: the gateway runs the new config.
    expect(run.gateway.loaded().config.tools.exec.sandbox).toBe('bwrap');
  });

  it('loosening is refused with a 409 until confirmed; then it lands as the CLI writes it', async () => {
    const { run, api, tools } = await start();
    const file = () => readFileSync(join(run.dataDir, 'config.json'), 'utf8');
    const untouched = file();
    for (const payload of [
      { restrict_to_workspace: false },
      { exec_sandbox: 'none' },
      { ssrf_whitelist: ['10.0.0.0/8'] },
      { restrict_to_workspace: true, exec_sandbox: 'none' },
    ]) {
      const refused = await api.request('settings.tool_safety.update', payload);
      expect(refused, JSON.stringify(payload)).toMatchObject({ ok: false, error: { status: 409 } });
      expect(String((refused.error as Json).message)).toMatch(/loosens tool safety.*Nothing was saved/);
    }
    expect(file()).toBe(untouched);

    const saved = await api.request('settings.tool_safety.update', {
      restrict_to_workspace: false,
      exec_sandbox: 'none',
      ssrf_whitelist: [' 10.0.0.0/8 ', '192.168.1.20', 'fd00::/8', '10.0.0.0/8', ''],
      confirm_weaker: true,
    });
    expect(saved).toMatchObject({
      ok: true,
      result: {
        advanced: {
          restrict_to_workspace: false,
          exec_sandbox: 'none',
          ssrf_whitelist: ['10.0.0.0/8', '192.168.1.20', 'fd00::/8'],
          ssrf_whitelist_count: 3,
        },
      },
    });
    expect(tools()).toMatchObject({
      restrictToWorkspace: false,
      ssrfWhitelist: ['10.0.0.0/8', '192.168.1.20', 'fd00::/8'],
      exec: { sandbox: 'none' },
    });
    // Removing whitelist entries and switching protections back on needs no confirmation.
    const tightened = await api.request('settings.tool_safety.update', {
      restrict_to_workspace: true,
      exec_sandbox: 'auto',
      ssrf_whitelist: ['192.168.1.20'],
    });
    expect(tightened).toMatchObject({ ok: true });
    expect(tools()).toMatchObject({
      restrictToWorkspace: true,
      ssrfWhitelist: ['192.168.1.20'],
      exec: { sandbox: 'auto' },
    });
  });

  it('a payload with nothing to change is a 400 that says what to send', async () => {
    const { api } = await start();
    const answer = await api.request('settings.tool_safety.update', { unknown: 1 });
    expect(answer).toMatchObject({ ok: false, error: { status: 400 } });
    expect(String((answer.error as Json).message)).toContain('restrict_to_workspace, exec_sandbox or ssrf_whitelist');
  });
});
