/**
 * Settings › Models through the built `nanobot gateway`: `GET /api/settings` reads the running config (a `${VAR}` key
 * only as the reference's hint), `settings.agent.update` changes the model and the very next turn uses it against
 * the fake LLM, no restart; and the same change made from the WebUI and from the CLI (`nanobot provider login
 * openai-codex --set-main`) leaves config.json byte for byte the same.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { freePort } from '../channels/websocket/gateway-helpers.js';
import { connect, type TestClient } from '../channels/websocket/helpers.js';
import { eventually } from '../helpers/eventually.js';
import { type FakeLLM, startFakeLLM } from '../helpers/fake-llm.js';
import { type FakeWeb, json, startFakeWeb } from '../helpers/fake-web.js';
import { type UpstreamHome, upstreamHome } from '../helpers/upstream-homes.js';
import { editConfig, runCli, spawnCli, tempHome, withoutFirstRunNote } from './cli-helpers.js';

const TOKEN = 'settings-e2e-static-token-0123456789';
const ENV_SECRET = 'env-only-secret-value-0123456789';
const cleanups: (() => Promise<void> | void)[] = [];
let fake: FakeLLM | undefined;
let web: FakeWeb | undefined;
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  await fake?.close();
  await web?.close();
  fake = undefined;
  web = undefined;
});

type Json = Record<string, unknown>;

function writeConfig(home: string, config: Json): string {
  const dir = join(home, '.nanobot');
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const path = join(dir, 'config.json');
  writeFileSync(path, JSON.stringify(config, null, 2));
  return path;
}

function baseConfig(fakeUrl: string, wsPort: number, gatewayPort: number): Json {
  return {
    agents: { defaults: { provider: 'custom', model: 'first-model', timezone: 'UTC', timezoneMode: 'manual' } },
    providers: { custom: { apiKey: 'test-key', apiBase: `${fakeUrl}/v1` }, mistral: { apiKey: '${NB_E2E_KEY}' } },
    tools: { web: { enable: false } },
    gateway: { port: gatewayPort, heartbeat: { enabled: false } },
    channels: { websocket: { enabled: true, port: wsPort, token: TOKEN } },
  };
}

async function gateway(home: string, wsPort: number, env: Record<string, string> = {}, token = TOKEN) {
  const run = spawnCli(['gateway'], home, { env: { NB_E2E_KEY: ENV_SECRET, ...env } });
  cleanups.push(async () => {
    run.child.kill('SIGTERM');
    await run.exited;
  });
  await eventually(
    async () => {
      const probe = await connect(wsPort, { token, clientId: 'probe' });
      await probe.close();
      return true;
    },
    { timeoutMs: 20_000, intervalMs: 50 },
  ).catch((error: unknown) => {
    throw new Error(`${(error as Error).message}\ngateway output:\n${run.output()}`);
  });
  const c = await connect(wsPort, { token, clientId: 'webui' });
  cleanups.push(() => c.close());
  await c.next((f) => f.event === 'ready');
  return { run, c };
}

async function act(c: TestClient, id: string, action: string, payload: Json) {
  c.send({ type: 'webui_request', request_id: id, action, payload });
  return (await c.next((f) => f.event === 'webui_response' && f.request_id === id, 15_000)) as Json & {
    ok: boolean;
    result: Json;
    error?: { status: number; message: string };
  };
}

describe('Settings › Models under the built gateway', () => {
  it('reads the running config and switches the model for the next turn without a restart', async () => {
    fake = await startFakeLLM([{ text: 'one' }, { text: 'two' }]);
    const home = tempHome();
    const wsPort = await freePort();
    const configPath = writeConfig(home, baseConfig(fake.url, wsPort, await freePort()));
    const { c, run } = await gateway(home, wsPort);

    const res = await fetch(`http://127.0.0.1:${wsPort}/api/settings`, {
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    expect(res.status).toBe(200);
    const text = await res.text();
    const settings = JSON.parse(text) as { agent: Json; providers: Json[] };
    expect(settings.agent).toMatchObject({ model: 'first-model', provider: 'custom', has_api_key: true });
    expect(settings.providers.find((p) => p.name === 'mistral')).toMatchObject({
      configured: true,
      api_key_hint: '${NB••••KEY}',
    });
    expect(text).not.toContain(ENV_SECRET);
    expect(text).not.toContain('test-key');

    c.send({ type: 'attach', chat_id: 'e2e' });
    await c.next((f) => f.event === 'attached');
    c.send({ type: 'message', chat_id: 'e2e', content: 'before' });
    await c.next((f) => f.event === 'turn_end', 15_000);
    expect(fake.requests.at(-1)?.body.model).toBe('first-model');

    const answer = await act(c, 'u1', 'settings.agent.update', { model: 'second-model' });
    expect(answer.ok).toBe(true);
    expect(answer.result).toMatchObject({ agent: { model: 'second-model' }, requires_restart: false });
    expect(JSON.stringify(answer)).not.toContain(ENV_SECRET);
    const written = JSON.parse(readFileSync(configPath, 'utf8')) as {
      agents: { defaults: Json };
      providers: Record<string, Json>;
    };
    expect(written.agents.defaults.model).toBe('second-model');
    expect(written.providers.mistral?.apiKey).toBe('${NB_E2E_KEY}'); // the reference stays; the value is not baked in

    c.send({ type: 'message', chat_id: 'e2e', content: 'after' });
    await c.next((f) => f.event === 'turn_end', 15_000);
    expect(fake.requests.at(-1)?.body.model).toBe('second-model');
    expect(run.child.exitCode).toBeNull();
  });

  it('signing in to OpenAI Codex and making it the model: the WebUI writes what `provider login --set-main` writes', async () => {
    fake = await startFakeLLM();
    web = await startFakeWeb({
      routes: { '/oauth/token': json({ access_token: 'at-e2e', refresh_token: 'rt', expires_in: 3600 }) },
    });
    const oauthEnv = {
      NANOBOT_OPENAI_CODEX_AUTHORIZE_URL: web.url('/oauth/authorize'),
      NANOBOT_OPENAI_CODEX_TOKEN_URL: web.url('/oauth/token'),
      NANOBOT_OPENAI_CODEX_CALLBACK_PORT: '0',
    };
    const wsPort = await freePort();
    const config = baseConfig(fake.url, wsPort, await freePort());

    const viaCli = tempHome();
    const cliPath = writeConfig(viaCli, config);
    const login = await runCli(
      ['provider', 'login', 'openai-codex', '--set-main'],
      viaCli,
      { NB_E2E_KEY: ENV_SECRET, ...oauthEnv },
      'cli-code\n',
    );
    expect(withoutFirstRunNote(login.stderr)).toBe('');
    expect(login.code).toBe(0);

    const viaWebUi = tempHome();
    const webPath = writeConfig(viaWebUi, config);
    const { c } = await gateway(viaWebUi, wsPort, oauthEnv);
    const start = await act(c, 'o1', 'settings.provider.oauth_login', { provider: 'openai_codex' });
    expect(start.result.status).toBe('authorization_required');
    const state = new URL(String(start.result.authorization_url)).searchParams.get('state');
    const done = await act(c, 'o2', 'settings.provider.oauth_complete', {
      provider: 'openai_codex',
      flow_id: start.result.flow_id,
      authorization_response: `http://localhost:1455/auth/callback?code=web-code&state=${state}`,
    });
    expect(done.ok).toBe(true);
    const chosen = await act(c, 'o3', 'settings.agent.update', {
      model_preset: 'default',
      provider: 'openai_codex',
      model: 'openai-codex/gpt-5.1-codex',
    });
    expect(chosen.ok).toBe(true);
    expect(chosen.result.agent).toMatchObject({ provider: 'openai_codex', model: 'openai-codex/gpt-5.1-codex' });

    expect(readFileSync(webPath, 'utf8')).toBe(readFileSync(cliPath, 'utf8'));
    const tokenOf = (home: string) =>
      JSON.parse(readFileSync(join(home, '.nanobot', 'auth', 'openai-codex.json'), 'utf8'));
    expect(Object.keys(tokenOf(viaWebUi)).sort()).toEqual(Object.keys(tokenOf(viaCli)).sort());
  });
});

describe('Settings › Models over a real upstream home', () => {
  it('reads upstream’s camelCase provider blocks and saves into them, not beside them', async () => {
    fake = await startFakeLLM();
    const h: UpstreamHome = upstreamHome('pyhome');
    cleanups.push(h.cleanup);
    const wsPort = await freePort();
    const gatewayPort = await freePort();
    editConfig(h.home, (config) => {
      (config.providers.custom as Json).apiBase = `${fake?.url}/v1`;
      ((config.channels as Record<string, Json>).websocket as Json).port = wsPort;
      (config.gateway as Json).port = gatewayPort;
    });
    const token = 'py-static-token-0123456789';
    const { c } = await gateway(h.home, wsPort, {}, token);
    const res = await fetch(`http://127.0.0.1:${wsPort}/api/settings`, {
      headers: { authorization: `Bearer ${token}` },
    });
    const settings = (await res.json()) as { agent: Json; providers: Json[]; model_presets: Json[] };
    expect(settings.agent).toMatchObject({
      model: 'test-model',
      provider: 'custom',
      timezone: 'Europe/Berlin',
      has_api_key: true,
    });
    expect(settings.providers.find((p) => p.name === 'custom')).toMatchObject({
      configured: true,
      api_key_hint: '••••',
    });
    expect(settings.providers.find((p) => p.name === 'lm_studio')).toMatchObject({
      configured: false,
      default_api_base: 'http://localhost:1234/v1',
    });
    expect(settings.providers.filter((p) => p.is_custom)).toEqual([]); // upstream's blocks are the registry's, in camelCase

    const saved = await act(c, 'p1', 'settings.provider.update', {
      provider: 'lm_studio',
      apiBase: 'http://127.0.0.1:1234/v1',
    });
    expect(saved.ok).toBe(true);
    expect(saved.result.providers).toContainEqual(expect.objectContaining({ name: 'lm_studio', configured: true }));
    const written = JSON.parse(readFileSync(h.configPath, 'utf8')) as { providers: Record<string, Json> };
    expect(written.providers.lmStudio?.apiBase).toBe('http://127.0.0.1:1234/v1');
    expect(written.providers.lm_studio).toBeUndefined();
  });
});
