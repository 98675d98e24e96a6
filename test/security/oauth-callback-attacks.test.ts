/** The OAuth sign-in callback page (a loopback HTTP server while `nanobot provider login` waits). */
import { afterEach, describe, expect, it } from 'vitest';
import { type CallbackServer, startCallbackServer } from '../../src/providers/oauth/callback-server.js';
import { rawRequest } from './http-helpers.js';

const STATE = 'state-0123456789abcdef0123456789';
let server: CallbackServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

describe('OAuth callback server', () => {
  it.each(['evil.example', 'evil.example:1455', 'localhost.evil', '127.0.0.1.evil.example', ''])(
    'refuses Host %j (DNS rebinding), even with the right state',
    async (host) => {
      server = await startCallbackServer(0, '/auth/callback', STATE);
      const res = await rawRequest(server.port, { path: `/auth/callback?state=${STATE}&code=c1`, host });
      expect([400, 421]).toContain(res.status);
    },
  );

  it.each(['', STATE.slice(0, 8), `${STATE}x`, STATE.toUpperCase(), STATE.slice(0, -1)])(
    'refuses the state %j',
    async (state) => {
      server = await startCallbackServer(0, '/auth/callback', STATE);
      const res = await rawRequest(server.port, { path: `/auth/callback?state=${state}&code=c1` });
      expect(res.status).toBe(400);
    },
  );

  it('escapes the provider error text it shows (no script injection into the page)', async () => {
    server = await startCallbackServer(0, '/auth/callback', STATE);
    const evil = encodeURIComponent('<script>alert(1)</script><img src=x onerror=alert(2)>');
    const res = await rawRequest(server.port, {
      path: `/auth/callback?state=${STATE}&error=access_denied&error_description=${evil}`,
    });
    expect(res.status).toBe(400);
    expect(res.body).not.toContain('<script>');
    expect(res.body).not.toContain('<img');
    expect(res.body).toContain('&#60;script&#62;');
    await expect(server.code).rejects.toThrow(/not completed/);
  });

  it('still accepts the right state from a loopback Host', async () => {
    server = await startCallbackServer(0, '/auth/callback', STATE);
    const res = await rawRequest(server.port, { path: `/auth/callback?state=${STATE}&code=c1`, host: 'localhost' });
    expect(res.status).toBe(200);
    expect(await server.code).toBe('c1');
  });
});
