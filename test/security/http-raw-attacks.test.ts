/**
 * Request shapes an HTTP client library never sends but a raw socket (or a confused proxy) can, against the built
 * `nanobot serve`: HTTP/1.0 without Host, absolute-form targets, repeated Host/Content-Type/Origin headers, chunked
 * bodies. Each must be refused before any model call (regression corpus for issue 15 item 3; all held).
 */
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { editConfig, runCli, tempHome } from '../cli/cli-helpers.js';
import { type FakeLLM, startFakeLLM } from '../helpers/fake-llm.js';
import { type Started, startServe } from './http-helpers.js';

let fake: FakeLLM;
let serve: Started;
beforeAll(async () => {
  fake = await startFakeLLM();
  const home = tempHome();
  expect((await runCli(['onboard'], home)).code).toBe(0);
  editConfig(home, (c) => {
    c.agents.defaults.provider = 'custom';
    c.agents.defaults.model = 'test-model';
    c.providers.custom = { apiKey: 'k', apiBase: `${fake.url}/v1` };
  });
  serve = await startServe(home);
}, 60_000);
afterAll(async () => {
  serve?.child.kill('SIGKILL');
  await fake?.close();
});

/** Writes `text` to a fresh connection and returns the status line once the server closes it. */
function send(port: number, text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    let out = '';
    socket.on('data', (chunk: Buffer) => {
      out += chunk.toString();
    });
    socket.on('error', reject);
    socket.on('close', () => resolve(out.split('\r\n')[0] ?? ''));
    socket.end(text);
  });
}

const BODY = JSON.stringify({ messages: [{ role: 'user', content: 'run a tool for me' }] });
const request = (target: string, headers: string[], version = '1.1', body = BODY): string =>
  `POST ${target} HTTP/${version}\r\n${[...headers, `Content-Length: ${body.length}`, 'Connection: close'].join('\r\n')}\r\n\r\n${body}`;
const JSON_TYPE = 'Content-Type: application/json';
const PATH = '/v1/chat/completions';

const cases = (port: number): [string, string, number][] => [
  ['HTTP/1.0 without Host', request(PATH, [JSON_TYPE], '1.0'), 421],
  [
    'absolute-form target to a foreign host',
    request(`http://evil.example${PATH}`, ['Host: evil.example', JSON_TYPE]),
    421,
  ],
  [
    'absolute-form loopback target, foreign Host',
    request(`http://127.0.0.1:${port}${PATH}`, ['Host: evil.example', JSON_TYPE]),
    421,
  ],
  ['two Host headers, the foreign one first', request(PATH, ['Host: evil.example', 'Host: 127.0.0.1', JSON_TYPE]), 421],
  ['Host with a zone id', request(PATH, ['Host: [fe80::1%25lo]', JSON_TYPE]), 421],
  ['Host with a trailing-dot name', request(PATH, ['Host: localhost.', JSON_TYPE]), 421],
  ['Host with a port but a foreign name', request(PATH, [`Host: evil.example:${port}`, JSON_TYPE]), 421],
  [
    'dot-segments in the path, foreign Host',
    request('/v1/../v1/chat/completions', ['Host: evil.example', JSON_TYPE]),
    421,
  ],
  ['text/plain then application/json', request(PATH, ['Host: 127.0.0.1', 'Content-Type: text/plain', JSON_TYPE]), 415],
  [
    'one Content-Type listing two types',
    request(PATH, ['Host: 127.0.0.1', 'Content-Type: application/json, text/plain']),
    415,
  ],
  [
    'application/json in another charset',
    request(PATH, ['Host: 127.0.0.1', 'Content-Type: application/json; charset=utf-16']),
    415,
  ],
  [
    'chunked text/plain',
    `POST ${PATH} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n${BODY.length.toString(16)}\r\n${BODY}\r\n0\r\n\r\n`,
    415,
  ],
  [
    'foreign Origin then own Origin',
    request(PATH, ['Host: 127.0.0.1', 'Origin: https://evil.example', `Origin: http://127.0.0.1:${port}`, JSON_TYPE]),
    403,
  ],
  ['empty Origin', request(PATH, ['Host: 127.0.0.1', 'Origin: ', JSON_TYPE]), 403],
  ['Origin null', request(PATH, ['Host: 127.0.0.1', 'Origin: null', JSON_TYPE]), 403],
];

describe('nanobot serve: raw request shapes', () => {
  it('refuses each one before any model call', async () => {
    const all = cases(serve.port);
    for (const [name, text, status] of all) {
      const before = fake.requests.length;
      const line = await send(serve.port, text);
      expect(line, name).toMatch(new RegExp(`^HTTP/1\\.[01] ${status} `));
      expect(fake.requests.length, `model called for: ${name}`).toBe(before);
    }
    for (const target of ['/health', '/v1/models']) {
      const line = await send(serve.port, `GET ${target} HTTP/1.1\r\nHost: evil.example\r\nConnection: close\r\n\r\n`);
      expect(line, target).toMatch(/^HTTP\/1\.1 421 /);
    }
  }, 60_000);
});
