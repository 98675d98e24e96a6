/**
 * The built `nanobot gateway` over the latest upstream home (pyhome), driven as nanobot's WebUI drives it: the
 * usage panel shows the day upstream recorded and then this gateway's own turn; Telegram (a loopback fake of the
 * Bot API) is configured and enabled with one `settings.channel.configure` and runs without a restart; a stranger's
 * pairing code approved with `settings.pairing.approve` lets their next message through to the agent.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { eventually } from '../channels/contract.js';
import { type FakeBotApi, startFakeBotApi } from '../channels/telegram/fake-bot-api.js';
import { freePort } from '../channels/websocket/gateway-helpers.js';
import { connect, type TestClient } from '../channels/websocket/helpers.js';
import { editConfig, spawnCli } from '../cli/cli-helpers.js';
import { type FakeLLM, startFakeLLM } from '../helpers/fake-llm.js';
import { upstreamHome } from '../helpers/upstream-homes.js';

const TOKEN = 'py-static-token-0123456789'; // pyhome's static WebSocket token
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

interface Usage {
  days: { date: string; total_tokens: number; requests: number; sources: Record<string, { total_tokens: number }> }[];
  total_tokens: number;
}

describe('the built gateway’s channel settings, from nanobot’s WebUI', () => {
  it('shows usage, enables Telegram from the WebUI and admits a stranger approved there', async () => {
    const h = upstreamHome('pyhome');
    cleanups.push(h.cleanup);
    // Answers by what was asked: the WebUI's chat also asks for a title, in between.
    const reply = (body: unknown) => {
      const text = JSON.stringify(body);
      if (text.includes('may I come in')) return { text: 'Welcome aboard.' };
      if (text.includes('count me'))
        return { text: 'First answer.', usage: { promptTokens: 100, completionTokens: 20 } };
      return { text: 'A title', usage: { promptTokens: 1, completionTokens: 1 } };
    };
    const llm: FakeLLM = await startFakeLLM(Array.from({ length: 20 }, () => reply));
    cleanups.push(() => llm.close());
    const api: FakeBotApi = await startFakeBotApi();
    cleanups.push(() => api.close());
    const wsPort = await freePort();
    const gatewayPort = await freePort();
    editConfig(h.home, (c) => {
      c.providers.custom = { ...(c.providers.custom ?? {}), apiBase: `${llm.url}/v1` };
      const channels = c.channels as Record<string, Record<string, unknown>>;
      channels.websocket = { ...channels.websocket, port: wsPort };
      channels.telegram = { enabled: false, apiBase: api.url, pollTimeout: 1, streamEditInterval: 0.05 };
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
    const base = `http://127.0.0.1:${wsPort}`;
    const get = async <T>(path: string): Promise<T> => {
      const res = await fetch(`${base}${path}`, { headers: { authorization: `Bearer ${TOKEN}` } });
      expect(res.status).toBe(200);
      return (await res.json()) as T;
    };
    let n = 0;
    const mutation = async (action: string, payload: unknown) => {
      const request_id = `e2e-${++n}`;
      c.send({ type: 'webui_request', request_id, action, payload });
      return (await c.next(
        (f) => f.event === 'webui_response' && (f as { request_id?: string }).request_id === request_id,
      )) as {
        ok: boolean;
        result?: Record<string, unknown>;
        error?: { status: number; message: string };
      };
    };

    // Read: the day upstream recorded; then this gateway's own turn is added to today.
    const before = await get<Usage>('/api/settings/usage');
    expect(before.total_tokens).toBe(2443);
    expect(before.days.map((d) => d.date)).toContain('2026-12-01');
    c.send({ type: 'message', chat_id: 'usage-chat', content: 'count me' });
    await c.next((f) => f.event === 'turn_end', 15_000);
    await eventually(async () => {
      const after = await get<Usage>('/api/settings/usage');
      expect(after.total_tokens).toBeGreaterThanOrEqual(2443 + 120);
      const today = after.days.find((d) => d.date !== '2026-12-01');
      expect(today?.sources.user?.total_tokens).toBeGreaterThanOrEqual(120);
    }, 10_000);
    const recorded = JSON.parse(readFileSync(join(h.dataDir, 'webui', 'token-usage.json'), 'utf8'));
    expect(recorded.schema_version).toBe(1);
    expect(recorded.days['2026-12-01'].total_tokens).toBe(2443);

    // Write: configure and enable Telegram in one go; it runs without a restart.
    const saved = await mutation('settings.channel.configure', {
      name: 'telegram',
      values: { 'channels.telegram.token': api.token, 'channels.telegram.allowFrom': '' },
      enable: true,
    });
    expect(saved.ok).toBe(true);
    expect(JSON.stringify(saved)).not.toContain(api.token);
    const config = JSON.parse(readFileSync(join(h.dataDir, 'config.json'), 'utf8'));
    expect(config.channels.telegram).toMatchObject({ enabled: true, token: api.token, allowFrom: [] });
    await eventually(async () => {
      const { features } = await get<{ features: Record<string, unknown>[] }>('/api/settings/nanobot-features');
      expect(features.find((f) => f.name === 'telegram')).toMatchObject({ running: true, runtime_status: 'running' });
    }, 20_000);

    // A stranger gets a code; the WebUI approves it; their next message reaches the agent.
    api.userSays({ chatId: 91, from: { id: 91, username: 'newcomer' }, text: 'hello?' });
    await eventually(() => expect(api.messagesIn(91).length).toBeGreaterThan(0), 15_000);
    const code = /([A-Z2-9]{4}-[A-Z2-9]{4})/.exec(api.messagesIn(91)[0]?.text ?? '')?.[1] ?? '';
    const pending = await get<{ requests: { code: string; sender_id: string }[] }>('/api/settings/pairing');
    expect(pending.requests).toContainEqual(expect.objectContaining({ code, sender_id: '91' }));
    const approved = await mutation('settings.pairing.approve', { code });
    expect(approved.result?.last_action).toMatchObject({ ok: true, channel: 'telegram', sender_id: '91' });
    api.userSays({ chatId: 91, from: { id: 91, username: 'newcomer' }, text: 'may I come in now?' });
    await eventually(
      () => expect(api.messagesIn(91).map((m) => m.text)).toContainEqual(expect.stringContaining('Welcome aboard.')),
      15_000,
    ).catch((error: unknown) => {
      throw new Error(`${(error as Error).message}\n${llm.requests.length} model requests\n${gateway.output()}`);
    });
    expect(gateway.output()).not.toContain(api.token);
  }, 90_000);
});
