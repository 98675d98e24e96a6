/**
 * nanobot's remaining system settings routes against a real gateway: usage per day (from nanobot's file, and from
 * the turns this gateway runs), the offline version check, the empty CLI app catalog, the API service as configured,
 * the workspace payload, and the actions refused with what to do instead.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { localDay, normalizeTokenUsage, tokenUsagePayload } from '../../src/session/token-usage.js';
import { eventually } from '../channels/contract.js';
import { startWebUiGateway, type WebUiGateway } from '../channels/websocket/gateway-helpers.js';
import { connect, type TestClient } from '../channels/websocket/helpers.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function setup(): Promise<{ run: WebUiGateway; client: TestClient }> {
  const run = await startWebUiGateway([
    { text: 'Counted.', usage: { promptTokens: 40, completionTokens: 2, cachedTokens: 8 } },
  ]);
  cleanups.push(() => run.close());
  const client = await connect(run.port, { token: run.token, clientId: 'webui', origin: run.url });
  cleanups.push(() => client.close());
  await client.next((f) => f.event === 'ready');
  return { run, client };
}

async function get(run: WebUiGateway, path: string) {
  const res = await fetch(`${run.url}${path}`, { headers: { authorization: `Bearer ${run.token}` } });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

let n = 0;
async function mutation(client: TestClient, action: string, payload: unknown = {}) {
  const request_id = `s${++n}`;
  client.send({ type: 'webui_request', request_id, action, payload });
  return (await client.next(
    (f) => f.event === 'webui_response' && (f as { request_id?: string }).request_id === request_id,
  )) as { ok: boolean; error?: { status: number; message: string } };
}

describe('system settings', () => {
  it('reports usage per day and adds each turn to today, in nanobot’s file', async () => {
    const { run, client } = await setup();
    const empty = await get(run, '/api/settings/usage');
    expect(empty.body).toEqual({
      days: [],
      total_tokens: 0,
      total_tokens_30d: 0,
      total_tokens_365d: 0,
      peak_day_tokens: 0,
      current_streak_days: 0,
      longest_streak_days: 0,
      active_days_30d: 0,
      requests_30d: 0,
      updated_at: null,
    });
    client.send({ type: 'message', chat_id: 'c1', content: 'count this' });
    await client.next((f) => f.event === 'turn_end', 10_000);
    await eventually(async () => {
      const usage = (await get(run, '/api/settings/usage')).body as {
        days: Record<string, unknown>[];
        total_tokens: number;
      };
      expect(usage.total_tokens).toBeGreaterThanOrEqual(42);
      expect(usage.days.at(-1)).toMatchObject({
        date: localDay(new Date(), run.gateway.loaded().config.agents.defaults.timezone),
        cached_tokens: expect.any(Number),
        requests: expect.any(Number),
        sources: { user: expect.objectContaining({ total_tokens: expect.any(Number) }) },
      });
    });
    const file = JSON.parse(readFileSync(join(run.dataDir, 'webui', 'token-usage.json'), 'utf8'));
    expect(file.schema_version).toBe(1);
  });

  it('computes nanobot’s streaks and windows, and drops broken rows of a hand-edited file', () => {
    const state = normalizeTokenUsage({
      days: {
        '2026-12-01': { prompt_tokens: 10, completion_tokens: 5, requests: 1 },
        '2026-12-02': { total_tokens: 30, requests: 2, sources: { api: { total_tokens: 30, requests: 2 } } },
        '2026-11-20': { total_tokens: 7, requests: 1 },
        'not-a-day': { total_tokens: 99 },
        '2026-13-45': { total_tokens: 99 },
        '2026-12-03': 'garbage',
      },
      updated_at: '2026-12-02T10:00:00Z',
    });
    const payload = tokenUsagePayload(state, { now: new Date('2026-12-02T12:00:00Z'), timeZone: 'UTC' });
    expect(payload.days.map((d) => d.date)).toEqual(['2026-11-20', '2026-12-01', '2026-12-02']);
    expect(payload).toMatchObject({
      total_tokens: 52,
      total_tokens_30d: 52,
      peak_day_tokens: 30,
      current_streak_days: 2,
      longest_streak_days: 2,
      active_days_30d: 3,
      requests_30d: 4,
      updated_at: '2026-12-02T10:00:00Z',
    });
    expect(payload.days[1]?.sources).toEqual({ user: expect.objectContaining({ total_tokens: 15 }) });
    expect(payload.days[2]?.sources).toEqual({ api: expect.objectContaining({ total_tokens: 30 }) });
  });

  it('answers version check, CLI apps, API service and workspaces in nanobot’s shapes', async () => {
    const { run, client } = await setup();
    expect((await get(run, '/api/settings/version-check')).body).toEqual({ updateAvailable: null });
    expect((await get(run, '/api/settings/cli-apps')).body).toEqual({
      apps: [],
      installed_count: 0,
      catalog_updated_at: null,
      catalog_refresh_pending: false,
    });
    expect((await get(run, '/api/settings/cli-apps?installed_only=1')).body).toMatchObject({ apps: [] });
    const api = (await get(run, '/api/settings/api-service')).body;
    expect(api).toEqual({
      installed: true,
      running: false,
      managed: false,
      host: '127.0.0.1',
      port: 8900,
      timeout: 120,
      api_key_hint: null,
      endpoint: 'http://127.0.0.1:8900/v1',
      command: 'nanobot serve',
      log_path: null,
    });
    const workspaces = (await get(run, '/api/workspaces')).body;
    expect(workspaces).toMatchObject({
      schema_version: 1,
      default_access_mode: 'default',
      default_scope: { project_path: run.workspace },
      controls: { can_change_project: false, can_use_full_access: false, can_pick_folder: false },
    });
    for (const action of ['settings.api_service.start', 'settings.api_service.stop']) {
      const refused = await mutation(client, action, { host: '0.0.0.0', port: 9, timeout: 1 });
      expect(refused.error?.status).toBe(501);
      expect(refused.error?.message).toMatch(/nanobot serve/);
    }
    for (const action of ['install', 'update', 'uninstall', 'test']) {
      expect((await mutation(client, `settings.cli_app.${action}`, { name: 'x' })).error?.status).toBe(501);
    }
    expect((await mutation(client, 'workspace.pick_folder')).error?.status).toBe(501);
  });

  it('shows only a hint of the API key, and none of a short one', async () => {
    const { run } = await setup();
    const configPath = join(run.dataDir, 'config.json');
    const edit = async (apiKey: string) => {
      const config = JSON.parse(readFileSync(configPath, 'utf8'));
      config.api = { apiKey };
      mkdirSync(run.dataDir, { recursive: true });
      writeFileSync(configPath, JSON.stringify(config));
      await run.gateway.reload();
      return (await get(run, '/api/settings/api-service')).body;
    };
    const long = await edit('sk-very-long-api-secret-9876');
    expect(long.api_key_hint).toBe('sk-...9876');
    expect(JSON.stringify(long)).not.toContain('very-long');
    expect((await edit('short-key')).api_key_hint).toBe('configured');
  });
});
