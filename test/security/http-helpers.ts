/**
 * For the HTTP attack tests: a raw HTTP/1.1 client (every header exactly as given, Host included or left out, so
 * the spellings a browser or an attacker sends arrive unchanged) and the built `nanobot serve` / `gateway` started
 * as a user starts them.
 */
import type { ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { spawnCli } from '../cli/cli-helpers.js';

export interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

export interface RawRequest {
  method?: string;
  path?: string;
  /** undefined = `127.0.0.1:<port>`; null = no Host header at all. */
  host?: string | null;
  headers?: Record<string, string>;
  body?: string;
}

/** One request on a fresh connection (Connection: close), read to the end. */
export function rawRequest(port: number, request: RawRequest): Promise<RawResponse> {
  const body = request.body ?? '';
  const lines = [`${request.method ?? 'GET'} ${request.path ?? '/'} HTTP/1.1`];
  const host = request.host === undefined ? `127.0.0.1:${port}` : request.host;
  if (host !== null) lines.push(`Host: ${host}`);
  for (const [name, value] of Object.entries(request.headers ?? {})) lines.push(`${name}: ${value}`);
  if (body || request.method === 'POST') lines.push(`Content-Length: ${Buffer.byteLength(body)}`);
  lines.push('Connection: close', '', body);
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', reject);
    socket.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const split = text.indexOf('\r\n\r\n');
      const [statusLine = '', ...headerLines] = text.slice(0, split).split('\r\n');
      const headers: Record<string, string> = {};
      for (const line of headerLines) {
        const colon = line.indexOf(':');
        headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
      }
      resolve({ status: Number(statusLine.split(' ')[1]), headers, body: text.slice(split + 4) });
    });
    // write, not end: a half-closed client looks gone to the server, which then aborts the turn.
    socket.write(lines.join('\r\n'));
  });
}

export interface Started {
  child: ChildProcess;
  port: number;
  output: () => string;
}

export async function eventually<T>(check: () => T | undefined, ms: number, what: string): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const value = check();
    if (value !== undefined) return value;
    if (Date.now() > end) throw new Error(`${what}: not seen in ${ms} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** `nanobot serve -p 0`; the port comes from its "nanobot API on http://…/v1" line. */
export async function startServe(home: string): Promise<Started> {
  const { child, output } = spawnCli(['serve', '-p', '0'], home);
  const port = await eventually(
    () => {
      if (child.exitCode !== null) throw new Error(`nanobot serve exited: ${output()}`);
      const match = /nanobot API on http:\/\/127\.0\.0\.1:(\d+)\/v1/.exec(output());
      return match ? Number(match[1]) : undefined;
    },
    20_000,
    'nanobot serve listening',
  );
  return { child, port, output };
}

/** `nanobot gateway --port 0`; the port comes from its state file. */
export async function startGateway(home: string): Promise<Started> {
  const { child, output } = spawnCli(['gateway', '--port', '0'], home);
  const port = await eventually(
    () => {
      if (child.exitCode !== null) throw new Error(`nanobot gateway exited: ${output()}`);
      try {
        const state = JSON.parse(readFileSync(join(home, '.nanobot', 'gateway.json'), 'utf8')) as { port?: number };
        return state.port || undefined;
      } catch {
        return undefined;
      }
    },
    20_000,
    'nanobot gateway listening',
  );
  return { child, port, output };
}

/**
 * A loopback server that must never be asked for anything (what a hostile message points a download at): `hits`
 * lists every path it was asked for. Closed by the cleanup handed to `onCleanup`.
 */
export async function tripwire(
  onCleanup: (close: () => Promise<void>) => void,
): Promise<{ url: string; hits: string[] }> {
  const hits: string[] = [];
  const server = http.createServer((req, res) => {
    hits.push(req.url ?? '');
    res.end('internal secret');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  onCleanup(() => new Promise((resolve) => server.close(() => resolve())));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, hits };
}
