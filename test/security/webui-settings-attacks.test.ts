/**
 * The settings API never gives a secret back: every key, token, password and secret header the config holds (in
 * any spelling nanobot's files use: providers, web search, MCP env/headers, channel tokens, URLs with passwords or
 * key parameters, values from `${VAR}`) is absent from every `/api/settings` answer and every `webui_response`,
 * whatever is asked. Hostile payloads (wrong types, oversize, prototype names, traversal in names) are 400s that
 * leave config.json as it was.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startWebUiGateway, type WebUiGateway } from '../channels/websocket/gateway-helpers.js';
import { connect, type TestClient } from '../channels/websocket/helpers.js';

const open: { run: WebUiGateway; clients: TestClient[] }[] = [];
afterEach(async () => {
  for (const { run, clients } of open.splice(0)) {
    for (const client of clients) await client.close();
    await run.close();
  }
});

type Json = Record<string, unknown>;

/** Every secret the config below holds; none may appear in any answer (nor a 12-character piece of it). */
const SECRETS = {
  anthropic: 'sk-ant-api03-AAAAbbbbCCCCddddEEEE',
  openaiSnake: 'sk-proj-snake-case-key-0123456789',
  shortKey: 'k3y!',
  deepseek: 'ds-long-secret-value-9876543210',
  headerAuth: 'Bearer hdr-auth-token-abcdefghij',
  headerApiKey: 'x-api-key-value-0123456789abc',
  headerCookie: 'session=cookie-secret-zyxwvut',
  bodyKey: 'body-api-key-0123456789abcdef',
  bodyNested: 'nested-client-secret-987654',
  queryKey: 'query-key-param-0123456789',
  baseUrlPass: 'baseurl-password-4242424242',
  baseUrlQuery: 'baseurl-query-token-1111111',
  proxyPass: 'proxy-password-5555555555',
  searchKey: 'BSA-brave-search-key-0123456789',
  webProxyPass: 'web-proxy-pass-7777777777',
  mcpEnv: 'ghp_mcpEnvToken0123456789abcdef',
  mcpHeader: 'Bearer mcp-header-token-00000000',
  telegram: '123456789:AAH-telegram-bot-token-abcdefghijk',
  slackBot: 'xoxb-slack-bot-token-0123456789',
  emailPass: 'imap-password-secret-3333333',
  wsToken: 'websocket-static-token-44444444',
  apiKey: 'api-service-key-6666666666666',
  customKey: 'custom-endpoint-key-2222222222',
  assembly: 'assemblyai-key-1212121212121',
};

function plantSecrets(configPath: string, fakeUrl: string) {
  const config = JSON.parse(readFileSync(configPath, 'utf8')) as Record<string, Json>;
  config.providers = {
    ...(config.providers as Json),
    anthropic: { apiKey: SECRETS.anthropic },
    openai: { api_key: SECRETS.openaiSnake },
    groq: { apiKey: SECRETS.shortKey },
    deepseek: {
      apiKey: SECRETS.deepseek,
      apiBase: `https://user:${SECRETS.baseUrlPass}@api.deepseek.com/v1?api_key=${SECRETS.baseUrlQuery}`,
      extraHeaders: {
        Authorization: SECRETS.headerAuth,
        'X-Api-Key': SECRETS.headerApiKey,
        Cookie: SECRETS.headerCookie,
      },
      extraBody: {
        api_key: SECRETS.bodyKey,
        nested: { client_secret: SECRETS.bodyNested },
        list: [{ token: SECRETS.bodyNested }],
      },
      extraQuery: { key: SECRETS.queryKey },
      proxy: `http://me:${SECRETS.proxyPass}@127.0.0.1:3128`,
    },
    'my-box': { apiKey: SECRETS.customKey, apiBase: `${fakeUrl}/v1` },
    assemblyai: { apiKey: SECRETS.assembly },
  };
  const tools = config.tools as Json;
  tools.web = {
    enable: false,
    proxy: `http://u:${SECRETS.webProxyPass}@127.0.0.1:8080`,
    search: { provider: 'brave', apiKey: SECRETS.searchKey },
  };
  tools.mcpServers = {
    gh: {
      type: 'streamableHttp',
      url: 'http://127.0.0.1:9/mcp',
      headers: { Authorization: SECRETS.mcpHeader },
      env: { GITHUB_TOKEN: SECRETS.mcpEnv },
      enabledTools: [],
    },
  };
  const channels = config.channels as Record<string, Json>;
  channels.telegram = { enabled: false, token: SECRETS.telegram };
  channels.slack = { enabled: false, botToken: SECRETS.slackBot };
  channels.email = { enabled: false, imapPassword: SECRETS.emailPass };
  config.api = { apiKey: SECRETS.apiKey };
  writeFileSync(configPath, JSON.stringify(config, null, 2));
}

