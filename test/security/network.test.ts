/**
 * SSRF corpus: every case here must be refused (or, for the controls, allowed) by the URL check alone, without DNS
 * for literal addresses and without connecting anywhere.
 */
import { describe, expect, it } from 'vitest';
import {
  blockedRangeOf,
  createNetworkPolicy,
  embeddedIPv4,
  type HostResolver,
  type ResolvedAddress,
} from '../../src/security/network.js';

/** A resolver that fails the test if it is ever asked: literal addresses must never go to DNS. */
const noDns: HostResolver = async (host) => {
  throw new Error(`unexpected DNS lookup for ${host}`);
};

/** A resolver from a fixed table, counting its calls. */
function tableResolver(table: Record<string, string[]>) {
  const calls: string[] = [];
  const resolve: HostResolver = async (host) => {
    calls.push(host);
    const addresses = table[host];
    if (!addresses) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
    return addresses.map((address): ResolvedAddress => ({ address, family: address.includes(':') ? 6 : 4 }));
  };
  return { resolve, calls };
}

async function expectBlocked(url: string, reasonPart?: string) {
  const result = await createNetworkPolicy({ resolve: noDns }).checkUrl(url);
  expect(result.ok, `${url} should be blocked`).toBe(false);
  if (!result.ok && reasonPart) expect(result.reason).toContain(reasonPart);
}

describe('SSRF: blocked IPv4 ranges', () => {
  it.each([
    { name: '0.0.0.0/8 (this network)', url: 'http://0.0.0.0/', reason: '0.0.0.0/8' },
    { name: '0.0.0.0/8 other host', url: 'http://0.1.2.3:8080/', reason: '0.0.0.0/8' },
    { name: '10.0.0.0/8 private', url: 'http://10.0.0.1/', reason: '10.0.0.0/8' },
    { name: '10.0.0.0/8 top', url: 'http://10.255.255.255/', reason: '10.0.0.0/8' },
    { name: '100.64.0.0/10 CGNAT', url: 'http://100.64.0.1/', reason: '100.64.0.0/10' },
    {
      name: '100.64.0.0/10 CGNAT top (Alibaba metadata lives here)',
      url: 'http://100.100.100.200/',
      reason: 'carrier-grade NAT',
    },
    { name: '127.0.0.0/8 loopback', url: 'http://127.0.0.1/', reason: 'loopback' },
    { name: '127.0.0.0/8 other loopback', url: 'http://127.255.255.254:6379/', reason: '127.0.0.0/8' },
    { name: '169.254.169.254 cloud metadata', url: 'http://169.254.169.254/latest/meta-data/', reason: 'metadata' },
    { name: '169.254.0.0/16 link-local', url: 'http://169.254.0.1/', reason: '169.254.0.0/16' },
    { name: '172.16.0.0/12 private low', url: 'http://172.16.0.1/', reason: '172.16.0.0/12' },
    { name: '172.16.0.0/12 private high', url: 'http://172.31.255.255/', reason: '172.16.0.0/12' },
    { name: '192.168.0.0/16 private', url: 'https://192.168.1.1/admin', reason: '192.168.0.0/16' },
    { name: '224.0.0.0/4 multicast', url: 'http://224.0.0.1/', reason: 'multicast' },
    { name: '224.0.0.0/4 multicast SSDP', url: 'http://239.255.255.250:1900/', reason: 'multicast' },
    { name: '240.0.0.0/4 reserved', url: 'http://240.0.0.1/', reason: 'reserved' },
    { name: '255.255.255.255 broadcast', url: 'http://255.255.255.255/', reason: 'broadcast' },
  ])('blocks $name: $url', async ({ url, reason }) => {
    await expectBlocked(url, reason);
  });
});

describe('SSRF: numeric host tricks (canonicalised like the WHATWG URL parser does)', () => {
  it.each([
    { name: 'decimal integer', url: 'http://2130706433/' },
    { name: 'hex integer', url: 'http://0x7f000001/' },
    { name: 'octal integer', url: 'http://017700000001/' },
    { name: 'hex first octet, short form', url: 'http://0x7f.1/' },
    { name: 'short form 127.1', url: 'http://127.1/' },
    { name: 'short form 127.0.1', url: 'http://127.0.1/' },
    { name: 'octal first octet', url: 'http://0177.0.0.1/' },
    { name: 'all-hex octets', url: 'http://0x7f.0x0.0x0.0x1/' },
    { name: 'zero', url: 'http://0/' },
    { name: 'metadata as decimal', url: 'http://2852039166/latest/meta-data/' },
    { name: 'metadata as hex', url: 'http://0xa9fea9fe/' },
    { name: 'trailing dot', url: 'http://127.0.0.1./' },
    { name: 'percent-encoded host', url: 'http://%31%32%37.0.0.1/' },
    { name: 'full-width digits', url: 'http://１２７.０.０.１/' },
    { name: 'ideographic full stops', url: 'http://127。0。0。1/' },
    { name: 'userinfo before the host', url: 'http://user:pass@127.0.0.1/' },
    { name: 'explicit port', url: 'http://127.0.0.1:22/' },
  ])('blocks $name: $url', async ({ url }) => {
    await expectBlocked(url);
  });
});

