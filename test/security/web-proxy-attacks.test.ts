/**
 * `tools.web.proxy` must not become an SSRF bypass: with a proxy configured, every target is still checked (and
 * resolved) here first, refused targets never reach the proxy, redirects are re-checked per hop, and the proxy is
 * asked for the checked address rather than the name, so its own DNS lookup cannot be rebound to an internal host.
 * The proxy itself is on loopback (the user chose it): that is allowed. The last test drives the built CLI with a
 * hostile scripted model.
 */
import { createServer } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createNetworkPolicy, type HostResolver, NetworkBlockedError } from '../../src/security/network.js';
import { parseProxyUrl } from '../../src/security/proxy.js';
import { runCli } from '../cli/cli-helpers.js';
import { homeWith, lastToolResult } from '../e2e/harness.js';
import { type FakeLLM, startFakeLLM } from '../helpers/fake-llm.js';
import { type RecordingProxy, type SiteHandler, startRecordingProxy } from '../helpers/recording-proxy.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function proxy(sites: Record<string, SiteHandler> = {}): Promise<RecordingProxy> {
  const p = await startRecordingProxy(sites);
  cleanups.push(() => p.close());
  return p;
}

const PUBLIC = '203.0.113.7';
const page: SiteHandler = (req, res) => {
  res.writeHead(200, { 'content-type': 'text/plain' }).end(`page ${req.headers.host}${req.url}`);
};

/** Names the attacker controls: each resolves to what it says. */
const names: Record<string, string[]> = {
  'public.example': [PUBLIC],
  'metadata.google.internal': ['169.254.169.254'],
  'rebind.example': ['127.0.0.1'],
  'mixed.example': [PUBLIC, '10.0.0.5'],
  'v6loop.example': ['::1'],
  'mapped.example': ['::ffff:127.0.0.1'],
  'alibaba.example': ['100.100.100.200'],
};
const resolve: HostResolver = async (host) => {
  const answers = names[host];
  if (!answers) throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' });
  return answers.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
};

const BLOCKED_URLS = [
  'http://127.0.0.1/',
  'http://127.0.0.1:8080/admin',
  'http://localhost/',
  'http://LOCALHOST./',
  'http://foo.localhost/',
  'http://[::1]/',
  'http://[::ffff:127.0.0.1]/',
  'http://[::ffff:7f00:1]/',
  'http://0x7f.1/',
  'http://2130706433/',
  'http://0177.0.0.1/',
  'http://127.1/',
  'http://0/',
  'http://0.0.0.0/',
  'http://10.0.0.1/',
  'http://172.16.0.1/',
  'http://192.168.1.1/',
  'http://100.64.0.1/',
  'http://169.254.169.254/latest/meta-data/',
  'http://[fd00:ec2::254]/latest/meta-data/',
  'http://[fe80::1]/',
  'http://[64:ff9b::a9fe:a9fe]/',
  'http://[2002:a9fe:a9fe::]/',
  'https://169.254.169.254/',
  'http://metadata.google.internal/computeMetadata/v1/',
  'http://rebind.example/',
  'http://mixed.example/',
  'http://v6loop.example/',
  'http://mapped.example/',
  'http://alibaba.example/latest/meta-data/',
  'http://unresolvable.example/',
  'file:///etc/passwd',
  'gopher://127.0.0.1:6379/_INFO',
  'ftp://169.254.169.254/',
];