async function setup() {
  const run = await startWebUiGateway([], { token: SECRETS.wsToken });
  const entry = { run, clients: [] as TestClient[] };
  open.push(entry);
  const c = await connect(run.port, { token: run.token, clientId: 'webui', origin: run.url });
  entry.clients.push(c);
  await c.next((f) => f.event === 'ready');
  const configPath = join(run.dataDir, 'config.json');
  plantSecrets(configPath, run.fake.url);
  let n = 0;
  const answers: string[] = [];
  const act = async (action: string, payload: unknown = {}) => {
    const id = `a${n++}`;
    c.send({ type: 'webui_request', request_id: id, action, payload });
    const frame = (await c.next((f) => f.event === 'webui_response' && f.request_id === id, 10_000)) as Json;
    answers.push(JSON.stringify(frame));
    return frame as { ok: boolean; result: Json; error?: { status: number; message: string } };
  };
  const get = async (path: string) => {
    const res = await fetch(`${run.url}${path}`, { headers: { authorization: `Bearer ${run.token}` } });
    const text = await res.text();
    answers.push(text);
    return { status: res.status, body: JSON.parse(text) as Json };
  };
  // A harmless save makes the gateway take the planted file (every write re-reads it and reloads).
  const applied = await act('settings.agent.update', { tool_hint_max_length: 40 });
  expect(applied).toMatchObject({ ok: true, result: { requires_restart: false } });
  return { run, act, get, answers, configPath };
}

/** Fails naming the secret and the answer when any secret, or a 12-character run of one, shows. */
function expectNoSecret(answers: readonly string[]) {
  for (const [name, secret] of Object.entries(SECRETS)) {
    const pieces = secret.length <= 12 ? [secret] : [secret, secret.slice(0, 12), secret.slice(-12)];
    for (const answer of answers) {
      for (const piece of pieces) {
        if (answer.includes(piece) || answer.includes(encodeURIComponent(piece))) {
          throw new Error(`secret ${name} (${piece}) appears in: ${answer.slice(0, 300)}`);
        }
      }
    }
  }
}

