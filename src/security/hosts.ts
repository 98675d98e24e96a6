/**
 * The one loopback/host policy every HTTP surface and channel uses.
 *
 * Loopback means: `localhost` (any case: DNS names are case-insensitive), 127.0.0.0/8, `::1` and the IPv4-mapped
 * `::ffff:127.x.x.x`, in any spelling the WHATWG URL parser (what browsers and `fetch` use) turns into one of those
 * (`127.1`, `2130706433`, `[0:0:0:0:0:0:0:1]`…). Not loopback: anything with whitespace, `%`, `_` or other junk,
 * `localhost.` and `*.localhost` (Node's resolver does not promise they stay on this machine), and any other name.
 */

/** What a host name or IP literal may contain before it is parsed; everything else is junk, never loopback. */
const HOST_CHARS = /^[A-Za-z0-9.:[\]-]+$/;
/** What a `Host` header may contain: a host, optionally `:port`. */
const HOST_HEADER_CHARS = /^[A-Za-z0-9.:[\]-]+$/;

/** The canonical (URL-parsed, lower-case) form of a host or `host:port`, or undefined when it is not one. */
function parseAuthority(authority: string): URL | undefined {
  if (authority === '') return undefined;
  try {
    const url = new URL(`http://${authority}/`);
    return url.username === '' && url.password === '' && url.pathname === '/' ? url : undefined;
  } catch {
    return undefined;
  }
}

/** A canonical hostname (as `URL#hostname` gives it) is loopback. */
function isLoopbackHostname(hostname: string): boolean {
  if (hostname === 'localhost' || hostname === '[::1]') return true;
  if (/^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(hostname)) return true;
  // IPv4-mapped 127.0.0.0/8: the parser writes ::ffff:127.a.b.c as [::ffff:7fXX:YYYY].
  return /^\[::ffff:7f[0-9a-f]{2}:[0-9a-f]{1,4}\]$/.test(hostname);
}

/** A host name or IP literal (no port) names this machine: see the file comment for the exact rule. */
export function isLoopbackHost(host: string): boolean {
  if (!HOST_CHARS.test(host) || (host.startsWith('[') && !host.endsWith(']'))) return false;
  const bracketed = host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
  const url = parseAuthority(bracketed);
  return url !== undefined && url.port === '' && isLoopbackHostname(url.hostname);
}

/** `host[:port]` from a `Host` header, canonical and lower-case; undefined when the header is not one. */
export function hostOfHeader(header: string | undefined): { hostname: string; port: string } | undefined {
  if (header === undefined || !HOST_HEADER_CHARS.test(header)) return undefined;
  const url = parseAuthority(header);
  return url ? { hostname: url.hostname, port: url.port } : undefined;
}

export interface HostCheckOptions {
  /** The address the server listens on. Bound beyond loopback, any Host is accepted (a key or token guards it). */
  bindHost: string;
  /** Other `host[:port]` names this server is reached by (e.g. behind a reverse proxy), compared case-insensitively. */
  alsoAllowed?: readonly string[];
}

/**
 * The DNS-rebinding defence: a server bound to loopback answers only requests whose `Host` names a loopback host
 * (with any port), or one of `alsoAllowed`. A page on evil.example that rebinds its name to 127.0.0.1 still sends
 * `Host: evil.example`, so it is refused. A missing or malformed Host is refused too.
 */
export function hostHeaderAllowed(header: string | undefined, options: HostCheckOptions): boolean {
  if (!isLoopbackHost(options.bindHost)) return true;
  const parsed = hostOfHeader(header);
  if (!parsed) return false;
  if (isLoopbackHostname(parsed.hostname)) return true;
  const given = parsed.port ? `${parsed.hostname}:${parsed.port}` : parsed.hostname;
  return (options.alsoAllowed ?? []).some((name) => {
    const other = hostOfHeader(name);
    return other !== undefined && (other.port ? `${other.hostname}:${other.port}` : other.hostname) === given;
  });
}

