/**
 * The WebSocket channel (WebUI port) under attack: token guessing is rate-limited per address on both the upgrade
 * and `/api/*`, and its Host/Origin checks are the shared policy (many spellings).
 */
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { MessageBus } from '../../src/bus/message-bus.js';
import { WebSocketChannel } from '../../src/channels/websocket/channel.js';
import { parseWebSocketSettings } from '../../src/channels/websocket/index.js';
import { AuthLimiter } from '../../src/security/auth-limiter.js';
import { connect, RefusedError, rawRequest, type StartedChannel, startChannel } from '../channels/websocket/helpers.js';

const running: StartedChannel[] = [];
const stops: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const started of running.splice(0)) await started.channel.stop();
  for (const stop of stops.splice(0)) await stop();
});

async function refusal(promise: Promise<{ close(): Promise<void> }>): Promise<number> {
  try {
    const client = await promise;
    await client.close();
  } catch (err) {
    if (err instanceof RefusedError) return err.status;
    throw err;
  }
  return 101;
}

describe('WebSocket channel: wrong tokens are rate-limited', () => {
  it('after 10 wrong tokens the address gets 429 (upgrade and /api), even with the right token, until the window ends', async () => {
    let now = 5_000_000;
    const token = 'the-right-token-0123456789';
    const channel = new WebSocketChannel({
      settings: () => parseWebSocketSettings({ port: 0, pingIntervalS: 60, token }),
      dataDir: await mkdtemp(join(tmpdir(), 'nb-ws-limit-')),
      authLimiter: new AuthLimiter({ now: () => now }),
    });
    await channel.start(new MessageBus());
    stops.push(() => channel.stop());
    const port = channel.address?.port ?? 0;

    for (let i = 0; i < 5; i += 1) expect(await refusal(connect(port, { token: `guess-${i}` }))).toBe(401);
    for (let i = 0; i < 5; i += 1) {
      const res = await rawRequest(port, '/api/sessions', { authorization: `Bearer guess-${i}` });
      expect(res.status).toBe(401);
    }
    expect(await refusal(connect(port, { token: 'guess-x' }))).toBe(429);
    expect(await refusal(connect(port, { token: token }))).toBe(429);
    const limited = await rawRequest(port, '/api/sessions', { authorization: `Bearer ${token}` });
    expect(limited.status).toBe(429);
    expect(Number(limited.headers['retry-after'])).toBeGreaterThanOrEqual(1);

    now += 60_000;
    expect(await refusal(connect(port, { token }))).toBe(101);
  });
});

describe('WebSocket channel: only the whole token opens the door', () => {
  it('a prefix, a near miss or an extension of the token is refused on the upgrade and on /api; the token is let in', async () => {
    const token = 'the-right-token-0123456789';
    const channel = new WebSocketChannel({
      settings: () => parseWebSocketSettings({ port: 0, pingIntervalS: 60, token }),
      dataDir: await mkdtemp(join(tmpdir(), 'nb-ws-prefix-')),
      // No limiting here: every spelling must get its own 401, not a 429 after ten.
      authLimiter: new AuthLimiter({ maxFailures: 1_000 }),
    });
    await channel.start(new MessageBus());
    stops.push(() => channel.stop());
    const port = channel.address?.port ?? 0;
    const wrong = [
      token.slice(0, 1),
      token.slice(0, 4),
      token.slice(0, 16),
      token.slice(0, -1),
      token.slice(1),
      `${token}x`,
      `${token}${token}`,
      token.toUpperCase(),
      token.replace('0', 'O'),
    ];
    for (const given of wrong) {
      expect(await refusal(connect(port, { token: given })), `upgrade with ${JSON.stringify(given)}`).toBe(401);
      const res = await rawRequest(port, '/api/sessions', { authorization: `Bearer ${given}` });
      expect(res.status, `/api with ${JSON.stringify(given)}`).toBe(401);
    }
    expect(await refusal(connect(port, { token }))).toBe(101);
    // Past the token check (this bare channel has no session store behind /api, hence no 200).
    expect([401, 429]).not.toContain(
      (await rawRequest(port, '/api/sessions', { authorization: `Bearer ${token}` })).status,
    );
  });
});

describe('WebSocket channel: Host and Origin spellings (shared policy)', () => {
  it.each([
    ['evil.example', false],
    ['evil.example:8765', false],
    ['127.0.0.1.evil.example', false],
    ['localhost.evil', false],
    ['localhost.', false],
    ['foo.localhost', false],
    ['127.0.0.1@evil.example', false],
    ['LOCALHOST', true],
    ['[::1]', true],
    ['127.1', true],
  ])('Host %j allowed: %s', async (host, allowed) => {
    const started = await startChannel({ token: 'the-right-token-0123456789' });
    running.push(started);
    const res = await rawRequest(started.port, '/api/sessions', {
      host,
      authorization: 'Bearer the-right-token-0123456789',
    });
    if (allowed) expect(res.status).not.toBe(421);
    else expect(res.status).toBe(421);
  });

  it.each(['null', 'https://evil.example', 'http://127.0.0.1:1', 'http://localhost:5173', 'HTTP://EVIL.EXAMPLE'])(
    'Origin %j cannot open the WebSocket even with the token',
    async (origin) => {
      const started = await startChannel({ token: 'the-right-token-0123456789' });
      running.push(started);
      expect(await refusal(connect(started.port, { token: started.token, origin }))).toBe(403);
    },
  );
});
