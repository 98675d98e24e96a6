/**
 * nanobot's `GET /webui/bootstrap` and `tokenIssuePath`: the shape upstream's WebUI and TUI read, who gets tokens
 * (loopback browsers freely, everyone else with the secret), and the short-lived tokens themselves (one connection
 * per WebSocket token, expiry by an injected clock).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { parseWebSocketSettings } from '../../../src/channels/websocket/index.js';
import { IssuedTokens } from '../../../src/security/issued-tokens.js';
import { UserError } from '../../../src/util/errors.js';
import { api, connect, RefusedError, rawRequest, type StartedChannel, startChannel } from './helpers.js';

const running: StartedChannel[] = [];
afterEach(async () => {
  for (const started of running.splice(0)) await started.channel.stop();
});

async function start(block: Record<string, unknown> = {}, tokens?: IssuedTokens) {
  const started = await startChannel(block, tokens ? { tokens } : {});
  running.push(started);
  return started;
}

async function refusal(promise: Promise<unknown>): Promise<number> {
  try {
    await promise;
  } catch (err) {
    if (err instanceof RefusedError) return err.status;
    throw err;
  }
  throw new Error('the connection was accepted');
}

interface Bootstrap {
  token: string;
  api_token: string;
  ws_path: string;
  ws_url: string;
  expires_in: number;
  limits: { transport: { max_frame_bytes: number } };
}

function bootstrap(started: StartedChannel, headers: Record<string, string> = {}) {
  return rawRequest(started.port, '/webui/bootstrap', { host: `127.0.0.1:${started.port}`, ...headers });
}

describe('GET /webui/bootstrap', () => {
  it('gives a loopback browser upstream’s fields, no-store, and tokens that work', async () => {
    const started = await start({ path: '/ws' });
    const res = await bootstrap(started);
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.headers['cache-control']).toBe('no-store');
    const body = JSON.parse(res.body) as Bootstrap & Record<string, unknown>;
    expect(Object.keys(body).sort()).toEqual(
      [
        'api_token',
        'expires_in',
        'limits',
        'model_name',
        'runtime_capabilities',
        'runtime_surface',
        'token',
        'ws_path',
        'ws_url',
      ].sort(),
    );
    expect(body).toMatchObject({
      ws_path: '/ws',
      ws_url: `ws://127.0.0.1:${started.port}/ws`,
      expires_in: 300,
      model_name: '',
      runtime_surface: 'browser',
      runtime_capabilities: {
        can_restart_engine: false,
        can_pick_folder: false,
        can_open_logs: false,
        can_export_diagnostics: false,
      },
      limits: {
        transport: { max_frame_bytes: 1_048_576, envelope_reserve_bytes: 65_536 },
        message: { max_text_bytes: expect.any(Number) },
        attachments: { max_count: expect.any(Number), max_file_bytes: 20 * 1024 * 1024 },
      },
    });
    expect(body.token).toMatch(/^nbwt_[A-Za-z0-9_-]{43}$/);
    expect(body.api_token).toMatch(/^nbwt_/);
    expect(body.api_token).not.toBe(body.token);

    // The WebSocket token opens one connection; the API token calls /api/* (header or ?token=).
    const client = await connect(started.port, { token: body.token, path: '/ws' });
    expect((await client.next()).event).toBe('ready');
    await client.close();
    expect(await refusal(connect(started.port, { token: body.token, path: '/ws' }))).toBe(401);
    expect((await api(started, '/api/info', { token: body.api_token })).status).toBe(200);
    expect((await api(started, `/api/info?token=${body.api_token}`, { token: null })).status).toBe(200);
    // Neither kind stands in for the other.
    expect((await api(started, '/api/info', { token: body.token })).status).toBe(401);
    expect(await refusal(connect(started.port, { token: body.api_token, path: '/ws' }))).toBe(401);
    // The static token still works everywhere.
    expect((await api(started, '/api/info')).status).toBe(200);
    const own = await connect(started.port, { token: started.token, path: '/ws' });
    await own.close();
  });

  it('names publicWsUrl, and wss behind a TLS proxy', async () => {
    const started = await start({ publicWsUrl: 'wss://nano.example/chat', path: '/chat' });
    expect(JSON.parse((await bootstrap(started)).body).ws_url).toBe('wss://nano.example/chat');
    const plain = await start();
    const behindTls = JSON.parse((await bootstrap(plain, { 'x-forwarded-proto': 'https' })).body);
    expect(behindTls.ws_url).toBe(`wss://127.0.0.1:${plain.port}/`);
  });

  it('expires issued tokens by the clock, and refuses to mint past the cap', async () => {
    let now = 1_000_000;
    const tokens = new IssuedTokens({ now: () => now, maxTokens: 3 });
    const started = await start({ tokenTtlS: 60 }, tokens);
    const body = JSON.parse((await bootstrap(started)).body) as Bootstrap;
    expect(body.expires_in).toBe(60);
    now += 60_000;
    expect((await api(started, '/api/info', { token: body.api_token })).status).toBe(200);
    now += 1;
    expect((await api(started, '/api/info', { token: body.api_token })).status).toBe(401);
    expect(await refusal(connect(started.port, { token: body.token }))).toBe(401);

    for (let i = 0; i < 3; i++) expect((await bootstrap(started)).status).toBe(200);
    const full = await bootstrap(started);
    expect(full.status).toBe(429);
    now += 61_000;
    expect((await bootstrap(started)).status).toBe(200);
  });

  it('is refused to anything that is not a browser on this machine, unless it brings the WebUI token', async () => {
    const started = await start();
    const remote: Record<string, string>[] = [
      { 'x-forwarded-for': '203.0.113.5' },
      { 'x-forwarded-for': '127.0.0.1, 203.0.113.5' },
      { 'X-Forwarded-For': '[2001:db8::1]:443' },
      { 'x-real-ip': '198.51.100.7' },
      { 'x-forwarded-host': 'nano.example' },
      { forwarded: 'for=203.0.113.5' },
      { forwarded: 'for="[2001:db8::1]";proto=https' },
      { forwarded: 'for=127.0.0.1;host=evil.example' },
      { forwarded: 'for=unknown' },
    ];
    for (const headers of remote) {
      const res = await bootstrap(started, headers);
      expect(res.status, JSON.stringify(headers)).toBe(403);
    }
    const withToken = await bootstrap(started, { 'x-forwarded-for': '203.0.113.5', 'x-nanobot-auth': started.token });
    expect(withToken.status).toBe(200);
    // Loopback forwarding (a proxy on this machine for a browser on this machine) is still local.
    expect((await bootstrap(started, { 'x-forwarded-for': '127.0.0.1', forwarded: 'for=[::1]' })).status).toBe(200);
  });

  it('refuses a page on another site and a rebound Host', async () => {
    const started = await start();
    expect((await bootstrap(started, { origin: 'http://evil.example' })).status).toBe(403);
    expect((await bootstrap(started, { origin: `http://localhost:${started.port + 1}` })).status).toBe(403);
    const rebound = await rawRequest(started.port, '/webui/bootstrap', { host: `evil.example:${started.port}` });
    expect(rebound.status).toBe(421);
    expect((await bootstrap(started, { origin: started.url })).status).toBe(200);
  });

  it('needs the secret, even on loopback, when tokenIssueSecret or token is configured', async () => {
    const secret = 'issue-secret-0123456789';
    const started = await start({ tokenIssueSecret: secret, token: 'static-token-0123456789' });
    const wrong: Record<string, string>[] = [
      {},
      { 'x-nanobot-auth': 'nope' },
      { authorization: 'Bearer nope' },
      { authorization: `Basic ${secret}` },
      { 'x-nanobot-auth': secret.slice(1) },
      { 'x-nanobot-auth': `${secret}x` },
    ];
    for (const headers of wrong) expect((await bootstrap(started, headers)).status, JSON.stringify(headers)).toBe(401);
    expect((await bootstrap(started, { 'x-nanobot-auth': secret })).status).toBe(200);
    expect((await bootstrap(started, { authorization: `Bearer ${secret}` })).status).toBe(200);
    expect((await bootstrap(started, { authorization: 'bearer static-token-0123456789' })).status).toBe(200);
  });

  it('counts wrong secrets against the per-address limiter (429 with Retry-After)', async () => {
    const started = await start({ token: 'static-token-0123456789' });
    for (let i = 0; i < 10; i++) await bootstrap(started, { 'x-nanobot-auth': `guess-${i}` });
    const limited = await bootstrap(started, { 'x-nanobot-auth': 'static-token-0123456789' });
    expect(limited.status).toBe(429);
    expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
  });

  it('answers GET only', async () => {
    const started = await start();
    expect((await rawRequest(started.port, '/webui/bootstrap', { host: '127.0.0.1' }, 'POST')).status).toBe(405);
    expect((await rawRequest(started.port, '/webui/bootstrap', { host: '127.0.0.1' }, 'HEAD')).status).toBe(405);
  });
});

describe('channels.websocket.tokenIssuePath', () => {
  it('issues {token, expires_in}: one connection each, behind the secret when there is one', async () => {
    const open = await start({ tokenIssuePath: '/auth/token' });
    const res = await rawRequest(open.port, '/auth/token', { host: '127.0.0.1' });
    expect(res.status).toBe(200);
    const body = JSON.parse(res.body) as { token: string; expires_in: number };
    expect(Object.keys(body).sort()).toEqual(['expires_in', 'token']);
    const client = await connect(open.port, { token: body.token });
    await client.close();
    expect(await refusal(connect(open.port, { token: body.token }))).toBe(401);

    const guarded = await start({ tokenIssuePath: '/auth/token/', tokenIssueSecret: 'issue-secret-0123456789' });
    expect((await rawRequest(guarded.port, '/auth/token', { host: '127.0.0.1' })).status).toBe(401);
    const ok = await rawRequest(guarded.port, '/auth/token', {
      host: '127.0.0.1',
      authorization: 'Bearer issue-secret-0123456789',
    });
    expect(ok.status).toBe(200);
    // Without tokenIssuePath the path is the WebUI's (an SPA route), never a token.
    const none = await rawRequest(open.port, '/auth/other', { host: '127.0.0.1' });
    expect(none.body).not.toContain('nbwt_');
  });

  it('rejects paths that would shadow the WebSocket, the bootstrap or the API', () => {
    const bad = [
      { tokenIssuePath: 'auth' },
      { tokenIssuePath: '/', path: '/' },
      { tokenIssuePath: '/ws/', path: '/ws' },
      { tokenIssuePath: '/webui/bootstrap' },
      { tokenIssuePath: '/api/token' },
      { path: '/webui/bootstrap' },
      { publicWsUrl: 'https://nano.example/' },
      { publicWsUrl: 'wss://user:pw@nano.example/' },
      { publicWsUrl: 'wss://nano.example/other' },
    ];
    for (const block of bad) expect(() => parseWebSocketSettings(block), JSON.stringify(block)).toThrow(UserError);
    expect(parseWebSocketSettings({ tokenIssuePath: '/auth/token', tokenTtlS: 30 }).tokenTtlS).toBe(30);
  });
});
