/**
 * The policy's fetch against loopback fakes: pinning (DNS rebinding), TLS SNI, redirects re-checked per hop.
 * Only 127.0.0.1 (and, where the OS allows, 127.0.0.2) is ever connected to; "allowed" means whitelisted loopback.
 */
import net, { type AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createNetworkPolicy, type HostResolver, NetworkBlockedError } from '../../src/security/network.js';
import { type FakeWeb, redirect, startFakeWeb } from '../helpers/fake-web.js';

const servers: FakeWeb[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

async function fake(options: Parameters<typeof startFakeWeb>[0] = {}): Promise<FakeWeb> {
  const server = await startFakeWeb(options);
  servers.push(server);
  return server;
}

/** Answers each call with the next address in `answers` (the last one repeats), recording the calls. */
function sequenceResolver(answers: string[]) {
  const calls: string[] = [];
  const resolve: HostResolver = async (host) => {
    const address = answers[Math.min(calls.length, answers.length - 1)] as string;
    calls.push(host);
    return [{ address, family: 4 }];
  };
  return { resolve, calls };
}

const loopbackOnly = () => createNetworkPolicy({ whitelist: ['127.0.0.1/32'] });

async function blockedError(promise: Promise<unknown>): Promise<NetworkBlockedError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(NetworkBlockedError);
  return error as NetworkBlockedError;
}