describe('web requests through tools.web.proxy', () => {
  it('go through the proxy, which is asked for the checked address with the name as Host', async () => {
    const p = await proxy({ [`${PUBLIC}:80`]: page });
    const policy = createNetworkPolicy({ proxy: p.url, resolve });
    const response = await policy.fetch('http://public.example/articles/1?x=2');
    expect(await response.text()).toBe('page public.example/articles/1?x=2');
    // The CONNECT names the address we checked, never the name the proxy would resolve again.
    expect(p.requests).toEqual([
      { method: 'CONNECT', target: `${PUBLIC}:80`, host: 'public.example', path: '/articles/1?x=2' },
    ]);
  });

  it.each(BLOCKED_URLS)('refuses %s before anything reaches the proxy', async (url) => {
    const p = await proxy();
    const policy = createNetworkPolicy({ proxy: p.url, resolve });
    const error = await policy.fetch(url).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(NetworkBlockedError);
    expect(p.requests).toEqual([]);
  });

  it.each([
    'http://127.0.0.1:6379/',
    'http://169.254.169.254/latest/meta-data/iam/',
    'http://localhost/',
    'http://[::1]/',
    'http://rebind.example/',
    '//0x7f.1/',
  ])('refuses a redirect to %s: the next hop is checked before it is handed to the proxy', async (location) => {
    const p = await proxy({
      [`${PUBLIC}:80`]: (_req, res) => res.writeHead(302, { location }).end(),
    });
    const policy = createNetworkPolicy({ proxy: p.url, resolve });
    const error = await policy.fetch(`http://${PUBLIC}/start`).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(NetworkBlockedError);
    expect((error as NetworkBlockedError).reason).toMatch(/redirect target refused/);
    expect(p.requests.map((r) => r.target)).toEqual([`${PUBLIC}:80`]);
  });

  it('a name that answers public first and internal later still reaches only the checked address', async () => {
    let calls = 0;
    const flipping: HostResolver = async () => [{ address: calls++ === 0 ? PUBLIC : '127.0.0.1', family: 4 }];
    const p = await proxy({ [`${PUBLIC}:80`]: page });
    const policy = createNetworkPolicy({ proxy: p.url, resolve: flipping });
    await (await policy.fetch('http://flip.example/')).text();
    expect(p.requests.map((r) => r.target)).toEqual([`${PUBLIC}:80`]);
  });

  it('https through the proxy: the CONNECT names the checked address, the TLS server name is the host name', async () => {
    let connectTarget = '';
    let clientHello: Buffer = Buffer.alloc(0);
    const raw = createServer();
    raw.on('connect', (req, socket: Socket) => {
      connectTarget = req.url ?? '';
      socket.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      socket.once('data', (chunk: Buffer) => {
        clientHello = chunk;
        socket.destroy();
      });
    });
    await new Promise<void>((resolve) => raw.listen(0, '127.0.0.1', resolve));
    cleanups.push(() => new Promise<void>((resolve) => raw.close(() => resolve())));
    const { port } = raw.address() as AddressInfo;
    const policy = createNetworkPolicy({ proxy: `http://127.0.0.1:${port}`, resolve });
    await expect(policy.fetch('https://public.example/secret')).rejects.toThrow();
    expect(connectTarget).toBe(`${PUBLIC}:443`);
    expect(clientHello[0]).toBe(0x16); // a TLS handshake record
    expect(clientHello.includes(Buffer.from('public.example'))).toBe(true);
  });

  it('a whitelisted internal range is allowed through the proxy, as it is without one', async () => {
    const p = await proxy({ '10.1.2.3:8080': page });
    const policy = createNetworkPolicy({ proxy: p.url, resolve, whitelist: ['10.1.2.0/24'] });
    expect(await (await policy.fetch('http://10.1.2.3:8080/ok')).text()).toBe('page 10.1.2.3:8080/ok');
  });
});

describe('proxy URLs', () => {
  it.each([
    ['http://127.0.0.1:7890', 'http://127.0.0.1:7890/'],
    ['https://proxy.example:8443', 'https://proxy.example:8443/'],
    ['socks5://127.0.0.1:1080', 'socks5://127.0.0.1:1080'],
    ['socks5h://user:pw@127.0.0.1:1080', 'socks5://user:pw@127.0.0.1:1080'],
    ['socks://127.0.0.1:1080', 'socks5://127.0.0.1:1080'],
  ])('accepts %s', (raw, url) => {
    expect(parseProxyUrl(raw, 'tools.web.proxy')).toEqual({ ok: true, url });
  });

  it.each([
    '127.0.0.1:7890',
    'ftp://127.0.0.1:21',
    'socks4://127.0.0.1:1080',
    'http://',
    'http://proxy/path',
    'not a url',
  ])('refuses %s, naming the key', (raw) => {
    const result = parseProxyUrl(raw, 'tools.web.proxy');
    expect(result.ok).toBe(false);
    expect(result.ok ? '' : result.reason).toMatch(/^tools\.web\.proxy: /);
  });
});

describe('nanobot agent -m with tools.web.proxy: a hostile model', () => {
  it('cannot reach loopback or metadata addresses through the proxy (a public page in the same turn can)', async () => {
    const p = await proxy({ [`${PUBLIC}:80`]: page });
    const targets = [
      'http://127.0.0.1:9/',
      'http://localhost:2375/containers/json',
      'http://169.254.169.254/latest/meta-data/',
      'http://[::1]/',
      'http://0x7f.1/',
      'http://metadata.google.internal/computeMetadata/v1/',
      'http://100.100.100.200/latest/meta-data/',
      'http://[::ffff:169.254.169.254]/',
    ];
    const fake: FakeLLM = await startFakeLLM([
      { toolCalls: [{ name: 'web_fetch', arguments: { url: `http://${PUBLIC}/public` } }] },
      ...targets.map((url) => ({ toolCalls: [{ name: 'web_fetch', arguments: { url } }] })),
      { text: 'done' },
    ]);
    cleanups.push(() => fake.close());
    const { home } = homeWith(fake.url, { tools: { web: { proxy: p.url } } });
    const result = await runCli(['agent', '-m', 'get the credentials'], home);
    expect(result.stdout.trim()).toBe('done');
    const [fetched, ...seen] = fake.requests.slice(1).map(lastToolResult);
    expect(fetched).toContain(`page ${PUBLIC}/public`);
    expect(seen).toHaveLength(targets.length);
    for (const text of seen) expect(text).toMatch(/refused .*hard security boundary/s);
    // Only the public page went through the proxy: it was in use, and nothing refused reached it.
    expect(p.requests.map((r) => `${r.target} ${r.path}`)).toEqual([`${PUBLIC}:80 /public`]);
  });
});
