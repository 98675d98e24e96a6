/**
 * Outbound proxies the user configured (`providers.<name>.proxy`, `tools.web.proxy`), on undici's ProxyAgent:
 * http:// and https:// proxies (CONNECT tunnels) and socks5:// (socks5h:// and socks:// are read as socks5).
 *
 * The proxy address is the user's own choice, so it may be loopback (a local Clash/v2ray at 127.0.0.1:7890). What
 * travels through it is another matter: for the web tools the SSRF guard in network.ts checks and resolves the target
 * first, and `pinnedProxyDispatcher` then asks the proxy for the checked address, not the name, so a DNS answer that
 * changes between our check and the proxy's own lookup cannot turn the proxy into a way into the internal network.
 */
import net from 'node:net';
import type { Dispatcher, ProxyAgent } from 'undici';
import type { ResolvedAddress } from './network.js';

export type ProxyCheck = { ok: true; url: string } | { ok: false; reason: string };

const PROXY_SCHEMES: Record<string, string> = {
  'http:': 'http:',
  'https:': 'https:',
  'socks5:': 'socks5:',
  'socks5h:': 'socks5:',
  'socks:': 'socks5:',
};

/** Validates a proxy URL; `key` names the config path in the reason (`tools.web.proxy`). */
export function parseProxyUrl(raw: string, key: string): ProxyCheck {
  let url: URL;
  try {
    url = new URL(raw.trim());
  } catch {
    return { ok: false, reason: `${key}: '${raw.slice(0, 200)}' is not a URL (write e.g. http://127.0.0.1:7890)` };
  }
  const scheme = PROXY_SCHEMES[url.protocol];
  if (!scheme) {
    return {
      ok: false,
      reason: `${key}: proxy scheme '${url.protocol}' is not supported (use http://, https:// or socks5://)`,
    };
  }
  if (!url.hostname) return { ok: false, reason: `${key}: '${raw.slice(0, 200)}' names no proxy host` };
  if (url.pathname !== '/' && url.pathname !== '') {
    return { ok: false, reason: `${key}: a proxy URL has no path (write e.g. http://127.0.0.1:7890)` };
  }
  // URL cannot change the protocol of a special scheme through the setter, so rebuild the string.
  return { ok: true, url: scheme === url.protocol ? url.href : url.href.replace(/^[a-z0-9+.-]+:/i, scheme) };
}

/** `proxy` with the password hidden, for logs and error messages. */
export function redactProxyUrl(proxy: string): string {
  try {
    const url = new URL(proxy);
    if (url.password) url.password = '***';
    return url.href.replace(/\/$/, '');
  } catch {
    return '(invalid proxy URL)';
  }
}

/** A ProxyAgent for `proxy` (already checked by parseProxyUrl). undici loads on first use. */
export async function createProxyAgent(proxy: string, options: { servername?: string } = {}): Promise<ProxyAgent> {
  const { ProxyAgent: ProxyAgentClass } = await import('undici');
  return new ProxyAgentClass({
    uri: proxy,
    ...(options.servername ? { requestTls: { servername: options.servername } } : {}),
  });
}

/** fetch through `proxy` (for provider SDKs and OAuth token calls, whose destinations the user configured). */
export async function proxiedFetch(proxy: string): Promise<typeof globalThis.fetch> {
  const { fetch: undiciFetch } = await import('undici');
  const dispatcher = await createProxyAgent(proxy);
  return ((input: string | URL | Request, init?: RequestInit) =>
    undiciFetch(
      input as Parameters<typeof undiciFetch>[0],
      { ...init, dispatcher } as Parameters<typeof undiciFetch>[1],
    )) as unknown as typeof globalThis.fetch;
}

/**
 * A dispatcher for ONE checked hop through `proxy`: every request's origin host is replaced by `pinned` (the address
 * the SSRF guard checked), so the CONNECT (or SOCKS5 request) names that address; the Host header and the TLS server
 * name stay the URL's host name, so virtual hosts and certificate checks work as without a proxy.
 */
export async function pinnedProxyDispatcher(proxy: string, hostname: string, pinned: ResolvedAddress) {
  const host = hostname.replace(/^\[(.*)\]$/, '$1');
  const agent = await createProxyAgent(proxy, net.isIP(host) ? {} : { servername: host });
  const pinnedHost = pinned.family === 6 ? `[${pinned.address}]` : pinned.address;
  return agent.compose((dispatch) => (opts: Dispatcher.DispatchOptions, handler: Dispatcher.DispatchHandler) => {
    const origin = new URL(String(opts.origin));
    if (origin.hostname.replace(/^\[(.*)\]$/, '$1').toLowerCase() !== host.toLowerCase()) {
      throw new Error(`refusing to send a request for ${origin.host} through a dispatcher pinned to ${hostname}`);
    }
    const hostHeader = origin.host;
    origin.hostname = pinnedHost;
    return dispatch({ ...opts, origin: origin.origin, headers: withHost(opts.headers, hostHeader) }, handler);
  });
}

type Headers = Dispatcher.DispatchOptions['headers'];

/** The request headers as a plain object with `host` set (fetch hands undici a flat [name, value, …] array). */
function withHost(headers: Headers, host: string): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  const put = (name: unknown, value: unknown) => {
    if (typeof name !== 'string' || value === undefined || value === null) return;
    out[name] = Array.isArray(value) ? value.map(String) : String(value);
  };
  if (Array.isArray(headers)) {
    if (headers.every((h) => Array.isArray(h)))
      for (const [name, value] of headers as unknown as unknown[][]) put(name, value);
    else for (let i = 0; i + 1 < headers.length; i += 2) put(headers[i], headers[i + 1]);
  } else if (headers && typeof (headers as Iterable<unknown>)[Symbol.iterator] === 'function') {
    for (const [name, value] of headers as Iterable<[string, string]>) put(name, value);
  } else if (headers) {
    for (const [name, value] of Object.entries(headers)) put(name, value);
  }
  for (const name of Object.keys(out)) if (name.toLowerCase() === 'host') delete out[name];
  out.host = host;
  return out;
}
