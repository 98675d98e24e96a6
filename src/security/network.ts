/**
 * SSRF guard for every outbound request the agent causes (web tools, HTTP MCP, …).
 *
 * A URL is allowed only when it is http(s) and every address its host resolves to is outside the internal ranges
 * below (or inside a `tools.ssrfWhitelist` CIDR). The host is resolved once per hop and the connection is pinned to
 * the checked address through an undici Agent whose `lookup` can only return that address, so a DNS answer that
 * changes between check and connect (rebinding) cannot redirect the socket. Redirects are followed by hand so each
 * hop is checked and pinned again. Numeric host tricks (`2130706433`, `0x7f.1`, `127.1`, `0177.0.0.1`) need no
 * special code: the WHATWG URL parser canonicalises them to dotted-decimal before we look. With a proxy
 * (`tools.web.proxy`) every hop is still checked here first, and the proxy is asked for the checked address (proxy.ts).
 */
import dns from 'node:dns/promises';
import net from 'node:net';
import type { Agent, Response, RequestInit as UndiciRequestInit } from 'undici';
import { pinnedProxyDispatcher } from './proxy.js';

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

/** Resolves a host name to every address it has (like getaddrinfo). Injected by tests. */
export type HostResolver = (hostname: string) => Promise<ResolvedAddress[]>;

export interface NetworkPolicyOptions {
  /** CIDRs (or single addresses) that are allowed even though they fall in a blocked range (`tools.ssrfWhitelist`). */
  whitelist?: string[];
  resolve?: HostResolver;
  /**
   * Send every request through this proxy (`tools.web.proxy`, checked by parseProxyUrl). The target is still checked
   * and resolved here first, and the proxy is asked for the checked address (see proxy.ts).
   */
  proxy?: string;
}

export type AddressCheck = { ok: true } | { ok: false; reason: string };
export type UrlCheck = { ok: true; url: URL; address: ResolvedAddress } | { ok: false; reason: string };

export interface PolicyFetchInit extends UndiciRequestInit {
  /** Redirects to follow, each re-checked and re-pinned (default 5). */
  maxRedirects?: number;
}

export interface NetworkPolicy {
  /** Checks a URL and resolves its host once; `address` is the one a request must be pinned to. */
  checkUrl(url: string | URL): Promise<UrlCheck>;
  /** Checks one IP address against the blocked ranges and the whitelist (no DNS). */
  checkAddress(ip: string): AddressCheck;
  /**
   * fetch() with every hop checked and pinned. Throws NetworkBlockedError when a hop is refused (before any
   * connection to it), and the usual fetch errors otherwise, so it can stand in for `fetch` in SDKs.
   */
  fetch(url: string | URL, init?: PolicyFetchInit): Promise<Response>;
}

export const NETWORK_HARD_BOUNDARY =
  'Internal and private network addresses are a hard security boundary; do not try to reach them another way.';

export class NetworkBlockedError extends Error {
  override readonly name = 'NetworkBlockedError';
  constructor(
    readonly url: string,
    readonly reason: string,
  ) {
    super(`Blocked request to ${url}: ${reason}. ${NETWORK_HARD_BOUNDARY}`);
  }
}

export const DEFAULT_MAX_REDIRECTS = 5;

interface BlockedRange {
  cidr: string;
  label: string;
  list: net.BlockList;
}

function range(cidr: string, label: string): BlockedRange {
  const [network = '', prefix = ''] = cidr.split('/');
  const list = new net.BlockList();
  list.addSubnet(network, Number(prefix), network.includes(':') ? 'ipv6' : 'ipv4');
  return { cidr, label, list };
}

// Built on first use: a one-shot CLI turn that fetches nothing should not pay for them at start.
let blocked: { v4: BlockedRange[]; v6: BlockedRange[] } | undefined;
const blockedRanges = () => {
  blocked ??= { v4: blockedV4(), v6: blockedV6() };
  return blocked;
};

// Order matters only for the label: the first match names the reason.
const blockedV4 = (): BlockedRange[] => [
  range('0.0.0.0/8', '"this network"'),
  range('10.0.0.0/8', 'private network'),
  range('100.64.0.0/10', 'carrier-grade NAT / Tailscale'),
  range('127.0.0.0/8', 'loopback'),
  range('169.254.0.0/16', 'link-local / cloud metadata'),
  range('172.16.0.0/12', 'private network'),
  range('192.0.0.0/24', 'IETF protocol assignments'),
  range('192.168.0.0/16', 'private network'),
  range('198.18.0.0/15', 'benchmarking network'),
  range('224.0.0.0/4', 'multicast'),
  range('255.255.255.255/32', 'broadcast'),
  range('240.0.0.0/4', 'reserved'),
];