describe('policy.fetch', () => {
  it('fetches from a whitelisted loopback server', async () => {
    const web = await fake({ routes: { '/hello': { body: 'hi there' } } });
    const response = await loopbackOnly().fetch(web.url('/hello'));
    expect(response.status).toBe(200);
    expect(await response.text()).toBe('hi there');
  });

  it('refuses loopback when it is not whitelisted, before connecting', async () => {
    const web = await fake({ routes: { '/hello': { body: 'hi' } } });
    const error = await blockedError(createNetworkPolicy().fetch(web.url('/hello')));
    expect(error.message).toMatch(/^Blocked request to http:\/\/127\.0\.0\.1:\d+\/hello: 127\.0\.0\.1 is loopback/);
    expect(error.message).toContain('hard security boundary');
    expect(error.message).not.toContain('\n');
    expect(web.connections()).toBe(0);
  });

  it('test_pin_resolved_url_dns_prevents_second_resolution_rebind: connects to the checked address', async () => {
    const web = await fake({ routes: { '/page': { body: 'pinned ok' } } });
    // First answer is the allowed (whitelisted) one; any later answer would be internal.
    const { resolve, calls } = sequenceResolver(['127.0.0.1', '10.0.0.1']);
    const policy = createNetworkPolicy({ whitelist: ['127.0.0.1/32'], resolve });
    const response = await policy.fetch(`http://rebind.test:${web.port}/page`);
    expect(await response.text()).toBe('pinned ok');
    expect(calls).toEqual(['rebind.test']);
    // `rebind.test` is not in system DNS: reaching the fake at all proves the pinned address was used.
    expect(web.requests[0]?.headers.host).toBe(`rebind.test:${web.port}`);
  });

  it('resolves again on each redirect hop and refuses a hop that now answers with an internal address', async () => {
    const web = await fake({ routes: { '/a': redirect('/b'), '/b': { body: 'should not be reached' } } });
    const { resolve, calls } = sequenceResolver(['127.0.0.1', '10.0.0.1']);
    const policy = createNetworkPolicy({ whitelist: ['127.0.0.1/32'], resolve });
    const error = await blockedError(policy.fetch(`http://rebind.test:${web.port}/a`));
    expect(error.reason).toContain('redirect target refused');
    expect(error.reason).toContain('10.0.0.1');
    expect(calls).toEqual(['rebind.test', 'rebind.test']);
    expect(web.requests.map((r) => r.path)).toEqual(['/a']);
  });

  it('sends the host name as TLS SNI while connecting to the pinned address', async () => {
    let clientHello = Buffer.alloc(0);
    const tlsListener = net.createServer((socket) => {
      socket.once('data', (chunk) => {
        clientHello = chunk;
        socket.destroy();
      });
    });
    await new Promise<void>((resolve) => tlsListener.listen(0, '127.0.0.1', resolve));
    const { port } = tlsListener.address() as AddressInfo;
    try {
      const { resolve, calls } = sequenceResolver(['127.0.0.1', '10.0.0.1']);
      const policy = createNetworkPolicy({ whitelist: ['127.0.0.1/32'], resolve });
      await expect(policy.fetch(`https://secure.test:${port}/`)).rejects.toThrow();
      expect(clientHello[0]).toBe(0x16); // a TLS handshake record
      expect(clientHello.includes(Buffer.from('secure.test'))).toBe(true);
      expect(calls).toEqual(['secure.test']);
    } finally {
      await new Promise<void>((resolve) => tlsListener.close(() => resolve()));
    }
  });

  it('follows an allowed redirect and reports the final URL', async () => {
    const web = await fake({ routes: { '/old': redirect('/new', 301), '/new': { body: 'moved here' } } });
    const response = await loopbackOnly().fetch(web.url('/old'));
    expect(await response.text()).toBe('moved here');
    expect(response.url).toBe(web.url('/new'));
  });

  it.each([
    { name: 'cloud metadata', target: 'http://169.254.169.254/latest/meta-data/', reason: '169.254.169.254' },
    { name: 'private network', target: 'http://10.0.0.1/', reason: '10.0.0.0/8' },
    { name: 'numeric loopback trick', target: 'http://2130706434/', reason: '127.0.0.2' },
    { name: 'IPv4-mapped loopback', target: 'http://[::ffff:127.0.0.2]/', reason: 'IPv4-mapped' },
    { name: 'file scheme', target: 'file:///etc/passwd', reason: "scheme 'file:'" },
  ])('test_web_fetch_blocks_private_redirect: refuses a redirect to $name', async ({ target, reason }) => {
    const web = await fake({ routes: { '/go': redirect(target) } });
    const error = await blockedError(loopbackOnly().fetch(web.url('/go')));
    expect(error.reason).toContain('redirect target refused');
    expect(error.reason).toContain(reason);
    expect(web.requests).toHaveLength(1);
  });

  it('refuses a redirect to a blocked loopback address without connecting to it', async (ctx) => {
    // 127.0.0.2 is loopback on Linux without setup; elsewhere the test has nothing to bind to.
    let canary: FakeWeb;
    try {
      canary = await fake({ host: '127.0.0.2', routes: { '/secret': { body: 'internal secret' } } });
    } catch {
      ctx.skip();
      return;
    }
    const web = await fake({ routes: { '/go': redirect(canary.url('/secret')) } });
    const error = await blockedError(loopbackOnly().fetch(web.url('/go')));
    expect(error.reason).toContain('127.0.0.2 is loopback');
    expect(canary.connections()).toBe(0);
    // Control: the canary is reachable when its address is allowed, so zero connections above means refusal.
    const open = createNetworkPolicy({ whitelist: ['127.0.0.1/32', '127.0.0.2/32'] });
    expect(await (await open.fetch(web.url('/go'))).text()).toBe('internal secret');
    expect(canary.connections()).toBe(1);
  });

  it('gives up after 5 redirects', async () => {
    const web = await fake({ routes: { '/loop': redirect('/loop') } });
    await expect(loopbackOnly().fetch(web.url('/loop'))).rejects.toThrow('Too many redirects (more than 5)');
    expect(web.requests).toHaveLength(6);
  });

  it('turns a POST into a GET on 303 and drops the body', async () => {
    const web = await fake({ routes: { '/submit': redirect('/done', 303), '/done': { body: 'done' } } });
    await loopbackOnly().fetch(web.url('/submit'), { method: 'POST', body: 'a=1' });
    expect(web.requests.map((r) => `${r.method} ${r.path} ${r.body}`)).toEqual(['POST /submit a=1', 'GET /done ']);
  });

  it('drops credentials when a redirect crosses to another origin', async () => {
    const other = await fake({ routes: { '/land': { body: 'landed' } } });
    const web = await fake({ routes: { '/start': redirect(other.url('/land')) } });
    const headers = { Authorization: 'Bearer secret', 'X-Key': 'k', Accept: 'text/html' };
    await loopbackOnly().fetch(web.url('/start'), { headers });
    expect(web.requests[0]?.headers.authorization).toBe('Bearer secret');
    expect(other.requests[0]?.headers.authorization).toBeUndefined();
    // Any header the caller added may be a credential (an API key header); Accept describes the request.
    expect(other.requests[0]?.headers['x-key']).toBeUndefined();
    expect(other.requests[0]?.headers.accept).toBe('text/html');
  });
});