describe('the settings API never gives a secret back', () => {
  it('in GET /api/settings, the model catalog and every action answer, ok or refused', async () => {
    const { act, get, answers, configPath } = await setup();
    const settings = await get('/api/settings');
    expect(settings.status).toBe(200);
    const providers = settings.body.providers as Json[];
    const deepseek = providers.find((p) => p.name === 'deepseek') as Json;
    expect(deepseek.extra_headers).toEqual({ Authorization: '••••••••', 'X-Api-Key': '••••••••', Cookie: '••••••••' });
    expect(deepseek.api_base).toBe('https://user:***@api.deepseek.com/v1?api_key=***');
    expect(deepseek.proxy).toBe('http://me:***@127.0.0.1:3128');
    expect(providers.find((p) => p.name === 'groq')?.api_key_hint).toBe('••••');
    expect(providers.some((p) => p.name === 'assemblyai')).toBe(false);

    for (const name of ['deepseek', 'my-box', 'openai', 'anthropic', 'custom']) {
      await get(`/api/settings/provider-models?provider=${name}`);
    }
    const actions: [string, unknown][] = [
      ['settings.agent.update', { model: 'x', provider: 'anthropic' }],
      ['settings.agent.update', { provider: 'my-box' }],
      ['settings.provider.update', { provider: 'deepseek' }],
      [
        'settings.provider.update',
        { provider: 'deepseek', apiKey: '', extraHeaders: JSON.stringify(deepseek.extra_headers) },
      ],
      [
        'settings.provider.update',
        { provider: 'deepseek', apiKey: 'ds-l••••3210', apiBase: deepseek.api_base, proxy: deepseek.proxy },
      ],
      [
        'settings.provider.update',
        { provider: 'deepseek', extraBody: deepseek.extra_body, extraQuery: deepseek.extra_query },
      ],
      ['settings.provider.update', { provider: 'deepseek', region: 'x' }],
      ['settings.provider.update', { provider: 'my-box', displayName: 'Anthropic' }],
      ['settings.provider.create', { name: 'Second', apiBase: 'http://127.0.0.1:9/v1', apiKey: 'second-key-0000' }],
      ['settings.web_search.update', { provider: 'brave' }],
      ['settings.web_search.update', { provider: 'brave', api_key: 'brav••••6789' }],
      ['settings.web_search.update', { provider: 'nope' }],
      ['settings.model_configuration.create', { name: 'p', provider: 'deepseek', model: 'deepseek-chat' }],
      ['settings.model_configuration.migrate', {}],
      ['settings.model_call_order.update', { order: ['p'] }],
      ['settings.model.test', { model: 'box-model', provider: 'my-box' }],
      ['settings.model.test', { model: 'claude-x', provider: 'anthropic-nope' }],
      ['settings.provider.oauth_login', { provider: 'anthropic' }],
      ['settings.provider.oauth_logout', { provider: 'openai_codex' }],
      ['settings.image_generation.update', { enabled: true }],
      ['settings.transcription.update', { enabled: true }],
      ['settings.network_safety.update', { webui_default_access_mode: 'full' }],
    ];
    for (const [action, payload] of actions) await act(action, payload);
    expectNoSecret(answers);
    // What came back as placeholders or hints was saved as the stored values, not as the placeholders.
    const written = JSON.parse(readFileSync(configPath, 'utf8')) as { providers: Record<string, Json>; tools: Json };
    expect(written.providers.deepseek).toMatchObject({
      apiKey: SECRETS.deepseek,
      apiBase: `https://user:${SECRETS.baseUrlPass}@api.deepseek.com/v1?api_key=${SECRETS.baseUrlQuery}`,
      proxy: `http://me:${SECRETS.proxyPass}@127.0.0.1:3128`,
      extraHeaders: {
        Authorization: SECRETS.headerAuth,
        'X-Api-Key': SECRETS.headerApiKey,
        Cookie: SECRETS.headerCookie,
      },
      extraBody: {
        api_key: SECRETS.bodyKey,
        nested: { client_secret: SECRETS.bodyNested },
        list: [{ token: SECRETS.bodyNested }],
      },
      extraQuery: { key: SECRETS.queryKey },
    });
    expect(JSON.stringify(written)).not.toMatch(/••|\*\*\*/);
    expect(((written.tools.web as Json).search as Json).apiKey).toBe(SECRETS.searchKey);
  });
});