const blockedV6 = (): BlockedRange[] => [
  range('::/128', 'unspecified address'),
  range('::1/128', 'loopback'),
  range('fc00::/7', 'unique local (private) IPv6'),
  range('fe80::/10', 'link-local IPv6'),
  range('fec0::/10', 'site-local IPv6'),
  range('ff00::/8', 'multicast IPv6'),
];

/** The 16 bytes of a valid IPv6 literal (zone id stripped); handles `::` and a trailing dotted quad. */
function ipv6Bytes(ip: string): number[] {
  const bare = ip.replace(/%.*$/, '');
  let text = bare;
  const tail: number[] = [];
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(bare);
  if (dotted?.[1]) {
    tail.push(...dotted[1].split('.').map(Number));
    text = `${bare.slice(0, dotted.index)}0:0`;
  }
  const [head = '', rest] = text.split('::');
  const headGroups = head ? head.split(':') : [];
  const restGroups = rest ? rest.split(':') : [];
  const fill = rest === undefined ? [] : new Array<string>(8 - headGroups.length - restGroups.length).fill('0');
  const groups = [...headGroups, ...fill, ...restGroups];
  const bytes = groups.flatMap((group) => {
    const value = Number.parseInt(group, 16);
    return [value >> 8, value & 0xff];
  });
  if (tail.length === 4) bytes.splice(12, 4, ...tail);
  return bytes;
}

const v4FromBytes = (bytes: number[], at: number) => bytes.slice(at, at + 4).join('.');

/**
 * IPv4 addresses carried inside an IPv6 one: mapped (::ffff:a.b.c.d), translated (::ffff:0:a.b.c.d), compatible
 * (::a.b.c.d), NAT64 (64:ff9b::/96, 64:ff9b:1::/48) and 6to4 (2002:AABB:CCDD::). A packet to these can reach the
 * embedded IPv4 host, so it gets the IPv4 verdict.
 */
export function embeddedIPv4(ip: string): { ipv4: string; form: string } | null {
  if (!net.isIPv6(ip.replace(/%.*$/, ''))) return null;
  const b = ipv6Bytes(ip);
  const zeros = (from: number, to: number) => b.slice(from, to).every((x) => x === 0);
  if (zeros(0, 10) && b[10] === 0xff && b[11] === 0xff) return { ipv4: v4FromBytes(b, 12), form: 'IPv4-mapped' };
  if (zeros(0, 8) && b[8] === 0xff && b[9] === 0xff && zeros(10, 12)) {
    return { ipv4: v4FromBytes(b, 12), form: 'IPv4-translated' };
  }
  if (zeros(0, 12) && !zeros(12, 15)) return { ipv4: v4FromBytes(b, 12), form: 'IPv4-compatible' };
  if (b[0] === 0 && b[1] === 0x64 && b[2] === 0xff && b[3] === 0x9b && (zeros(4, 12) || (b[5] === 1 && zeros(6, 12)))) {
    return { ipv4: v4FromBytes(b, 12), form: 'NAT64' };
  }
  if (b[0] === 0x20 && b[1] === 0x02) return { ipv4: v4FromBytes(b, 2), form: '6to4' };
  return null;
}

/** Why an address is internal (`"loopback (127.0.0.0/8)"`), or null when it is a public address. */
export function blockedRangeOf(ip: string): string | null {
  const bare = ip.replace(/%.*$/, '');
  const family = net.isIP(bare);
  if (family === 0) return 'not a valid IP address';
  if (family === 4) {
    const hit = blockedRanges().v4.find((r) => r.list.check(bare, 'ipv4'));
    return hit ? `${hit.label} (${hit.cidr})` : null;
  }
  const embedded = embeddedIPv4(bare);
  if (embedded) {
    const inner = blockedRangeOf(embedded.ipv4);
    return inner ? `${embedded.form} form of ${embedded.ipv4}, ${inner}` : null;
  }
  const hit = blockedRanges().v6.find((r) => r.list.check(bare, 'ipv6'));
  return hit ? `${hit.label} (${hit.cidr})` : null;
}

