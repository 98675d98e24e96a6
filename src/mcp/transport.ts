/**
 * Opens the transport for one configured MCP server: a child process over stdio, Streamable HTTP, or legacy SSE.
 *
 * stdio servers start with a clean environment: the basics a program needs (PATH, HOME, locale, …) plus the
 * server's own `env`, never nanobot's API keys. HTTP servers talk only to the host named in their `url`: that host
 * is trusted because the user wrote it (so `http://127.0.0.1:3001/mcp` works), while a request to any other host
 * goes through the SSRF guard (checked and DNS-pinned, `tools.ssrfWhitelist` applies).
 */
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { McpServerConfig } from '../config/schema.js';
import type { NetworkPolicy } from '../security/network.js';
import { expandHome } from '../util/fs.js';

export type McpTransportType = 'stdio' | 'sse' | 'streamableHttp';

export type FetchLike = (url: string | URL, init?: RequestInit) => Promise<Response>;

/** Parent variables a server process may see: what programs need to run, nothing that carries a secret. */
const INHERITED_ENV = [
  'PATH',
  'HOME',
  'USER',
  'LOGNAME',
  'SHELL',
  'TERM',
  'LANG',
  'LC_ALL',
  'LC_CTYPE',
  'TZ',
  'TMPDIR',
];
const STDERR_TAIL_CHARS = 2000;
const STREAMABLE_HTTP_SPELLINGS = new Set(['streamableHttp', 'http', 'streamable-http', 'streamable_http']);

export type TransportChoice = { ok: true; type: McpTransportType } | { ok: false; error: string };

/** The explicit `type`, else stdio for a `command`, SSE for a url ending in /sse, Streamable HTTP for other urls. */
export function chooseTransport(settings: McpServerConfig): TransportChoice {
  const explicit = settings.type;
  if (explicit === 'stdio' || explicit === 'sse') return { ok: true, type: explicit };
  if (explicit && STREAMABLE_HTTP_SPELLINGS.has(explicit)) return { ok: true, type: 'streamableHttp' };
  if (explicit) return { ok: false, error: `unknown "type" "${explicit}" (use stdio, sse or streamableHttp)` };
  if (settings.command) return { ok: true, type: 'stdio' };
  if (settings.url) {
    const path = settings.url.replace(/[?#].*$/, '').replace(/\/+$/, '');
    return { ok: true, type: path.endsWith('/sse') ? 'sse' : 'streamableHttp' };
  }
  return { ok: false, error: 'no "command" (stdio) or "url" (HTTP) is configured' };
}

export function stdioEnvironment(
  parent: NodeJS.ProcessEnv,
  configured: Record<string, string>,
): Record<string, string> {
  const env: Record<string, string> = {};
  for (const key of INHERITED_ENV) {
    const value = parent[key];
    // A value starting with "()" is an exported shell function (the Shellshock vector); programs never need one.
    if (value !== undefined && !value.startsWith('()')) env[key] = value;
  }
  return { ...env, ...configured };
}

/** fetch for one HTTP server: its configured host as is, any other host only through the SSRF guard. */
export function createMcpFetch(endpoint: URL, network: NetworkPolicy, baseFetch: FetchLike = fetch): FetchLike {
  return async (input, init) => {
    const url = new URL(String(input));
    if (url.host.toLowerCase() === endpoint.host.toLowerCase()) return baseFetch(url, init);
    const { redirect: _ignored, ...rest } = init ?? {};
    // undici's Response is what Node's fetch returns too; only the type declarations differ.
    return (await network.fetch(url, rest as Parameters<NetworkPolicy['fetch']>[1])) as unknown as Response;
  };
}

export interface OpenedTransport {
  transport: Transport;
  /** The last lines the server wrote to stderr (stdio), for error messages. */
  stderrTail(): string;
  /** The server's process id (stdio), once started. */
  pid(): number | undefined;
}

export interface TransportDeps {
  network: NetworkPolicy;
  env: NodeJS.ProcessEnv;
  home: string;
  /** Each stderr line of a stdio server (logged at debug level). */
  onStderr?: (line: string) => void;
  fetch?: FetchLike;
}

export function openTransport(settings: McpServerConfig, type: McpTransportType, deps: TransportDeps): OpenedTransport {
  if (type === 'stdio') return openStdio(settings, deps);
  const url = httpUrl(settings.url);
  const options = {
    requestInit: { headers: settings.headers },
    fetch: createMcpFetch(url, deps.network, deps.fetch),
  };
  if (type === 'sse') {
    return { transport: new SSEClientTransport(url, options), stderrTail: () => '', pid: () => undefined };
  }
  return { transport: new StreamableHTTPClientTransport(url, options), stderrTail: () => '', pid: () => undefined };
}

function openStdio(settings: McpServerConfig, deps: TransportDeps): OpenedTransport {
  if (!settings.command) throw new Error('type "stdio" needs a "command"');
  const transport = new StdioClientTransport({
    command: settings.command,
    args: settings.args,
    env: stdioEnvironment(deps.env, settings.env),
    ...(settings.cwd ? { cwd: expandHome(settings.cwd, deps.home) } : {}),
    stderr: 'pipe',
  });
  let tail = '';
  let partial = '';
  transport.stderr?.on('data', (chunk: Buffer) => {
    const text = chunk.toString('utf8');
    tail = (tail + text).slice(-STDERR_TAIL_CHARS);
    const lines = (partial + text).split(/\r?\n/);
    partial = lines.pop() ?? '';
    for (const line of lines) if (line.trim()) deps.onStderr?.(line);
  });
  return {
    transport,
    stderrTail: () => tail.trim(),
    pid: () => transport.pid ?? undefined,
  };
}

function httpUrl(raw: string | null | undefined): URL {
  if (!raw) throw new Error('an HTTP server needs a "url"');
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new Error(`"url" is not a valid URL: ${raw.slice(0, 200)}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new Error(`"url" must be http:// or https://, not ${url.protocol}`);
  }
  return url;
}

/** A URL fit for logs and status: no credentials, query or fragment (they often carry tokens). */
export function redactUrl(raw: string): string {
  try {
    const url = new URL(raw);
    return `${url.protocol}//${url.host}${url.pathname}`;
  } catch {
    return '(invalid url)';
  }
}
