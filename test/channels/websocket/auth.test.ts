import { statSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { parseWebSocketSettings } from '../../../src/channels/websocket/index.js';
import { UserError } from '../../../src/util/errors.js';
import { api, connect, RefusedError, rawRequest, type StartedChannel, startChannel } from './helpers.js';

const running: StartedChannel[] = [];
afterEach(async () => {
  for (const started of running.splice(0)) await started.channel.stop();
});

async function start(block: Record<string, unknown> = {}, dataDir?: string) {
  const started = await startChannel(block, dataDir ? { dataDir } : {});
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

describe('WebSocket channel: who may connect', () => {
  it('needs the token from <data dir>/webui-token (0600), and greets with ready', async () => {
    const started = await start();
    const mode = statSync(join(started.dataDir, 'webui-token')).mode & 0o777;
    expect(mode).toBe(0o600);
    expect(started.token).toMatch(/^[A-Za-z0-9_-]{40,}$/);

    expect(await refusal(connect(started.port))).toBe(401);
    expect(await refusal(connect(started.port, { token: 'wrong' }))).toBe(401);

    const client = await connect(started.port, { token: started.token, clientId: 'alice' });
    const ready = await client.next();
    expect(ready).toMatchObject({ event: 'ready', client_id: 'alice', upload: { path: '/api/uploads' } });
    expect(ready.event === 'ready' && ready.chat_id).toMatch(/^[0-9a-f-]{36}$/);
    await client.close();
  });

  it('keeps the same token across restarts, and a configured token replaces it', async () => {
    const first = await start();
    await first.channel.stop();
    const again = await start({}, first.dataDir);
    expect(again.token).toBe(first.token);
    const client = await connect(again.port, { token: first.token });
    await client.close();

    const fixed = await start({ token: 'a-configured-token-1234' });
    expect(await refusal(connect(fixed.port, { token: fixed.token.slice(1) }))).toBe(401);
    expect(await refusal(connect(fixed.port, { token: first.token }))).toBe(401);
    const ok = await connect(fixed.port, { token: 'a-configured-token-1234' });
    await ok.close();
  });

  it('refuses a WebSocket from a page on another origin (ClawJacked), even with the token', async () => {
    const started = await start();
    const evil = connect(started.port, { token: started.token, origin: 'http://evil.example' });
    expect(await refusal(evil)).toBe(403);
    const sibling = connect(started.port, { token: started.token, origin: 'http://127.0.0.1:1' });
    expect(await refusal(sibling)).toBe(403);
    // DNS rebinding: evil.example resolving to 127.0.0.1 makes Host and Origin agree, but Host is not loopback.
    const rebound = connect(started.port, {
      token: started.token,
      origin: `http://evil.example:${started.port}`,
      host: `evil.example:${started.port}`,
    });
    expect(await refusal(rebound)).toBe(421);

    const own = await connect(started.port, { token: started.token, origin: started.url });
    expect((await own.next()).event).toBe('ready');
    await own.close();
  });

  it('accepts an origin named in allowedOrigins (a reverse proxy)', async () => {
    const started = await start({ allowedOrigins: ['https://bot.example.com'] });
    const client = await connect(started.port, {
      token: started.token,
      origin: 'https://bot.example.com',
      host: 'bot.example.com',
    });
    await client.close();
  });

  it('guards the REST routes with the token and the same origin rule', async () => {
    const started = await start();
    expect((await api(started, '/api/info', { token: null })).status).toBe(401);
    expect((await api(started, '/api/info', { token: 'nope' })).status).toBe(401);
    const info = await api(started, '/api/info');
    expect(info.status).toBe(200);
    expect(await info.json()).toEqual({ ws_path: '/' });

    const cross = await rawRequest(started.port, '/api/info', {
      host: `127.0.0.1:${started.port}`,
      origin: 'http://evil.example',
      authorization: `Bearer ${started.token}`,
    });
    expect(cross.status).toBe(403);
    expect(cross.headers['access-control-allow-origin']).toBeUndefined();
    const rebound = await rawRequest(started.port, '/api/info', {
      host: 'evil.example',
      authorization: `Bearer ${started.token}`,
    });
    expect(rebound.status).toBe(421);
  });

  it('serves the WebUI page without the token, with a strict CSP', async () => {
    const started = await start();
    const page = await fetch(`${started.url}/`);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('<div id="root">');
    expect(page.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
    expect(page.headers.get('content-security-policy')).toContain("script-src 'self'");
    expect((await fetch(`${started.url}/assets/../../package.json`)).status).toBe(404);
    expect((await fetch(`${started.url}/%2e%2e/%2e%2e/package.json`)).status).toBe(404);
  });

  it('refuses to listen beyond loopback without a configured token', () => {
    expect(() => parseWebSocketSettings({ host: '0.0.0.0' })).toThrow(UserError);
    expect(() =>
      parseWebSocketSettings({ host: '0.0.0.0', token: 'x'.repeat(24), websocketRequiresToken: false }),
    ).toThrow(/websocketRequiresToken/);
    expect(parseWebSocketSettings({ host: '0.0.0.0', token: 'x'.repeat(24) }).host).toBe('0.0.0.0');
    // On loopback, turning the token off is allowed (nanobot's websocketRequiresToken: false).
    expect(parseWebSocketSettings({ websocketRequiresToken: false }).websocketRequiresToken).toBe(false);
  });

  it('without a token (websocketRequiresToken: false, loopback) still refuses other origins', async () => {
    const started = await startChannel({ websocketRequiresToken: false });
    running.push(started);
    const local = await connect(started.port);
    await local.close();
    expect(await refusal(connect(started.port, { origin: 'http://evil.example' }))).toBe(403);
    expect((await api(started, '/api/info', { token: null })).status).toBe(200);
  });

  it('turns away clients not in allowFrom', async () => {
    const started = await start({ allowFrom: ['alice'] });
    expect(await refusal(connect(started.port, { token: started.token, clientId: 'mallory' }))).toBe(403);
    const alice = await connect(started.port, { token: started.token, clientId: 'alice' });
    await alice.close();
  });
});