describe('hostile settings payloads', () => {
  it('are refused with a 400 (or 409) that names the problem, and leave config.json as it was', async () => {
    const { act, configPath } = await setup();
    const before = readFileSync(configPath, 'utf8');
    const long = 'x'.repeat(5000);
    const attempts: [string, unknown][] = [
      ['settings.agent.update', { model: {} }],
      ['settings.agent.update', { model: ['a'] }],
      ['settings.agent.update', { model: true }],
      ['settings.agent.update', { model: long }],
      ['settings.agent.update', { model_preset: '__proto__' }],
      ['settings.agent.update', { model_preset: 'constructor' }],
      ['settings.agent.update', { model_preset: '../../etc/passwd' }],
      ['settings.agent.update', { provider: '__proto__' }],
      ['settings.agent.update', { provider: 'constructor' }],
      ['settings.agent.update', { provider: '../anthropic' }],
      ['settings.agent.update', { context_window_tokens: 1e300 }],
      ['settings.agent.update', { context_window_tokens: '65536; rm -rf /' }],
      ['settings.agent.update', { tool_hint_max_length: 'NaN' }],
      ['settings.agent.update', { tool_hint_max_length: 1.5 }],
      ['settings.agent.update', { timezone: '../../../etc/localtime' }],
      ['settings.agent.update', { timezone: { zone: 'UTC' } }],
      ['settings.model_configuration.create', { name: '__proto__', provider: 'custom', model: 'm' }],
      ['settings.model_configuration.create', { name: 'a\u0000b', provider: 'custom', model: 'm' }],
      ['settings.model_configuration.create', { name: 'a\u202eb', provider: 'custom', model: 'm' }],
      ['settings.model_configuration.create', { name: long, provider: 'custom', model: 'm' }],
      ['settings.model_configuration.create', { name: 'DEFAULT', provider: 'custom', model: 'm' }],
      ['settings.model_configuration.create', { name: 'ok', provider: 'custom', model: 'm', temperature: 'hot' }],
      ['settings.model_configuration.create', { name: 'ok', provider: 'custom', model: 'm', temperature: 9 }],
      ['settings.model_configuration.create', { name: 'ok', provider: 'custom', model: 'm', max_tokens: -5 }],
      ['settings.model_configuration.create', { name: 'ok', provider: 'custom', model: 'm', max_tokens: '1e9' }],
      ['settings.model_configuration.create', { name: 'ok', provider: 'no-such', model: 'm' }],
      ['settings.model_configuration.update', { name: '__proto__', model: 'm' }],
      ['settings.model_configuration.update', { name: 'hasOwnProperty', model: 'm' }],
      ['settings.model_configuration.delete', { name: 'toString' }],
      ['settings.model_configuration.delete', { name: 'default' }],
      ['settings.model_call_order.update', { order: 'not json' }],
      ['settings.model_call_order.update', { order: [1, 2] }],
      ['settings.model_call_order.update', { order: [] }],
      ['settings.model_call_order.update', { order: Array.from({ length: 100 }, (_, i) => `p${i}`) }],
      ['settings.provider.update', { provider: '__proto__', apiKey: 'k' }],
      ['settings.provider.update', { provider: 'constructor', apiKey: 'k' }],
      ['settings.provider.update', { provider: '../../openai', apiKey: 'k' }],
      ['settings.provider.update', { provider: 'openai', apiBase: 'javascript:alert(1)' }],
      ['settings.provider.update', { provider: 'openai', apiBase: 'file:///etc/passwd' }],
      ['settings.provider.update', { provider: 'openai', proxy: 'ftp://x' }],
      ['settings.provider.update', { provider: 'openai', extraHeaders: '[1,2]' }],
      ['settings.provider.update', { provider: 'openai', extraHeaders: '{"a": 1}' }],
      ['settings.provider.update', { provider: 'openai', extraHeaders: '{not json' }],
      ['settings.provider.update', { provider: 'openai', extraBody: 42 }],
      ['settings.provider.update', { provider: 'openai', apiType: 'telnet' }],
      ['settings.provider.update', { provider: 'my-box', thinkingStyle: 'shout' }],
      ['settings.provider.update', { provider: 'anthropic', proxy: 'http://127.0.0.1:1' }],
      ['settings.provider.update', { provider: 'openai_codex', apiKey: 'k' }],
      ['settings.provider.create', { name: long, apiBase: 'http://x' }],
      ['settings.provider.create', { name: 'x', apiBase: 'gopher://x' }],
      ['settings.provider.create', { name: 'x', apiBase: 'http://x', region: 'r' }],
      ['settings.provider.create', { name: 'OpenRouter', apiBase: 'http://x' }],
      ['settings.provider.oauth_complete', { provider: 'openai_codex', flow_id: 'guess' }],
      ['settings.provider.oauth_complete', { provider: 'github_copilot', flow_id: 'x' }],
      ['settings.provider.oauth_login', { provider: '__proto__' }],
      ['settings.provider.oauth_logout', { provider: '../../config' }],
      ['settings.web_search.update', { provider: '__proto__' }],
      ['settings.web_search.update', { provider: 'brave', max_results: 11 }],
      ['settings.web_search.update', { provider: 'brave', timeout: 'soon' }],
      ['settings.web_search.update', { provider: 'searxng', base_url: 'file:///x' }],
      ['settings.web_search.update', { provider: 'brave', use_jina_reader: 'maybe' }],
    ];
    const accepted: string[] = [];
    for (const [action, payload] of attempts) {
      const answer = await act(action, payload);
      if (answer.ok || !answer.error || ![400, 409, 410].includes(answer.error.status)) {
        accepted.push(`${action} ${JSON.stringify(payload).slice(0, 80)} → ${JSON.stringify(answer).slice(0, 200)}`);
      } else {
        expect(answer.error.message.length).toBeLessThan(400);
      }
    }
    expect(accepted).toEqual([]);
    expect(readFileSync(configPath, 'utf8')).toBe(before);
  });

  it('a provider name in the catalog route is looked up, never used as a path', async () => {
    const { get } = await setup();
    for (const name of ['../../etc/passwd', '%2e%2e%2fconfig', '__proto__', 'constructor', '', ' ', 'x'.repeat(3000)]) {
      const { status } = await get(`/api/settings/provider-models?provider=${encodeURIComponent(name)}`);
      expect([name.slice(0, 20), status]).toEqual([name.slice(0, 20), 400]);
    }
  });
});
