/**
 * Attacks on the HTTP surfaces of the BUILT binary, started as a user starts them: `nanobot serve` (the
 * OpenAI-compatible API) and `nanobot gateway` (its /health, the channel errors it shows). Every request is sent
 * raw to 127.0.0.1 with the exact headers a hostile web page (through the victim's browser) or a local attacker
 * would send; for each refused one, the fake LLM proves that no model call happened.
 */
import { existsSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { editConfig, runCli, tempHome } from '../cli/cli-helpers.js';
import { type FakeLLM, startFakeLLM } from '../helpers/fake-llm.js';
import { type RawRequest, rawRequest, type Started, startGateway, startServe } from './http-helpers.js';

const CHAT = JSON.stringify({ messages: [{ role: 'user', content: 'run a tool for me' }] });
const API_KEY = 'sk-nanobot-attack-test-0123456789abcdef';
const started: Started[] = [];
let fake: FakeLLM;

async function serveWith(api: Record<string, unknown>): Promise<Started> {
  const home = tempHome();
  expect((await runCli(['onboard'], home)).code).toBe(0);
  editConfig(home, (c) => {
    c.agents.defaults.provider = 'custom';
    c.agents.defaults.model = 'test-model';
    c.providers.custom = { apiKey: 'k', apiBase: `${fake.url}/v1` };
    c.api = api;
  });
  const server = await startServe(home);
  started.push(server);
  return server;
}

beforeAll(async () => {
  fake = await startFakeLLM();
});
afterAll(async () => {
  for (const { child } of started.splice(0)) child.kill('SIGKILL');
  await fake.close();
});

/** Sends the request and checks the model was not called for it. */
async function refused(port: number, request: RawRequest) {
  const before = fake.requests.length;
  const res = await rawRequest(port, request);
  expect(fake.requests.length, `model called for ${JSON.stringify(request)}`).toBe(before);
  return res;
}

function errorOf(body: string): { message: string; type: string; code: string | null } {
  return (JSON.parse(body) as { error: { message: string; type: string; code: string | null } }).error;
}

const post = (extra: Partial<RawRequest> = {}): RawRequest => ({
  method: 'POST',
  path: '/v1/chat/completions',
  headers: { 'Content-Type': 'application/json' },
  body: CHAT,
  ...extra,
});

describe('nanobot serve, default config (no api.apiKey)', () => {
  let port: number;
  beforeAll(async () => {
    ({ port } = await serveWith({}));
  }, 60_000);

  it('a plain JSON request from a non-browser client still runs a turn (the baseline the refusals are measured against)', async () => {
    const before = fake.requests.length;
    const res = await rawRequest(port, post());
    expect(res.status).toBe(200);
    expect(fake.requests.length).toBe(before + 1);
  });

  it.each([
    'application/json',
    'application/json; charset=utf-8',
    'application/json;charset=UTF-8',
    'Application/JSON',
  ])('Content-Type %j is accepted', async (type) => {
    const res = await rawRequest(port, post({ headers: { 'Content-Type': type } }));
    expect(res.status).toBe(200);
  });

  // What a page can send cross-site without a CORS preflight (fetch no-cors, <form>), and near misses.
  it.each([
    'text/plain',
    'text/plain;charset=UTF-8',
    'application/x-www-form-urlencoded',
    'multipart/form-data; boundary=----x',
    undefined,
    '',
    'application/jsonx',
    'application/json-patch+json',
    'text/json',
    'application/javascript',
    'application/json; charset=utf-16',
    'application/x-json',
    'json',
  ])('Content-Type %j is refused with 415 and no model call', async (type) => {
    const res = await refused(port, post({ headers: type === undefined ? {} : { 'Content-Type': type } }));
    expect(res.status).toBe(415);
    const error = errorOf(res.body);
    expect(error.code).toBe('unsupported_media_type');
    expect(error.message).toMatch(/Content-Type: application\/json/);
  });

  it.each([
    'null',
    'https://evil.example',
    'http://evil.example:8900',
    'HTTPS://EVIL.EXAMPLE',
    'http://127.0.0.1:5173',
    'http://localhost:3000',
    'http://127.0.0.1',
    'http://localhost',
    'https://127.0.0.1.evil.example',
    'file://',
    'chrome-extension://abcdefghijklmnop',
    '',
  ])('Origin %j is refused with 403 and no model call, even with a JSON body', async (origin) => {
    const res = await refused(port, post({ headers: { 'Content-Type': 'application/json', Origin: origin } }));
    expect(res.status).toBe(403);
    expect(res.headers['access-control-allow-origin']).toBeUndefined();
    const error = errorOf(res.body);
    expect(error.code).toBe('origin_not_allowed');
    expect(error.message).toMatch(/api\.corsOrigins/);
  });

  it('the no-cors attack as a browser sends it (text/plain from another site) is refused', async () => {
    const res = await refused(
      port,
      post({ headers: { 'Content-Type': 'text/plain;charset=UTF-8', Origin: 'https://evil.example' } }),
    );
    expect([403, 415]).toContain(res.status);
  });

  it('a CORS preflight from another site gets no CORS grant', async () => {
    const res = await refused(port, {
      method: 'OPTIONS',
      path: '/v1/chat/completions',
      headers: {
        Origin: 'https://evil.example',
        'Access-Control-Request-Method': 'POST',
        'Access-Control-Request-Headers': 'content-type',
      },
    });
    expect(res.status).toBeGreaterThanOrEqual(400);
    expect(res.headers['access-control-allow-origin']).toBeUndefined();
  });

  it.each([
    'evil.example',
    'evil.example:8900',
    'EVIL.example',
    '127.0.0.1.evil.example',
    '127.0.0.1.evil.example:8900',
    'localhost.evil',
    'localhost.evil:8900',
    'localhost.',
    'foo.localhost',
    '[::1].evil.example',
    '127.0.0.1@evil.example',
    '0x7f000001.evil.example',
    '',
    null,
  ])('Host %j is refused with 421 (DNS rebinding), no model call', async (host) => {
    const res = await refused(port, post({ host }));
    // Node itself answers 400 to a request without Host; either way nothing runs.
    expect([400, 421]).toContain(res.status);
    if (res.status === 421) expect(errorOf(res.body).code).toBe('host_not_allowed');
  });

  it.each(['evil.example', 'evil.example:8900', 'localhost.evil'])(
    'Host %j cannot read /health or /v1/models either',
    async (host) => {
      for (const path of ['/health', '/v1/models']) {
        const res = await rawRequest(port, { path, host });
        expect(res.status).toBe(421);
        expect(res.body).not.toContain('test-model');
      }
    },
  );

  it.each([
    '127.0.0.1',
    'localhost',
    'LOCALHOST',
    'LocalHost',
    '[::1]',
    '127.1',
    '2130706433',
    '127.0.0.2',
    '[::ffff:127.0.0.1]',
    '[0:0:0:0:0:0:0:1]',
  ])('Host %j (a loopback spelling, with the port) is answered', async (name) => {
    const res = await rawRequest(port, { path: '/health', host: `${name}:${port}` });
    expect(res.status).toBe(200);
    expect(res.body).toContain('test-model');
  });
});

describe('nanobot serve with api.apiKey and api.corsOrigins', () => {
  let port: number;
  const auth = { 'Content-Type': 'application/json', Authorization: `Bearer ${API_KEY}` };
  beforeAll(async () => {
    ({ port } = await serveWith({ apiKey: API_KEY, corsOrigins: ['https://app.example'] }));
  }, 60_000);

  it.each(['https://app.example', 'https://APP.example'])('the allowed origin %j gets its answer', async (origin) => {
    const res = await rawRequest(port, post({ headers: { ...auth, Origin: origin } }));
    expect(res.status).toBe(200);
    expect(res.headers['access-control-allow-origin']).toBe(origin);
  });

  it.each([
    'http://app.example',
    'https://app.example:8443',
    'https://app.example.evil.example',
    'https://evil-app.example',
    'null',
  ])('a near-miss origin %j is refused even with the right key', async (origin) => {
    const res = await refused(port, post({ headers: { ...auth, Origin: origin } }));
    expect(res.status).toBe(403);
  });

  it.each([
    ['no Authorization header', undefined],
    ['empty Bearer', 'Bearer '],
    ['a prefix of the key', `Bearer ${API_KEY.slice(0, 12)}`],
    ['the key minus its last character', `Bearer ${API_KEY.slice(0, -1)}`],
    ['the key plus one character', `Bearer ${API_KEY}x`],
    ['the key upper-cased', `Bearer ${API_KEY.toUpperCase()}`],
    ['the same length, wrong', `Bearer ${'x'.repeat(API_KEY.length)}`],
    ['the key twice', `Bearer ${API_KEY}${API_KEY}`],
    ['the key without the Bearer scheme', API_KEY],
  ])('%s is refused with 401 and no model call', async (_what, header) => {
    const headers: Record<string, string> = { 'Content-Type': 'application/json' };
    if (header !== undefined) headers.Authorization = header;
    const res = await refused(port, post({ headers }));
    expect(res.status).toBe(401);
    expect(errorOf(res.body).type).toBe('invalid_api_key');
  });
});

describe('nanobot serve: wrong API keys are rate-limited per address', () => {
  it('after 10 failures the address gets 429 with Retry-After, even with the right key, and nothing runs', async () => {
    const { port } = await serveWith({ apiKey: API_KEY });
    const wrong = post({ headers: { 'Content-Type': 'application/json', Authorization: 'Bearer sk-guess' } });
    for (let i = 0; i < 10; i += 1) expect((await refused(port, wrong)).status).toBe(401);
    const limited = await refused(port, wrong);
    expect(limited.status).toBe(429);
    const retryAfter = Number(limited.headers['retry-after']);
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(errorOf(limited.body)).toMatchObject({ type: 'rate_limit_error', code: 'too_many_auth_failures' });
    const right = await refused(
      port,
      post({ headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${API_KEY}` } }),
    );
    expect(right.status).toBe(429);
  }, 60_000);
});

describe('nanobot gateway: /health Host check and secrets in channel errors', () => {
  const TOKEN = '123456789:AAHfakeBotTokenForTheRedactionTest0123';
  let telegram: Server;
  let gateway: Started;
  let home: string;

  beforeAll(async () => {
    // A Telegram API that fails every call and quotes the request URL (token included), as proxies and some
    // upstream errors do. (404: grammy retries a 5xx getMe forever.)
    telegram = createServer((req, res) => {
      const body = JSON.stringify({
        ok: false,
        error_code: 404,
        description: `Internal error for https://api.telegram.org${req.url}?token=${TOKEN.split(':')[1]}`,
      });
      res.writeHead(404, { 'content-type': 'application/json' }).end(body);
    });
    await new Promise<void>((resolve) => telegram.listen(0, '127.0.0.1', resolve));
    home = tempHome();
    expect((await runCli(['onboard'], home)).code).toBe(0);
    editConfig(home, (c) => {
      c.agents.defaults.provider = 'custom';
      c.agents.defaults.model = 'test-model';
      c.providers.custom = { apiKey: 'k', apiBase: `${fake.url}/v1` };
      c.channels = {
        websocket: { enabled: false },
        telegram: {
          enabled: true,
          token: TOKEN,
          allowFrom: ['42'],
          apiBase: `http://127.0.0.1:${(telegram.address() as AddressInfo).port}`,
        },
      };
    });
    gateway = await startGateway(home);
    started.push(gateway);
  }, 60_000);
  afterAll(async () => {
    await new Promise((resolve) => telegram.close(resolve));
  });

  it('the channel error in /health and `nanobot channels status` carries no part of the bot token', async () => {
    const end = Date.now() + 20_000;
    let error = '';
    while (!error) {
      if (Date.now() > end) throw new Error(`no telegram error in /health; gateway output: ${gateway.output()}`);
      const res = await rawRequest(gateway.port, { path: '/health' });
      const body = JSON.parse(res.body) as { channelDetails?: Record<string, { error?: string }> };
      error = body.channelDetails?.telegram?.error ?? '';
      if (!error) await new Promise((r) => setTimeout(r, 100));
    }
    expect(error).toMatch(/redacted/);
    expect(error).not.toContain(TOKEN);
    expect(error).not.toContain(TOKEN.split(':')[1]);
    const status = await runCli(['channels', 'status'], home);
    expect(status.stdout).toMatch(/Telegram/);
    expect(status.stdout).not.toContain(TOKEN.split(':')[1]);
    const logFile = join(home, '.nanobot', 'logs', 'gateway.log');
    const logged = `${gateway.output()}${existsSync(logFile) ? readFileSync(logFile, 'utf8') : ''}`;
    expect(logged).toMatch(/telegram/);
    expect(logged).not.toContain(TOKEN.split(':')[1]);
  }, 30_000);

  it.each(['evil.example', 'evil.example:18790', '127.0.0.1.evil.example', 'localhost.evil', '', null])(
    '/health refuses Host %j',
    async (host) => {
      const res = await rawRequest(gateway.port, { path: '/health', host });
      expect([400, 421]).toContain(res.status);
      expect(res.body).not.toContain('test-model');
    },
  );

  it.each(['127.0.0.1', 'localhost', '[::1]', '127.1'])('/health answers Host %j', async (name) => {
    const res = await rawRequest(gateway.port, { path: '/health', host: `${name}:${gateway.port}` });
    expect(res.status).toBe(200);
  });
});