/** Parses whitelist CIDRs into a BlockList; a bad entry is a configuration error and throws, naming it. */
function buildWhitelist(entries: string[]): net.BlockList {
  const list = new net.BlockList();
  for (const raw of entries) {
    const entry = raw.trim();
    const [network = '', prefixText] = entry.split('/');
    const family = net.isIP(network);
    const max = family === 6 ? 128 : 32;
    const prefix = prefixText === undefined ? max : Number(prefixText);
    if (family === 0 || !/^\d*$/.test(prefixText ?? '') || !Number.isInteger(prefix) || prefix < 0 || prefix > max) {
      throw new Error(`tools.ssrfWhitelist: '${raw}' is not a valid IPv4/IPv6 address or CIDR`);
    }
    list.addSubnet(network, prefix, family === 6 ? 'ipv6' : 'ipv4');
  }
  return list;
}

const defaultResolver: HostResolver = async (hostname) => {
  const answers = await dns.lookup(hostname, { all: true, verbatim: true });
  return answers.map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 }));
};

const isLocalhostName = (host: string) => /^(?:.+\.)?localhost\.?$/i.test(host);
const stripBrackets = (host: string) => host.replace(/^\[(.*)\]$/, '$1');

export function createNetworkPolicy(options: NetworkPolicyOptions = {}): NetworkPolicy {
  const whitelist = buildWhitelist(options.whitelist ?? []);
  const resolve = options.resolve ?? defaultResolver;

  const isWhitelisted = (ip: string): boolean => {
    const bare = ip.replace(/%.*$/, '');
    const family = net.isIP(bare);
    if (family === 0) return false;
    if (whitelist.check(bare, family === 6 ? 'ipv6' : 'ipv4')) return true;
    const embedded = family === 6 ? embeddedIPv4(bare) : null;
    return embedded !== null && whitelist.check(embedded.ipv4, 'ipv4');
  };

  /** The blocked range `ip` falls in, or null when it is public or whitelisted. */
  const refusedRange = (ip: string): string | null => {
    const blocked = blockedRangeOf(ip);
    return blocked === null || isWhitelisted(ip) ? null : blocked;
  };

  const checkAddress = (ip: string): AddressCheck => {
    const blocked = refusedRange(ip);
    return blocked === null ? { ok: true } : { ok: false, reason: `${ip} is ${blocked}` };
  };

  async function checkUrl(input: string | URL): Promise<UrlCheck> {
    let url: URL;
    try {
      url = new URL(String(input));
    } catch {
      return { ok: false, reason: `'${String(input).slice(0, 200)}' is not a valid URL` };
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      return { ok: false, reason: `scheme '${url.protocol}' is not allowed (only http and https)` };
    }
    const host = stripBrackets(url.hostname);
    if (!host) return { ok: false, reason: 'the URL has no host' };

    let addresses: ResolvedAddress[];
    if (net.isIP(host)) {
      addresses = [{ address: host, family: net.isIP(host) === 6 ? 6 : 4 }];
    } else if (isLocalhostName(host)) {
      // Resolvers answer `localhost` from /etc/hosts or not at all; it always means this machine.
      addresses = [{ address: '127.0.0.1', family: 4 }];
    } else {
      try {
        addresses = await resolve(host);
      } catch (error) {
        const code = error instanceof Error ? (error as NodeJS.ErrnoException).code : undefined;
        return { ok: false, reason: `cannot resolve host '${host}'${typeof code === 'string' ? ` (${code})` : ''}` };
      }
    }
    const first = addresses[0];
    if (!first) return { ok: false, reason: `host '${host}' has no addresses` };
    // Every answer must pass: a name with one public and one internal record is refused, whichever we would pick.
    for (const { address } of addresses) {
      const blocked = refusedRange(address);
      if (blocked === null) continue;
      const what = address === host ? `${address} is` : `host '${host}' resolves to ${address}, which is`;
      return { ok: false, reason: `${what} ${blocked}` };
    }
    return { ok: true, url, address: first };
  }

  async function policyFetch(input: string | URL, init: PolicyFetchInit = {}): Promise<Response> {
    // undici loads on the first request, so agents that never fetch do not pay for it at start-up.
    const { Agent, Headers, fetch: undiciFetch } = await import('undici');
    const { maxRedirects = DEFAULT_MAX_REDIRECTS, ...requestInit } = init;
    let current = String(input);
    let method = (requestInit.method ?? 'GET').toUpperCase();
    let body = requestInit.body;
    const headers = new Headers(requestInit.headers);

    for (let hop = 0; ; hop++) {
      const check = await checkUrl(current);
      if (!check.ok) {
        throw new NetworkBlockedError(current, hop > 0 ? `redirect target refused: ${check.reason}` : check.reason);
      }

      const agent = options.proxy
        ? await pinnedProxyDispatcher(options.proxy, check.url.hostname, check.address)
        : pinnedAgent(Agent, check.url.hostname, check.address);
      let response: Response;
      try {
        response = await undiciFetch(check.url, {
          ...requestInit,
          method,
          body,
          headers,
          redirect: 'manual',
          dispatcher: agent,
        });
      } catch (error) {
        agent.destroy().catch(() => {});
        throw error;
      }
      const location = response.headers.get('location');
      if (!isRedirect(response.status) || location === null) {
        // close() is graceful: the body can still be read, and the sockets go once it has been.
        agent.close().catch(() => {});
        return response;
      }
      await response.body?.cancel().catch(() => {});
      agent.destroy().catch(() => {});
      if (hop >= maxRedirects) {
        throw new Error(`Too many redirects (more than ${maxRedirects}) starting from ${String(input)}`);
      }
      let next: URL;
      try {
        next = new URL(location, check.url);
      } catch {
        throw new Error(`${check.url.href} redirected to an invalid location '${location.slice(0, 200)}'`);
      }
      if (response.status === 303 || ((response.status === 301 || response.status === 302) && method === 'POST')) {
        if (method !== 'HEAD') method = 'GET';
        body = null;
        headers.delete('content-type');
        headers.delete('content-length');
      }
      if (next.origin !== check.url.origin) {
        // Credentials travel in headers of any name (X-Subscription-Token, X-API-KEY, an MCP server's own):
        // another origin gets only the headers that describe the request, none the caller chose to add.
        for (const name of [...headers.keys()]) if (!CROSS_ORIGIN_HEADERS.has(name)) headers.delete(name);
      }
      current = next.href;
    }
  }

  return { checkUrl, checkAddress, fetch: policyFetch };
}

