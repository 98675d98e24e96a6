/**
 * Short-lived tokens from `/webui/bootstrap` under attack: forged, reused, expired, swapped between kinds, or
 * smuggled where only the header is read; and requests that pretend to come from this machine. Every attempt must
 * be refused (401/403), and the refusals count against the wrong-token limiter.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { AuthLimiter } from '../../src/security/auth-limiter.js';
import { isLocalRequest } from '../../src/security/hosts.js';
import { IssuedTokens } from '../../src/security/issued-tokens.js';
import {
  api,
  connect,
  RefusedError,
  rawRequest,
  type StartedChannel,
  startChannel,
} from '../channels/websocket/helpers.js';

const running: StartedChannel[] = [];
afterEach(async () => {
  for (const started of running.splice(0)) await started.channel.stop();
});

async function refusal(promise: Promise<unknown>): Promise<number> {
  try {
    const client = (await promise) as { close(): Promise<void> };
    await client.close();
  } catch (err) {
    if (err instanceof RefusedError) return err.status;
    throw err;
  }
  return 101;
}

describe('issued tokens: forged, reused, expired, swapped', () => {
  it('refuses every wrong spelling of an issued token on the WebSocket and on /api', async () => {
    let now = 5_000_000;
    const tokens = new IssuedTokens({ now: () => now });
    // A roomy limiter: this test counts refusals, the next one the limit.
    const started = await startChannel({}, { tokens, authLimiter: new AuthLimiter({ maxFailures: 100 }) });
    running.push(started);
    const boot = async () =>
      JSON.parse((await rawRequest(started.port, '/webui/bootstrap', { host: `127.0.0.1:${started.port}` })).body) as {
        token: string;
        api_token: string;
      };
    const { token, api_token } = await boot();
    const forged = [
      `nbwt_${'A'.repeat(43)}`,
      token.toUpperCase(),
      token.slice(0, -1),
      `${token}x`,
      ` ${token}`,
      token.replace('nbwt_', ''),
      encodeURIComponent(`${token}\n`),
      api_token, // an API token does not open a WebSocket
    ];
    for (const candidate of forged) {
      expect(await refusal(connect(started.port, { token: candidate })), candidate).toBe(401);
    }
    // The real one still works once (the forgeries did not use it up), and never again.
    expect(await refusal(connect(started.port, { token }))).toBe(101);
    expect(await refusal(connect(started.port, { token }))).toBe(401);

    const second = await boot();
    const apiForged = [
      `nbwt_${'B'.repeat(43)}`,
      api_token.slice(0, -1),
      `${api_token}x`,
      api_token.toLowerCase(),
      second.token, // a WebSocket token does not call the API
    ];
    for (const candidate of apiForged) {
      expect((await api(started, '/api/info', { token: candidate })).status, candidate).toBe(401);
    }
    // The static token is read from the header only: not from a URL, where it would end up in logs.
    expect((await api(started, `/api/info?token=${started.token}`, { token: null })).status).toBe(401);
    expect((await api(started, '/api/info', { token: api_token })).status).toBe(200);
    // Expired: refused, both kinds.
    now += 301_000;
    expect((await api(started, '/api/info', { token: api_token })).status).toBe(401);
    expect((await api(started, `/api/info?token=${api_token}`, { token: null })).status).toBe(401);
    expect(await refusal(connect(started.port, { token: second.token }))).toBe(401);
  });

  it('counts wrong issued tokens against the limiter', async () => {
    const started = await startChannel();
    running.push(started);
    for (let i = 0; i < 10; i++) await api(started, '/api/info', { token: `nbwt_guess${i}` });
    expect((await api(started, '/api/info')).status).toBe(429);
  });
});

describe('isLocalRequest: who counts as a browser on this machine', () => {
  const local = (remote: string | undefined, headers: Record<string, string | string[] | undefined>) =>
    isLocalRequest(remote, headers);

  it('is the loopback peer with a loopback Host and loopback forwarding only', () => {
    for (const peer of ['127.0.0.1', '::1', '::ffff:127.0.0.1', '127.9.9.9']) {
      expect(local(peer, { host: '127.0.0.1:8765' }), peer).toBe(true);
    }
    for (const host of ['localhost:8765', '[::1]:8765', 'LOCALHOST', '127.0.0.1']) {
      expect(local('127.0.0.1', { host }), host).toBe(true);
    }
  });

  it('is not anything else', () => {
    const peers = [undefined, '', '10.0.0.5', '::ffff:10.0.0.5', '2001:db8::1', '127.0.0.1 ', 'localhost.'];
    for (const peer of peers) expect(local(peer, { host: '127.0.0.1' }), String(peer)).toBe(false);
    const hosts = [
      undefined,
      '',
      'evil.example',
      'evil.example:8765',
      '127.0.0.1.nip.io',
      'localhost.',
      'a.localhost',
      '127.0.0.1@evil.example',
      '0.0.0.0',
    ];
    for (const host of hosts) expect(local('127.0.0.1', { host }), String(host)).toBe(false);
    const forwarded: Record<string, string | string[]>[] = [
      { 'x-forwarded-for': '203.0.113.9' },
      { 'x-forwarded-for': ['127.0.0.1', '203.0.113.9'] },
      { 'x-forwarded-for': '127.0.0.1,203.0.113.9' },
      { 'x-real-ip': '203.0.113.9' },
      { 'x-forwarded-host': 'evil.example' },
      { forwarded: 'for=203.0.113.9' },
      { forwarded: 'for=127.0.0.1, for=203.0.113.9' },
      { forwarded: 'host=evil.example;for=127.0.0.1' },
      { forwarded: 'FOR="[2001:db8::1]:443"' },
      { forwarded: 'for=_hidden' },
    ];
    for (const headers of forwarded) {
      expect(local('127.0.0.1', { host: '127.0.0.1', ...headers }), JSON.stringify(headers)).toBe(false);
    }
  });
});