describe('SSRF: IPv6 and IPv4 embedded in IPv6', () => {
  it.each([
    { name: 'unspecified ::', url: 'http://[::]/', reason: 'unspecified' },
    { name: 'loopback ::1', url: 'http://[::1]/', reason: 'loopback' },
    { name: 'loopback long form', url: 'http://[0:0:0:0:0:0:0:1]:8080/', reason: 'loopback' },
    { name: 'unique local fc00::/7 (fc)', url: 'http://[fc00::1]/', reason: 'fc00::/7' },
    { name: 'unique local fc00::/7 (fd)', url: 'http://[fd12:3456:789a::1]/', reason: 'fc00::/7' },
    { name: 'link-local fe80::/10', url: 'http://[fe80::1]/', reason: 'fe80::/10' },
    { name: 'link-local fe80::/10 top', url: 'http://[febf::1]/', reason: 'fe80::/10' },
    { name: 'multicast ff00::/8', url: 'http://[ff02::1]/', reason: 'multicast' },
    { name: 'IPv4-mapped loopback, dotted', url: 'http://[::ffff:127.0.0.1]/', reason: 'IPv4-mapped' },
    { name: 'IPv4-mapped loopback, hex', url: 'http://[::ffff:7f00:1]/', reason: '127.0.0.1' },
    { name: 'IPv4-mapped metadata', url: 'http://[::ffff:169.254.169.254]/', reason: 'metadata' },
    { name: 'IPv4-mapped private', url: 'http://[::ffff:10.0.0.1]/', reason: '10.0.0.0/8' },
    { name: 'IPv4-mapped long form', url: 'http://[0:0:0:0:0:ffff:7f00:0001]/', reason: '127.0.0.1' },
    { name: 'IPv4-translated', url: 'http://[::ffff:0:127.0.0.1]/', reason: 'IPv4-translated' },
    { name: 'IPv4-compatible', url: 'http://[::127.0.0.1]/', reason: 'IPv4-compatible' },
    { name: 'NAT64 well-known prefix', url: 'http://[64:ff9b::127.0.0.1]/', reason: 'NAT64' },
    { name: 'NAT64 to metadata', url: 'http://[64:ff9b::a9fe:a9fe]/', reason: '169.254.169.254' },
    { name: 'NAT64 local-use prefix', url: 'http://[64:ff9b:1::a00:1]/', reason: '10.0.0.1' },
    { name: '6to4 of loopback', url: 'http://[2002:7f00:1::]/', reason: '6to4' },
  ])('blocks $name: $url', async ({ url, reason }) => {
    await expectBlocked(url, reason);
  });

  it('test_blocks_ipv6_mapped_loopback: both spellings of ::ffff:127.0.0.1 are loopback', () => {
    expect(blockedRangeOf('::ffff:127.0.0.1')).toContain('loopback');
    expect(blockedRangeOf('::ffff:7f00:1')).toContain('loopback');
    expect(embeddedIPv4('::ffff:7f00:1')).toEqual({ ipv4: '127.0.0.1', form: 'IPv4-mapped' });
  });
});

describe('SSRF: schemes other than http and https', () => {
  it.each([
    { name: 'file', url: 'file:///etc/passwd' },
    { name: 'ftp', url: 'ftp://example.com/pub/file.txt' },
    { name: 'gopher', url: 'gopher://127.0.0.1:6379/_INFO' },
    { name: 'data', url: 'data:text/html,<script>alert(1)</script>' },
    { name: 'javascript', url: 'javascript:alert(1)' },
    { name: 'dict', url: 'dict://127.0.0.1:11211/stats' },
    { name: 'ws', url: 'ws://example.com/socket' },
    { name: 'no scheme', url: 'example.com/path' },
  ])('blocks $name: $url', async ({ url }) => {
    await expectBlocked(url);
  });

  it('says which scheme was refused', async () => {
    await expectBlocked('file:///etc/passwd', "scheme 'file:'");
  });
});

describe('SSRF: public addresses are allowed (checked, never connected to)', () => {
  it.each([
    'http://93.184.216.34/',
    'https://8.8.8.8/',
    'http://11.0.0.1/',
    'http://100.128.0.1/',
    'http://172.32.0.1/',
    'http://192.169.0.1/',
    'http://[2606:4700:4700::1111]/',
    'http://[64:ff9b::808:808]/',
  ])('allows %s', async (url) => {
    const result = await createNetworkPolicy({ resolve: noDns }).checkUrl(url);
    expect(result.ok).toBe(true);
  });
});