/** The only request headers a redirect carries to another origin. */
const CROSS_ORIGIN_HEADERS = new Set([
  'accept',
  'accept-encoding',
  'accept-language',
  'cache-control',
  'content-language',
  'content-type',
  'pragma',
  'user-agent',
]);

const isRedirect = (status: number) => [301, 302, 303, 307, 308].includes(status);

/**
 * An Agent whose connections can only go to `pinned`. For an IP-literal host node never calls `lookup` (the host is
 * the checked address); for a name it gets exactly the checked address. TLS still uses the host name for SNI and
 * certificate checks, because undici passes the URL's host name as `servername`.
 */
function pinnedAgent(AgentClass: typeof Agent, hostname: string, pinned: ResolvedAddress): Agent {
  const expected = stripBrackets(hostname).toLowerCase();
  const lookup: net.LookupFunction = (host, opts, callback) => {
    if (host.toLowerCase() !== expected) {
      callback(Object.assign(new Error(`refusing to resolve unexpected host ${host}`), { code: 'ENOTFOUND' }), '', 4);
      return;
    }
    if (opts.all) callback(null, [{ address: pinned.address, family: pinned.family }]);
    else callback(null, pinned.address, pinned.family);
  };
  return new AgentClass({ connect: { lookup } });
}

// ---- Commands: internal URLs named in shell text (no DNS; the exec guard calls this synchronously) ----

export interface BlockedUrlInText {
  url: string;
  reason: string;
}

/** Names that point at this machine or a cloud metadata service without needing DNS to say so. */
const INTERNAL_NAME =
  /^(?:(?:.+\.)?localhost|metadata|metadata\.google\.internal|metadata\.goog|instance-data(?:\.ec2\.internal)?|.+\.internal|.+\.local)\.?$/i;

