/**
 * `POST /cron/run` on the gateway's health server (how `nanobot cron run` reaches a running gateway): only a request
 * with the exact bearer token from the 0600 state file runs anything. Every other spelling is refused before the
 * job is even looked up, and the token never appears in an answer.
 */
import http from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { CRON_RUN_PATH, type HealthServer, startHealthServer } from '../../src/gateway/health.js';
import { UserError } from '../../src/util/errors.js';

const TOKEN = 'tok_0123456789abcdefghijklmnop';
let server: HealthServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function start() {
  const runs: string[] = [];
  server = await startHealthServer({
    host: '127.0.0.1',
    port: 0,
    report: () => ({ provider: 'p', model: 'm', channels: {} }),
    control: {
      token: TOKEN,
      runCronJob: async (id) => {
        if (id === 'dream') throw new UserError("'dream' is a protected system job.", 'hint');
        runs.push(id);
        return { status: 'ok' };
      },
    },
  });
  return { runs, port: server.port };
}

function request(
  port: number,
  options: { method?: string; path?: string; headers?: Record<string, string>; body?: string },
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        method: options.method ?? 'POST',
        path: options.path ?? CRON_RUN_PATH,
        headers: options.headers,
      },
      (res) => {
        let body = '';
        res.on('data', (chunk: Buffer) => {
          body += chunk.toString();
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on('error', reject);
    req.end(options.body ?? JSON.stringify({ id: 'abcd1234' }));
  });
}

describe('POST /cron/run', () => {
  it('runs a job for the right token only', async () => {
    const { runs, port } = await start();
    const ok = await request(port, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(ok).toEqual({ status: 200, body: '{"status":"ok"}' });
    expect(runs).toEqual(['abcd1234']);
  });

  const refused: Array<[string, Record<string, string>]> = [
    ['no authorization', {}],
    ['empty bearer', { authorization: 'Bearer ' }],
    ['wrong token', { authorization: 'Bearer tok_wrong' }],
    ['token prefix', { authorization: `Bearer ${TOKEN.slice(0, -1)}` }],
    ['token plus a character', { authorization: `Bearer ${TOKEN}x` }],
    ['token in upper case', { authorization: `Bearer ${TOKEN.toUpperCase()}` }],
    ['lower-case scheme', { authorization: `bearer ${TOKEN}` }],
    ['basic scheme', { authorization: `Basic ${Buffer.from(`x:${TOKEN}`).toString('base64')}` }],
    ['bare token', { authorization: TOKEN }],
    ['two spaces', { authorization: `Bearer  ${TOKEN}` }],
    ['token in another header', { 'x-api-key': TOKEN }],
    ['cookie', { cookie: `token=${TOKEN}` }],
  ];
  it.each(refused)('refuses %s with 401 and runs nothing', async (_label, headers) => {
    const { runs, port } = await start();
    const answer = await request(port, { headers });
    expect(answer.status).toBe(401);
    expect(answer.body).not.toContain(TOKEN);
    expect(runs).toEqual([]);
  });

  it('refuses a token in the query string, other methods, a foreign Host, bad bodies and oversized ones', async () => {
    const { runs, port } = await start();
    const auth = { authorization: `Bearer ${TOKEN}` };
    expect((await request(port, { path: `${CRON_RUN_PATH}?token=${TOKEN}` })).status).toBe(401);
    // (Node itself answers 400 to a GET or DELETE that carries a chunked body.)
    for (const method of ['GET', 'PUT', 'DELETE', 'PATCH'])
      expect([400, 405]).toContain((await request(port, { method, headers: auth })).status);
    expect((await request(port, { headers: { ...auth, host: 'evil.example' } })).status).toBe(421);
    for (const body of ['', 'not json', '{}', '{"id": 5}', '{"id": ""}', '[]'])
      expect((await request(port, { headers: auth, body })).status).toBe(400);
    expect((await request(port, { headers: auth, body: JSON.stringify({ id: 'x'.repeat(10_000) }) })).status).toBe(413);
    expect(runs).toEqual([]);
  });

  it('answers a refused run (system job) with 409 and its reason', async () => {
    const { port } = await start();
    const answer = await request(port, { headers: { authorization: `Bearer ${TOKEN}` }, body: '{"id":"dream"}' });
    expect(answer.status).toBe(409);
    expect(JSON.parse(answer.body)).toEqual({ error: "'dream' is a protected system job.", hint: 'hint' });
  });

  it('does not exist without a control token (a gateway started by tests or an embedder)', async () => {
    server = await startHealthServer({
      host: '127.0.0.1',
      port: 0,
      report: () => ({ provider: 'p', model: 'm', channels: {} }),
    });
    expect((await request(server.port, { headers: { authorization: 'Bearer ' } })).status).toBe(404);
  });
});
