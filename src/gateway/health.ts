/**
 * The gateway's health endpoint: `GET /health` and nothing else. It binds loopback unless the config names another
 * address explicitly, because it reveals which provider and model are in use. Bound to loopback, it answers only
 * requests whose `Host` is a loopback name, so a web page cannot read it through DNS rebinding.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ChannelHealth } from '../channels/manager.js';
import { hostHeaderAllowed, isLoopbackHost } from '../security/hosts.js';
import { UserError } from '../util/errors.js';
import { type Logger, silentLogger } from '../util/log.js';

export interface HealthReport {
  provider: string;
  model: string;
  /** Channel name → state (`running`, `reconnecting`, `error`…). */
  channels: Record<string, string>;
  /** The same with the last error and the reconnect count, for `nanobot channels status`. */
  channelDetails?: Record<string, ChannelHealth>;
}

export interface HealthServerOptions {
  host: string;
  /** 0 picks a free port. */
  port: number;
  /** The host was set explicitly in the config (or its env override), so a non-loopback bind is intended. */
  allowNonLoopback?: boolean;
  report: () => HealthReport;
  startedAt?: number;
  log?: Logger;
}

export interface HealthServer {
  host: string;
  port: number;
  close(): Promise<void>;
}

export async function startHealthServer(options: HealthServerOptions): Promise<HealthServer> {
  const log = options.log ?? silentLogger;
  const startedAt = options.startedAt ?? Date.now();
  if (!isLoopbackHost(options.host)) {
    if (!options.allowNonLoopback) {
      throw new UserError(
        `gateway.host ${options.host} is not a loopback address.`,
        'Set gateway.host in config.json explicitly to expose the health endpoint beyond this machine.',
      );
    }
    log.warn(`gateway: health endpoint listens on ${options.host}, reachable from other machines`);
  }

  const server = http.createServer((req, res) => {
    if (!hostHeaderAllowed(req.headers.host, { bindHost: options.host })) {
      return send(res, 421, {
        error: `the Host header does not name this server: use http://127.0.0.1:<port>/health (it listens on ${options.host})`,
      });
    }
    const path = (req.url ?? '/').split('?', 1)[0];
    if (path !== '/health') return send(res, 404, { error: 'not found' });
    if (req.method !== 'GET' && req.method !== 'HEAD') return send(res, 405, { error: 'method not allowed' });
    const uptimeS = Math.round((Date.now() - startedAt) / 1000);
    send(res, 200, { status: 'ok', uptimeS, ...options.report() });
  });
  server.requestTimeout = 5_000;
  server.headersTimeout = 5_000;

  await new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'EADDRINUSE') {
        reject(
          new UserError(
            `Port ${options.port} on ${options.host} is already in use.`,
            'Is a gateway already running? Check with `nanobot gateway status`, or pick another port with -p.',
          ),
        );
      } else reject(err);
    });
    server.listen(options.port, options.host, () => resolve());
  });
  const address = server.address() as AddressInfo;
  return {
    host: options.host,
    port: address.port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

function send(res: http.ServerResponse, status: number, body: Record<string, unknown>): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
    'cache-control': 'no-store',
  });
  res.end(text);
}