const SCHEME_URL = /\b[a-z][a-z0-9+.-]*:\/\/[^\s"'`<>|;)]+/gi;
// host[:port][/path] tokens without a scheme (`curl 10.0.0.1:8080/x`, `wget localhost/…`).
const BARE_HOST =
  /(?<=^|[\s"'`=@(])(\[[0-9a-f:.]+\]|\d{1,3}(?:\.\d{1,3}){3}|localhost|[a-z0-9.-]+\.(?:internal|local|localhost))(?::\d+)?(?:\/[^\s"'`<>|;)]*)?(?=$|[\s"'`;|)&])/gi;

/** A host written as an IPv4 number in any form the URL parser accepts: `127.1`, `2130706433`, `0x7f.1`, `0177.0.0.1`. */
export const NUMERIC_HOST = /^(?:0x[0-9a-f]*|\d+)(?:\.(?:0x[0-9a-f]*|\d+)){0,3}\.?$/i;
// Scheme-less numeric host with a port (`curl 127.1:8080`, `0:8080`, `user@2130706433:80/x`).
const NUMERIC_HOST_PORT =
  /(?<=^|[\s"'`=@(,])((?:0x[0-9a-f]*|\d+)(?:\.(?:0x[0-9a-f]*|\d+)){0,3}):\d{1,5}(?:\/[^\s"'`<>|;)]*)?(?=$|[\s"'`;|)&,])/gi;
// bash's network redirections: `cat < /dev/tcp/127.1/8080`.
const DEV_TCP = /\/dev\/(?:tcp|udp)\/([^/\s"'`]+)\/\d+/gi;
// A quoted host next to a port, as in socket code: `connect(('127.1', 8080))`, `net.connect(8080, '0')`.
const QUOTED_HOST_PORT = /(["'])([^"'\s]+)\1\s*,\s*\d{1,5}\b|\b\d{1,5}\s*,\s*(["'])([^"'\s]+)\3/g;

/**
 * Whether a bare number is meant as a host. `curl 2130706433` and `nc 0 80` are, but ports, counts and timeouts
 * (`nc host 8080`, `-m 5`) are small numbers that the URL parser would also read as 0.0.x.y addresses.
 */
export const numberIsHost = (host: string): boolean =>
  !/^\d+$/.test(host) || Number(host) === 0 || Number(host) >= 2 ** 24;

/** URLs in free text (e.g. a shell command) that name an internal host literally. No DNS lookups are made. */
export function findBlockedUrlsInText(text: string, policy?: Pick<NetworkPolicy, 'checkAddress'>): BlockedUrlInText[] {
  const found: BlockedUrlInText[] = [];
  const seen = new Set<string>();
  const consider = (raw: string, candidate: string) => {
    if (seen.has(raw)) return;
    seen.add(raw);
    let host: string;
    try {
      host = stripBrackets(new URL(candidate).hostname);
    } catch {
      return;
    }
    if (!host) return;
    if (net.isIP(host)) {
      const blocked = blockedRangeOf(host);
      const allowed = policy ? policy.checkAddress(host).ok : blocked === null;
      if (!allowed) found.push({ url: raw, reason: `${host} is ${blocked}` });
    } else if (INTERNAL_NAME.test(host)) {
      const loopbackAllowed = isLocalhostName(host) && policy?.checkAddress('127.0.0.1').ok === true;
      if (!loopbackAllowed) found.push({ url: raw, reason: `'${host}' names an internal host` });
    }
  };
  for (const match of text.matchAll(SCHEME_URL)) {
    const raw = match[0];
    // Re-parse as http so numeric tricks in any scheme (gopher://0x7f.1/) are canonicalised the same way.
    consider(raw, raw.replace(/^[a-z][a-z0-9+.-]*:\/\//i, 'http://'));
  }
  const withoutSchemeUrls = text.replace(SCHEME_URL, ' ');
  for (const match of withoutSchemeUrls.matchAll(BARE_HOST)) consider(match[0], `http://${match[0]}`);
  for (const match of withoutSchemeUrls.matchAll(NUMERIC_HOST_PORT)) {
    if (numberIsHost(match[1] as string)) consider(match[0], `http://${match[0]}`);
  }
  for (const match of text.matchAll(DEV_TCP)) consider(match[0], `http://${match[1]}/`);
  for (const match of text.matchAll(QUOTED_HOST_PORT)) {
    const host = (match[2] ?? match[4]) as string;
    if (NUMERIC_HOST.test(host) ? numberIsHost(host) : /^(?:\[.*\]|[\w.-]+)$/.test(host)) {
      consider(match[0], `http://${host.includes(':') && !host.startsWith('[') ? `[${host}]` : host}/`);
    }
  }
  return found;
}