describe('SSRF: host names', () => {
  it('blocks a name that resolves to 127.0.0.1', async () => {
    const { resolve, calls } = tableResolver({ 'innocent.example': ['127.0.0.1'] });
    const result = await createNetworkPolicy({ resolve }).checkUrl('http://innocent.example/');
    expect(result).toEqual({
      ok: false,
      reason: "host 'innocent.example' resolves to 127.0.0.1, which is loopback (127.0.0.0/8)",
    });
    expect(calls).toEqual(['innocent.example']);
  });

  it('blocks a name that resolves to the metadata address', async () => {
    const { resolve } = tableResolver({ 'metadata.google.internal': ['169.254.169.254'] });
    const result = await createNetworkPolicy({ resolve }).checkUrl(
      'http://metadata.google.internal/computeMetadata/v1/',
    );
    expect(result.ok).toBe(false);
  });

  it.each(['http://localhost/', 'http://LOCALHOST./', 'http://app.localhost:3000/'])(
    'blocks %s without asking DNS',
    async (url) => {
      await expectBlocked(url, 'loopback');
    },
  );

  it('blocks a name when any one of its addresses is internal', async () => {
    const { resolve } = tableResolver({ 'mixed.example': ['93.184.216.34', '10.1.2.3'] });
    const result = await createNetworkPolicy({ resolve }).checkUrl('http://mixed.example/');
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.reason).toContain('10.1.2.3');
  });

  it('blocks a name whose IPv6 answer is IPv4-mapped loopback', async () => {
    const { resolve } = tableResolver({ 'v6.example': ['::ffff:127.0.0.1'] });
    expect((await createNetworkPolicy({ resolve }).checkUrl('http://v6.example/')).ok).toBe(false);
  });

  it('refuses a name that does not resolve', async () => {
    const { resolve } = tableResolver({});
    const result = await createNetworkPolicy({ resolve }).checkUrl('http://nowhere.example/');
    expect(result).toEqual({ ok: false, reason: "cannot resolve host 'nowhere.example' (ENOTFOUND)" });
  });

  it('returns the first checked address for pinning', async () => {
    const { resolve } = tableResolver({ 'public.example': ['93.184.216.34', '93.184.216.35'] });
    const result = await createNetworkPolicy({ resolve }).checkUrl('https://public.example/x');
    expect(result.ok && result.address).toEqual({ address: '93.184.216.34', family: 4 });
  });
});

describe('SSRF: whitelist (tools.ssrfWhitelist)', () => {
  it('test_whitelist_allows_cgnat: a listed 100.64.0.0/10 is allowed, other ranges stay blocked', async () => {
    const policy = createNetworkPolicy({ whitelist: ['100.64.0.0/10'], resolve: noDns });
    expect((await policy.checkUrl('http://100.100.1.2/')).ok).toBe(true);
    expect((await policy.checkUrl('http://10.0.0.1/')).ok).toBe(false);
    expect((await policy.checkUrl('http://127.0.0.1/')).ok).toBe(false);
  });

  it('allows an IPv6 CIDR and only that CIDR', async () => {
    const policy = createNetworkPolicy({ whitelist: ['fd00::/8'], resolve: noDns });
    expect((await policy.checkUrl('http://[fd00::5]/')).ok).toBe(true);
    expect((await policy.checkUrl('http://[fc00::5]/')).ok).toBe(false);
  });

  it('accepts a bare address as a /32 and covers its IPv4-mapped spelling', async () => {
    const policy = createNetworkPolicy({ whitelist: ['127.0.0.1'], resolve: noDns });
    expect((await policy.checkUrl('http://127.0.0.1:8080/')).ok).toBe(true);
    expect((await policy.checkUrl('http://[::ffff:127.0.0.1]/')).ok).toBe(true);
    expect((await policy.checkUrl('http://127.0.0.2/')).ok).toBe(false);
  });

  it('applies to resolved names too', async () => {
    const { resolve } = tableResolver({ 'nas.home': ['192.168.1.20'] });
    const policy = createNetworkPolicy({ whitelist: ['192.168.1.0/24'], resolve });
    expect((await policy.checkUrl('http://nas.home/')).ok).toBe(true);
  });

  it.each(['10.0.0.0/33', 'not-an-ip/8', '10.0.0.0/x', 'fd00::/129', ''])('rejects the invalid entry %j', (entry) => {
    expect(() => createNetworkPolicy({ whitelist: [entry] })).toThrow(/tools\.ssrfWhitelist/);
  });
});
