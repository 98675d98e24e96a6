/**
 * Settings › Memory's API against a real gateway: the three memory files as on disk, the memory repository's log and
 * a commit's diff (what /dream-log shows), restoring a commit over `webui_request` (what /dream-restore does: the
 * file is back on disk and a commit records it), the history search; and per-session usage from token_stats.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { eventually } from '../channels/contract.js';
import { startWebUiGateway, type WebUiGateway } from '../channels/websocket/gateway-helpers.js';
import { connect } from '../channels/websocket/helpers.js';
import { type ApiClient, apiClient } from './api-helpers.js';
import { DREAMT_MEMORY, FIRST_MEMORY, seedMemory } from './memory-helpers.js';

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

describe('memory API', () => {
  it('shows the memory files as they are on disk', async () => {
    const { run, api } = await start();
    await seedMemory(run.workspace);
    const { status, body } = await api.get('/api/webui/memory');
    expect(status).toBe(200);
    const files = body.files as { path: string; exists: boolean; content: string; error: string | null }[];
    expect(files.map((file) => file.path)).toEqual(['SOUL.md', 'USER.md', 'memory/MEMORY.md']);
    expect(files[2]).toMatchObject({ exists: true, content: DREAMT_MEMORY, truncated: false, error: null });
    expect(files[1]?.content).toContain('Europe/Berlin');
  });

  it('lists the commits newest first and shows one commit’s diff', async () => {
    const { run, api } = await start();
    const seeded = await seedMemory(run.workspace);
    const log = await api.get('/api/webui/memory/log');
    const commits = log.body.commits as { sha: string; title: string; can_restore: boolean; date: string }[];
    expect(commits.map((c) => c.sha)).toEqual([seeded.user, seeded.dream, seeded.baseline]);
    expect(commits[1]).toMatchObject({ title: 'dream: remember the move to Berlin', can_restore: true });
    expect(commits[2]?.can_restore).toBe(false);
    expect(Number.isNaN(Date.parse(commits[0]?.date ?? ''))).toBe(false);

    // An abbreviated sha, in upper case, as a user might paste it from /dream-log.
    const shown = await api.get(`/api/webui/memory/log/${seeded.dream.slice(0, 8).toUpperCase()}`);
    expect(shown.status).toBe(200);
    expect(shown.body).toMatchObject({
      sha: seeded.dream,
      message: 'dream: remember the move to Berlin\n\nMEMORY.md +1',
      files: [{ path: 'memory/MEMORY.md', status: 'modified', added: 1, removed: 0 }],
      diff_truncated: false,
    });
    expect(shown.body.diff).toContain('+- Lives in Berlin since May');
    expect(shown.body.diff).toContain('memory/MEMORY.md');
  });

  it('restores a commit: the file is back on disk and a new commit records it', async () => {
    const { run, api } = await start();
    const seeded = await seedMemory(run.workspace);
    const answer = await api.request('memory.restore', { sha: seeded.dream });
    expect(answer).toMatchObject({ ok: true, result: { restored: ['memory/MEMORY.md'] } });
    const commit = (answer.result as { commit: string }).commit;
    expect(commit).toMatch(/^[0-9a-f]{40}$/);
    expect(readFileSync(join(run.workspace, 'memory', 'MEMORY.md'), 'utf8')).toBe(FIRST_MEMORY);
    // The later USER.md change is untouched.
    expect(readFileSync(join(run.workspace, 'USER.md'), 'utf8')).toContain('Europe/Berlin');
    const log = await api.get('/api/webui/memory/log');
    expect((log.body.commits as { sha: string; title: string }[])[0]).toMatchObject({ sha: commit });
    // Restoring again changes nothing and says so with a null commit.
    const again = await api.request('memory.restore', { sha: seeded.dream });
    expect(again).toMatchObject({ ok: true, result: { commit: null } });
  });

  it('refuses the first commit, an unknown one and a payload without a sha, saying what is wrong', async () => {
    const { run, api } = await start();
    const seeded = await seedMemory(run.workspace);
    expect(await api.request('memory.restore', { sha: seeded.baseline })).toMatchObject({
      ok: false,
      error: { status: 409, message: expect.stringMatching(/first commit/) },
    });
    expect(await api.request('memory.restore', { sha: 'abcdef12' })).toMatchObject({
      ok: false,
      error: { status: 404, message: expect.stringMatching(/No memory commit/) },
    });
    expect(await api.request('memory.restore', {})).toMatchObject({ ok: false, error: { status: 400 } });
    expect((await api.get('/api/webui/memory/log/abcdef12')).status).toBe(404);
  });

  it('an empty workspace has no files, no commits and no history, and says so without failing', async () => {
    const { api } = await start();
    const files = (await api.get('/api/webui/memory')).body.files as { exists: boolean }[];
    expect(files.every((file) => !file.exists)).toBe(true);
    expect((await api.get('/api/webui/memory/log')).body).toEqual({ commits: [] });
    expect((await api.get('/api/webui/memory/history')).body).toMatchObject({ total: 0, matched: 0, entries: [] });
  });

  it('searches history.jsonl, newest first, case-insensitively', async () => {
    const { run, api } = await start();
    await seedMemory(run.workspace);
    const all = await api.get('/api/webui/memory/history');
    expect(all.body).toMatchObject({ total: 3, matched: 3 });
    expect((all.body.entries as { content: string }[])[0]?.content).toBe('Talked about the Raspberry Pi setup.');
    const hit = await api.get(`/api/webui/memory/history?q=${encodeURIComponent('TOMATOES')}`);
    expect(hit.body).toMatchObject({
      query: 'TOMATOES',
      total: 3,
      matched: 1,
      entries: [
        {
          cursor: 2,
          content: 'User asked to water the tomatoes every morning at 7.',
          session_key: 'websocket:c1',
          truncated: false,
        },
      ],
    });
    expect((await api.get('/api/webui/memory/history?q=nowhere')).body).toMatchObject({ matched: 0, entries: [] });
  });
});

describe('per-session usage', () => {
  it('lists each session’s token_stats, as /status counts them', async () => {
    const { run, api } = await start([
      { text: 'One.', usage: { promptTokens: 400, completionTokens: 20, cachedTokens: 100 } },
      { text: 'Two.', usage: { promptTokens: 300, completionTokens: 10, cachedTokens: 0 } },
    ]);
    expect((await api.get('/api/webui/usage/sessions')).body).toEqual({ sessions: [], priced: false, limit: 100 });
    for (const chat of ['c1', 'c2']) await sendTurn(run, chat);
    await eventually(async () => {
      const rows = (await api.get('/api/webui/usage/sessions')).body.sessions as Record<string, unknown>[];
      expect(rows).toHaveLength(2);
      const byKey = Object.fromEntries(rows.map((row) => [row.key, row]));
      expect(byKey['websocket:c1']).toMatchObject({
        source: 'user',
        prompt_tokens: 400,
        completion_tokens: 20,
        cached_tokens: 100,
        total_tokens: 420,
        llm_calls: 1,
        cost_usd: 0,
      });
      expect(byKey['websocket:c2']).toMatchObject({ total_tokens: 310, cached_tokens: 0 });
    });
  });

  it('prices a session’s calls when agents.defaults.modelPrices has the model, and says it is priced', async () => {
    const { run, api } = await start([
      { text: 'Priced.', usage: { promptTokens: 400, completionTokens: 20, cachedTokens: 100 } },
    ]);
    const configPath = join(run.dataDir, 'config.json');
    const config = JSON.parse(readFileSync(configPath, 'utf8'));
    config.agents.defaults.modelPrices = { 'test-model': { input: 1, output: 2, cached: 0.5 } };
    writeFileSync(configPath, JSON.stringify(config, null, 2));
    expect(await run.gateway.reload()).toBe(true);
    await sendTurn(run, 'c1');
    await eventually(async () => {
      const body = (await api.get('/api/webui/usage/sessions')).body;
      expect(body.priced).toBe(true);
      const [row] = body.sessions as { cost_usd: number }[];
      // 300 fresh prompt tokens at $1/M, 100 cached at $0.50/M, 20 completion at $2/M.
      expect(row?.cost_usd).toBeCloseTo((300 * 1 + 100 * 0.5 + 20 * 2) / 1_000_000, 12);
    });
  });
});

async function sendTurn(run: WebUiGateway, chatId: string): Promise<void> {
  const client = await connect(run.port, { token: run.token, clientId: 'webui', origin: run.url });
  try {
    await client.next((f) => f.event === 'ready');
    client.send({ type: 'message', chat_id: chatId, content: `hello ${chatId}` });
    await client.next((f) => f.event === 'turn_end', 10_000);
  } finally {
    await client.close();
  }
}