/** `https://App.Example:443/` → `https://app.example`; undefined for anything that is not an http(s) origin. */
export function canonicalOrigin(origin: string): string | undefined {
  if (!/^https?:\/\/[^/?#\s@\\]+\/?$/i.test(origin)) return undefined;
  try {
    const url = new URL(origin);
    return url.origin === 'null' ? undefined : url.origin;
  } catch {
    return undefined;
  }
}

export interface OriginCheckOptions {
  /** Origins allowed to call (`*` = any site, `null` included). */
  allowed: readonly string[];
  /** The request's `Host` header: `http(s)://<Host>` is this server's own origin, when it serves its own pages. */
  ownHost?: string;
}

/**
 * A browser names the page that sent a request in `Origin`. No header = not a browser (curl, an SDK): allowed, the
 * other checks guard it. Otherwise the origin must be listed (compared canonically, so case and a default port do
 * not matter, while another port, scheme or subdomain is another origin) or be this server's own. `null` (sandboxed
 * frames, file: pages) is allowed only by `*`.
 */
export function originAllowed(origin: string | undefined, options: OriginCheckOptions): boolean {
  if (origin === undefined) return true;
  if (options.allowed.includes('*')) return true;
  const given = canonicalOrigin(origin);
  if (given === undefined) return false;
  if (options.allowed.some((entry) => canonicalOrigin(entry) === given)) return true;
  if (options.ownHost === undefined || hostOfHeader(options.ownHost) === undefined) return false;
  return (
    given === canonicalOrigin(`http://${options.ownHost}`) || given === canonicalOrigin(`https://${options.ownHost}`)
  );
}

/**
 * A URL that credentials travel to must be https, or plain http to this machine. Returns the parsed URL, or a
 * sentence saying what is wrong (for the caller's UserError, which names the setting).
 */
export function checkSecureUrl(value: string): { url: URL } | { error: string } {
  if (/\s/.test(value)) return { error: 'contains whitespace' };
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return { error: 'is not a URL' };
  }
  if (url.protocol === 'https:') return { url };
  if (url.protocol === 'http:' && isLoopbackHostname(url.hostname)) return { url };
  return {
    error: 'must be an https:// URL (plain http only for a server on this machine: 127.0.0.1, localhost, [::1])',
  };
}

/** A peer address or a forwarded `host[:port]` / IP names this machine (`"[::1]:80"`, quoted `Forwarded` values too). */
function isLoopbackValue(value: string): boolean {
  const bare = value.trim().replace(/^"(.*)"$/, '$1');
  if (isLoopbackHost(bare)) return true;
  const parsed = hostOfHeader(bare);
  return parsed !== undefined && isLoopbackHostname(parsed.hostname);
}

const FORWARDING_HEADERS = ['x-forwarded-for', 'x-real-ip', 'x-forwarded-host'] as const;

/**
 * A request from a browser on this machine (nanobot's rule for handing out tokens without a secret): the TCP peer is
 * loopback, `Host` names a loopback host, and no proxy header says it came from elsewhere (a reverse proxy on this
 * machine forwarding a remote browser is not local).
 */
export function isLocalRequest(
  remoteAddress: string | undefined,
  headers: Record<string, string | string[] | undefined>,
): boolean {
  // The peer is a bare IP from the socket, never quoted or padded.
  if (!remoteAddress || !isLoopbackHost(remoteAddress)) return false;
  const host = headers.host;
  if (typeof host !== 'string' || !isLoopbackValue(host)) return false;
  const values: string[] = [];
  const all = (name: string) => {
    const raw = headers[name];
    return (Array.isArray(raw) ? raw : raw === undefined ? [] : [raw]).flatMap((line) => line.split(','));
  };
  for (const name of FORWARDING_HEADERS) values.push(...all(name));
  for (const element of all('forwarded')) {
    for (const pair of element.split(';')) {
      const match = /^\s*(for|host)\s*=\s*(.+?)\s*$/i.exec(pair);
      if (match?.[2]) values.push(match[2]);
    }
  }
  return values.every((value) => value.trim() === '' || isLoopbackValue(value));
}
