/**
 * Settings › Models as nanobot's WebUI drives it (webui/src/lib/api.ts `fetchSettings`, `updateSettings`,
 * `createModelConfiguration`…, `fetchProviderModels`, the OAuth calls): `GET /api/settings` over HTTP, the actions
 * as `webui_request` over a real WebSocket, against a real gateway with the fake LLM; what lands in config.json.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startWebUiGateway, type WebUiGateway } from '../channels/websocket/gateway-helpers.js';
import { connect, type TestClient } from '../channels/websocket/helpers.js';
import { eventually } from '../helpers/eventually.js';
import { type FakeWeb, json, startFakeWeb } from '../helpers/fake-web.js';

const open: { run: WebUiGateway; clients: TestClient[]; web?: FakeWeb }[] = [];
afterEach(async () => {
  for (const { run, clients, web } of open.splice(0)) {
    for (const client of clients) await client.close();
    await run.close();
    await web?.close();
  }
});

type Json = Record<string, unknown>;
type Settings = Json & {
  agent: Json;
  model_presets: Json[];
  providers: (Json & { name: string })[];
  model_call_order: string[];
  model_call_order_editable: boolean;
};

async function setup(script: Parameters<typeof startWebUiGateway>[0] = []) {
  const run = await startWebUiGateway(script);
  const entry: (typeof open)[number] = { run, clients: [] };
  open.push(entry);
  const c = await connect(run.port, { token: run.token, clientId: 'webui', origin: run.url });
  entry.clients.push(c);
  await c.next((f) => f.event === 'ready');
  let n = 0;
  const act = async (action: string, payload: Json = {}) => {
    const id = `r${n++}`;
    c.send({ type: 'webui_request', request_id: id, action, payload });
    const frame = (await c.next((f) => f.event === 'webui_response' && f.request_id === id, 10_000)) as Json;
    return frame as { ok: boolean; result: Settings & Json; error: { status: number; message: string } };
  };
  const get = async (path: string) => {
    const res = await fetch(`${run.url}${path}`, { headers: { authorization: `Bearer ${run.token}` } });
    return { status: res.status, body: (await res.json()) as Settings & Json };
  };
  const configPath = join(run.dataDir, 'config.json');
  const config = () => JSON.parse(readFileSync(configPath, 'utf8')) as Json & Record<string, Json>;
  return { run, c, act, get, config, configPath, entry };
}

const row = (settings: Settings, name: string) => settings.providers.find((p) => p.name === name);
const defaults = (config: Record<string, Json>) => (config.agents as { defaults: Json }).defaults;

describe('GET /api/settings', () => {
  it('answers nanobot’s SettingsPayload from the live config, keys only as hints', async () => {
    const { get } = await setup();
    const { status, body } = await get('/api/settings');
    expect(status).toBe(200);
    expect(body.agent).toMatchObject({
      model: 'test-model',
      provider: 'custom',
      resolved_provider: 'custom',
      has_api_key: true,
      model_preset: 'default',
      max_tokens: 8192,
      context_window_tokens: 200_000,
      temperature: 0.1,
      reasoning_effort: null,
      tool_hint_max_length: 40,
    });
    expect(body.model_presets).toEqual([
      expect.objectContaining({
        name: 'default',
        is_default: true,
        active: true,
        model: 'test-model',
        provider: 'custom',
      }),
    ]);
    expect(body.model_call_order).toEqual([]);
    expect(body.model_call_order_editable).toBe(false);
    expect(row(body, 'custom')).toMatchObject({
      label: 'Custom (OpenAI-compatible)',
      configured: true,
      auth_type: 'api_key',
      api_key_hint: '••••',
      model_catalog: 'custom',
      advanced_fields: ['extra_headers', 'extra_body', 'extra_query', 'proxy'],
    });
    expect(row(body, 'anthropic')).toMatchObject({ configured: false, api_key_required: true, api_key_hint: null });
    expect(row(body, 'openai')).toMatchObject({
      api_type: 'auto',
      advanced_fields: expect.arrayContaining(['api_type']),
    });
    expect(row(body, 'openai_codex')).toMatchObject({
      auth_type: 'oauth',
      configured: false,
      oauth_account: null,
      oauth_login_supported: true,
    });
    // A provider this version cannot talk to is not offered.
    expect(row(body, 'xai_grok')).toBeUndefined();
    expect(body.web_search).toMatchObject({ provider: 'duckduckgo', api_key_hint: null, max_results: 5 });
    expect((body.web_search as { providers: Json[] }).providers).toContainEqual({
      name: 'brave',
      label: 'Brave',
      credential: 'api_key',
    });
    expect(body.runtime).toMatchObject({ config_path: expect.stringContaining('config.json') });
    expect(body).toMatchObject({
      requires_restart: false,
      runtime_surface: 'browser',
      apply_state: { status: 'idle', sections: [] },
      restart_behavior_by_section: { models: 'none' },
      image_generation: expect.objectContaining({ enabled: false, provider: 'openrouter' }),
      transcription: { enabled: true, providers: [] },
    });
    expect(JSON.stringify(body)).not.toContain('test-key');
  });
});

describe('settings.agent.update', () => {
  it('changes the model in config.json, answers the fresh payload, and the next turn uses it', async () => {
    const { act, config, c, run } = await setup([{ text: 'first' }, { text: 'second' }]);
    const answer = await act('settings.agent.update', {
      model: 'other-model',
      provider: 'custom',
      timezone: 'Asia/Tokyo',
    });
    expect(answer.ok).toBe(true);
    expect(answer.result.agent).toMatchObject({ model: 'other-model', timezone: 'Asia/Tokyo' });
    expect(defaults(config())).toMatchObject({
      model: 'other-model',
      provider: 'custom',
      timezone: 'Asia/Tokyo',
      timezoneMode: 'manual',
    });
    c.send({ type: 'attach', chat_id: 'm1' });
    await c.next((f) => f.event === 'attached');
    c.send({ type: 'message', chat_id: 'm1', content: 'hi' });
    await c.next((f) => f.event === 'turn_end');
    expect(run.fake.requests.at(-1)?.body.model).toBe('other-model');
  });

  it('refuses what nanobot refuses, with its status and message, and leaves the file alone', async () => {
    const { act, configPath } = await setup();
    const before = readFileSync(configPath, 'utf8');
    const cases: [Json, number, string][] = [
      [{ model_preset: 'nope' }, 400, 'unknown model preset'],
      [{ model: '  ' }, 400, 'model is required'],
      [{ provider: 'anthropic' }, 400, 'provider is not configured'],
      [{ provider: 'no-such' }, 400, 'unknown provider'],
      [{ context_window_tokens: 1234 }, 400, 'context_window_tokens must be 65536, 200000, 262144, 500000, or 1048576'],
      [{ context_window_tokens: 'lots' }, 400, 'context_window_tokens must be an integer'],
      [{ timezone: 'Mars/Olympus' }, 400, 'invalid timezone'],
      [{ tool_hint_max_length: 5 }, 400, 'tool_hint_max_length must be between 20 and 500'],
      [{ model: 42 }, 400, 'model must be a string'],
    ];
    for (const [payload, status, message] of cases) {
      const answer = await act('settings.agent.update', payload);
      expect([payload, answer.error]).toEqual([payload, { status, message }]);
    }
    expect(readFileSync(configPath, 'utf8')).toBe(before);
  });
});

describe('model presets and the call order', () => {
  it('creates, renames, orders, deletes and migrates presets as nanobot does', async () => {
    const { act, config } = await setup();
    let answer = await act('settings.model_call_order.update', { order: ['x'] });
    expect(answer.error).toEqual({ status: 409, message: 'convert the existing model configuration to presets first' });

    answer = await act('settings.model_configuration.migrate');
    expect(answer.ok).toBe(true);
    expect(defaults(config()).modelPreset).toBe('test-model');
    expect((config().modelPresets as Json)['test-model']).toMatchObject({
      model: 'test-model',
      provider: 'custom',
      maxTokens: 8192,
    });

    answer = await act('settings.model_configuration.create', {
      name: 'Fast',
      provider: 'custom',
      model: 'fast-1',
      max_tokens: '1024',
      temperature: 0.5,
      reasoning_effort: '',
    });
    expect(answer.result.created_model_preset).toBe('Fast');
    expect((config().modelPresets as Json).Fast).toEqual({
      model: 'fast-1',
      provider: 'custom',
      maxTokens: 1024,
      contextWindowTokens: 200_000,
      temperature: 0.5,
      reasoningEffort: null,
    });
    expect(
      (await act('settings.model_configuration.create', { name: 'fast', provider: 'custom', model: 'm' })).error,
    ).toEqual({
      status: 409,
      message: 'configuration already exists',
    });
    expect(
      (await act('settings.model_configuration.create', { name: 'Default', provider: 'custom', model: 'm' })).error
        .message,
    ).toBe('configuration name is reserved');

    answer = await act('settings.model_call_order.update', { order: ['test-model', 'Fast'] });
    expect(answer.result.model_call_order).toEqual(['test-model', 'Fast']);
    expect(answer.result.model_call_order_editable).toBe(true);
    expect(defaults(config())).toMatchObject({ modelPreset: 'test-model', fallbackModels: ['Fast'] });

    answer = await act('settings.model_configuration.update', { name: 'Fast', new_name: 'Quick', model: 'fast-2' });
    expect(answer.ok).toBe(true);
    expect(defaults(config()).fallbackModels).toEqual(['Quick']);
    expect((config().modelPresets as Json).Quick).toMatchObject({ model: 'fast-2' });

    expect((await act('settings.model_configuration.delete', { name: 'Quick' })).error).toEqual({
      status: 409,
      message: 'remove the model preset from the call order first',
    });
    await act('settings.model_call_order.update', { order: ['test-model'] });
    answer = await act('settings.model_configuration.delete', { name: 'Quick' });
    expect(answer.result.model_presets.map((p) => p.name)).toEqual(['default', 'test-model']);
    expect((await act('settings.model_call_order.update', { order: ['ghost'] })).error.message).toBe(
      'unknown model preset: ghost',
    );
  });
});

describe('settings.provider.update / create', () => {
  it('stores a key that is then shown only as a hint, and keeps it when the form sends none', async () => {
    const { act, config } = await setup();
    const key = 'sk-openai-0123456789abcdef';
    let answer = await act('settings.provider.update', {
      provider: 'openai',
      apiKey: key,
      apiBase: 'https://api.openai.com/v1',
      apiType: 'responses',
    });
    expect(answer.ok).toBe(true);
    expect(row(answer.result, 'openai')).toMatchObject({
      configured: true,
      api_key_hint: 'sk-o••••cdef',
      api_type: 'responses',
    });
    expect(JSON.stringify(answer)).not.toContain(key);
    expect((config().providers as Record<string, Json>).openai).toMatchObject({ apiKey: key, apiType: 'responses' });
    answer = await act('settings.provider.update', { provider: 'openai', apiBase: 'https://proxy.example/v1' });
    expect((config().providers as Record<string, Json>).openai).toMatchObject({
      apiKey: key,
      apiBase: 'https://proxy.example/v1',
    });
    expect((await act('settings.provider.update', { provider: 'anthropic', region: 'x' })).error).toEqual({
      status: 400,
      message: 'region is not supported for this provider',
    });
    expect((await act('settings.provider.update', { provider: 'openai', apiBase: 'file:///etc' })).error.status).toBe(
      400,
    );
  });

  it('round-trips secret headers as a placeholder without losing them', async () => {
    const { act, config } = await setup();
    await act('settings.provider.update', {
      provider: 'custom',
      extraHeaders: '{"Authorization":"Bearer abcdef0123456789","X-Team":"blue"}',
    });
    const shown = await act('settings.provider.update', { provider: 'custom' });
    const headers = row(shown.result, 'custom')?.extra_headers as Json;
    expect(headers).toEqual({ Authorization: '••••••••', 'X-Team': 'blue' });
    await act('settings.provider.update', {
      provider: 'custom',
      extraHeaders: JSON.stringify({ ...headers, 'X-Team': 'red' }),
    });
    expect((config().providers as Record<string, Json>).custom?.extraHeaders).toEqual({
      Authorization: 'Bearer abcdef0123456789',
      'X-Team': 'red',
    });
  });

  it('creates a named OpenAI-compatible endpoint that a preset can then use', async () => {
    const { act, config, run } = await setup();
    const answer = await act('settings.provider.create', {
      name: 'My Box',
      apiBase: `${run.fake.url}/v1`,
      apiKey: 'box-key-0123456789',
    });
    expect(answer.result.created_provider).toBe('custom-my-box');
    expect(row(answer.result, 'custom-my-box')).toMatchObject({ label: 'My Box', is_custom: true, configured: true });
    expect((config().providers as Record<string, Json>)['custom-my-box']).toEqual({
      displayName: 'My Box',
      apiType: 'auto',
      apiBase: `${run.fake.url}/v1`,
      apiKey: 'box-key-0123456789',
    });
    expect((await act('settings.provider.create', { name: 'my box', apiBase: 'http://x' })).error.status).toBe(409);
    expect((await act('settings.provider.create', { name: 'OpenAI', apiBase: 'http://x' })).error.status).toBe(409);
    expect((await act('settings.provider.create', { name: 'Nobase' })).error.message).toBe('API base is required');
    const preset = await act('settings.model_configuration.create', {
      name: 'boxed',
      provider: 'custom-my-box',
      model: 'box-model',
    });
    expect(preset.ok).toBe(true);
  });
});

describe('GET /api/settings/provider-models', () => {
  it('lists what the endpoint serves, only when asked, and says so for providers that cannot list', async () => {
    const { get, run } = await setup();
    const before = run.fake.requests.length;
    await get('/api/settings');
    expect(run.fake.requests.length).toBe(before);
    const listed = await get('/api/settings/provider-models?provider=custom');
    expect(listed.status).toBe(200);
    expect(listed.body).toMatchObject({
      provider: 'custom',
      status: 'available',
      catalog_kind: 'custom',
      models: [{ id: 'fake-model', label: null, owned_by: 'fake', context_window: null }],
      model_count: 1,
    });
    expect(run.fake.requests.at(-1)?.headers.authorization).toBe('Bearer test-key');
    expect((await get('/api/settings/provider-models?provider=anthropic')).body).toMatchObject({
      status: 'unsupported',
      models: [],
    });
    expect((await get('/api/settings/provider-models?provider=openai')).body).toMatchObject({
      status: 'not_configured',
    });
    expect((await get('/api/settings/provider-models?provider=nope')).status).toBe(400);
    expect((await get('/api/settings/provider-models')).status).toBe(400);
  });
});

describe('OAuth sign-in from the browser', () => {
  it('signs in to OpenAI Codex with the pasted callback address, and signs out', async () => {
    const s = await setup();
    const web = await startFakeWeb({
      routes: { '/oauth/token': json({ access_token: 'at-secret-0123456789', refresh_token: 'rt', expires_in: 3600 }) },
    });
    s.entry.web = web;
    process.env.NANOBOT_OPENAI_CODEX_AUTHORIZE_URL = web.url('/oauth/authorize');
    process.env.NANOBOT_OPENAI_CODEX_TOKEN_URL = web.url('/oauth/token');
    try {
      const start = await s.act('settings.provider.oauth_login', { provider: 'openai_codex', remote_browser: true });
      expect(start.result).toMatchObject({
        status: 'authorization_required',
        provider: 'openai_codex',
        completion_input: 'callback_url',
      });
      const url = new URL(String(start.result.authorization_url));
      expect(url.origin + url.pathname).toBe(web.url('/oauth/authorize'));
      const state = url.searchParams.get('state');
      const flowId = String(start.result.flow_id);
      const pending = await s.act('settings.provider.oauth_complete', { provider: 'openai_codex', flow_id: flowId });
      expect(pending.result).toEqual({ status: 'pending', provider: 'openai_codex', flow_id: flowId });
      const wrong = await s.act('settings.provider.oauth_complete', {
        provider: 'openai_codex',
        flow_id: flowId,
        authorization_response: 'http://localhost:1455/auth/callback?code=c&state=other',
      });
      expect(wrong.error.status).toBe(400);
      const done = await s.act('settings.provider.oauth_complete', {
        provider: 'openai_codex',
        flow_id: flowId,
        authorization_response: `http://localhost:1455/auth/callback?code=the-code&state=${state}`,
      });
      expect(done.ok).toBe(true);
      expect(row(done.result, 'openai_codex')).toMatchObject({ configured: true });
      expect(JSON.stringify(done)).not.toContain('at-secret-0123456789');
      expect(new URLSearchParams(web.requests[0]?.body).get('code')).toBe('the-code');
      const tokenFile = join(s.run.dataDir, 'auth', 'openai-codex.json');
      expect(existsSync(tokenFile)).toBe(true);
      expect(
        (
          await s.act('settings.provider.oauth_complete', {
            provider: 'openai_codex',
            flow_id: flowId,
            authorization_response: 'x',
          })
        ).error.status,
      ).toBe(410);
      const out = await s.act('settings.provider.oauth_logout', { provider: 'openai_codex' });
      expect(row(out.result, 'openai_codex')).toMatchObject({ configured: false });
      expect(existsSync(tokenFile)).toBe(false);
    } finally {
      delete process.env.NANOBOT_OPENAI_CODEX_AUTHORIZE_URL;
      delete process.env.NANOBOT_OPENAI_CODEX_TOKEN_URL;
    }
  });

  it('runs GitHub Copilot’s device flow: the code to enter, pending until approved, then signed in', async () => {
    const s = await setup();
    let approved = false;
    const web = await startFakeWeb({
      routes: {
        '/device': json({
          device_code: 'dev-1',
          user_code: 'WXYZ-1234',
          verification_uri: 'https://github.com/login/device',
          interval: 1,
        }),
        '/token': () =>
          approved ? json({ access_token: 'gho_secret_0123456789' }) : json({ error: 'authorization_pending' }),
        '/user': json({ login: 'octocat' }),
        '/copilot': json({ token: 'cop', expires_at: Math.floor(Date.now() / 1000) + 1800 }),
      },
    });
    s.entry.web = web;
    const env = {
      NANOBOT_GITHUB_DEVICE_CODE_URL: web.url('/device'),
      NANOBOT_GITHUB_ACCESS_TOKEN_URL: web.url('/token'),
      NANOBOT_GITHUB_USER_URL: web.url('/user'),
      NANOBOT_COPILOT_TOKEN_URL: web.url('/copilot'),
    };
    Object.assign(process.env, env);
    try {
      const start = await s.act('settings.provider.oauth_login', { provider: 'github_copilot' });
      expect(start.result).toMatchObject({
        status: 'authorization_required',
        provider: 'github_copilot',
        authorization_url: 'https://github.com/login/device',
        user_code: 'WXYZ-1234',
        verification_uri: 'https://github.com/login/device',
      });
      const flowId = String(start.result.flow_id);
      const complete = () => s.act('settings.provider.oauth_complete', { provider: 'github_copilot', flow_id: flowId });
      // Pending until GitHub has been asked (no faster than its interval) and the user approved.
      expect((await complete()).result).toMatchObject({ status: 'pending' });
      await eventually(
        async () => {
          expect((await complete()).result).toMatchObject({ status: 'pending' });
          expect(web.requests.filter((r) => r.path === '/token').length).toBeGreaterThan(0);
        },
        { intervalMs: 50 },
      );
      approved = true;
      const done = await eventually(
        async () => {
          const answer = await complete();
          expect(answer.result.status).toBeUndefined();
          return answer;
        },
        { intervalMs: 50 },
      );
      expect(row(done.result, 'github_copilot')).toMatchObject({ configured: true, oauth_account: 'octocat' });
      expect(JSON.stringify(done)).not.toContain('gho_secret_0123456789');
      expect(existsSync(join(s.run.dataDir, 'auth', 'github-copilot.json'))).toBe(true);
      // Signed in already: the login answers the settings at once.
      expect(
        (await s.act('settings.provider.oauth_login', { provider: 'github_copilot' })).result.providers,
      ).toBeDefined();
    } finally {
      for (const name of Object.keys(env)) delete process.env[name];
    }
    expect((await s.act('settings.provider.oauth_login', { provider: 'anthropic' })).error).toEqual({
      status: 400,
      message: 'unknown OAuth provider',
    });
  });
});

describe('capability settings', () => {
  it('saves web search with a key kept when left empty; refuses sections this version does not act on', async () => {
    const { act, config, configPath } = await setup();
    let answer = await act('settings.web_search.update', {
      provider: 'brave',
      api_key: 'brave-key-0123456789',
      max_results: 8,
    });
    expect(answer.result.web_search).toMatchObject({ provider: 'brave', api_key_hint: 'brav••••6789', max_results: 8 });
    answer = await act('settings.web_search.update', { provider: 'brave', timeout: 20, use_jina_reader: false });
    const web = (config().tools as Json).web as { search: Json; fetch: Json };
    expect(web.search).toMatchObject({ provider: 'brave', apiKey: 'brave-key-0123456789', timeout: 20, maxResults: 8 });
    expect(web.fetch.useJinaReader).toBe(false);
    expect((await act('settings.web_search.update', { provider: 'tavily' })).error.message).toBe('api_key is required');
    expect((await act('settings.web_search.update', { provider: 'bocha', api_key: 'k' })).error.status).toBe(400);
    const before = readFileSync(configPath, 'utf8');
    for (const action of ['settings.transcription.update']) {
      const refused = await act(action, { enabled: true, provider: 'openrouter', model: 'm' });
      expect([action, refused.error.status]).toEqual([action, 501]);
      expect(refused.error.message).toContain('not supported');
    }
    expect(
      (await act('settings.network_safety.update', { webui_allow_local_service_access: false })).error.status,
    ).toBe(501);
    expect(readFileSync(configPath, 'utf8')).toBe(before);
  });
});

describe('settings.model.test (nanobot-ts only)', () => {
  it('sends one tiny request and answers which provider served it and how long it took', async () => {
    const { act, run } = await setup([
      { text: 'OK' },
      { status: 401, errorBody: { error: { message: 'bad key test-key' } } },
    ]);
    const ok = await act('settings.model.test', { model_preset: 'default' });
    expect(ok.result).toMatchObject({ ok: true, model: 'test-model', resolved_provider: 'custom', answer: 'OK' });
    expect(typeof ok.result.latency_ms).toBe('number');
    expect(run.fake.requests.at(-1)?.body).toMatchObject({ model: 'test-model', max_tokens: 16 });
    const failed = await act('settings.model.test', { model: 'other', provider: 'custom' });
    expect(failed.result).toMatchObject({
      ok: false,
      model: 'other',
      resolved_provider: 'custom',
      error: { kind: 'auth' },
    });
    expect(JSON.stringify(failed)).not.toContain('test-key');
    const unresolved = await act('settings.model.test', { model: 'claude-x', provider: 'anthropic' });
    expect(unresolved.result).toMatchObject({ ok: false, resolved_provider: null, error: { kind: 'config' } });
    expect((await act('settings.model.test', { model_preset: 'ghost' })).error).toEqual({
      status: 400,
      message: 'unknown model preset',
    });
  });
});

describe('provider rows', () => {
  it('shows one row per provider family, as nanobot: opencode_zen under opencode when it is the one configured', async () => {
    const { act } = await setup();
    let answer = await act('settings.provider.update', { provider: 'custom' });
    const labels = answer.result.providers.map((p) => p.label);
    expect(labels.length).toBe(new Set(labels).size);
    answer = await act('settings.provider.update', { provider: 'opencode_zen', apiKey: 'zen-key-0123456789' });
    expect(row(answer.result, 'opencode_zen')).toMatchObject({ label: 'OpenCode Zen', configured: true });
    expect(row(answer.result, 'opencode')).toBeUndefined();
  });
});

describe('a config with odd values', () => {
  it('shows a web search provider this version lacks (or a prototype name) as DuckDuckGo, the default it runs', async () => {
    const { act, configPath } = await setup();
    for (const name of ['constructor', 'toString', 'bocha']) {
      const config = JSON.parse(readFileSync(configPath, 'utf8')) as { tools: { web: { search: Json } } };
      config.tools.web.search = { provider: name };
      writeFileSync(configPath, JSON.stringify(config));
      const answer = await act('settings.agent.update', { tool_hint_max_length: 41 });
      expect([name, answer.result.web_search]).toEqual([name, expect.objectContaining({ provider: 'duckduckgo' })]);
    }
  });
});
