/**
 * The gateway's health endpoint: `GET /health`, plus `POST /cron/run` for `nanobot cron run` when a control token is
 * set (the CLI reads it from the gateway's 0600 state file). It binds loopback unless the config names another
 * address explicitly, because it reveals which provider and model are in use. Bound to loopback, it answers only
 * requests whose `Host` is a loopback name, so a web page cannot read it through DNS rebinding.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { z } from 'zod';
import type { ChannelHealth } from '../channels/manager.js';
import { hostHeaderAllowed, isLoopbackHost } from '../security/hosts.js';
import { secretMatches } from '../security/secrets.js';
import { UserError } from '../util/errors.js';
import { type Logger, logFailure, silentLogger } from '../util/log.js';

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
  /** `POST /cron/run {"id"}` with `Authorization: Bearer <token>`: runs a cron job now (`nanobot cron run`). */
  control?: GatewayControl;
}

export interface GatewayControl {
  token: string;
  /** Resolves with the run's outcome; throws a UserError (unknown id, system job…) to answer 409 with its text. */
  runCronJob(id: string): Promise<{ status: string; error?: string }>;
}

export const CRON_RUN_PATH = '/cron/run';
const RunRequest = z.object({ id: z.string().min(1).max(200) });
const MAX_BODY = 4096;

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
    const path = (req.url ?? '/').split('?', 1)[0];
    if (path === CRON_RUN_PATH && options.control) {
      return void handleRun(req, res, options.control, options.host, log).catch((err: unknown) => {
        logFailure(log, 'gateway: cron run request failed')(err);
        if (!res.headersSent) send(res, 500, { error: 'the run could not be started; see the gateway log' });
      });
    }
    // Nothing else takes a body: drained, so an answer sent early is not cut off by an unread one.
    req.resume();
    if (!hostHeaderAllowed(req.headers.host, { bindHost: options.host })) {
      return send(res, 421, {
        error: `the Host header does not name this server: use http://127.0.0.1:<port>/health (it listens on ${options.host})`,
      });
    }
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

async function handleRun(
  req: http.IncomingMessage,
  res: http.ServerResponse,
  control: GatewayControl,
  bindHost: string,
  log: Logger,
): Promise<void> {
  // Read (bounded) before answering anything, so no answer is cut off by an unread body.
  const body = await readBody(req);
  if (!hostHeaderAllowed(req.headers.host, { bindHost })) return send(res, 421, { error: 'wrong Host header' });
  if (req.method !== 'POST') return send(res, 405, { error: 'method not allowed' });
  const auth = req.headers.authorization ?? '';
  const token = auth.startsWith('Bearer ') ? auth.slice('Bearer '.length) : undefined;
  if (!secretMatches(control.token, token)) return send(res, 401, { error: 'unauthorized' });
  if (body === undefined) return send(res, 413, { error: 'request too large' });
  let parsed: z.infer<typeof RunRequest>;
  try {
    parsed = RunRequest.parse(JSON.parse(body));
  } catch {
    return send(res, 400, { error: 'expected {"id": "<cron job id>"}' });
  }
  try {
    const result = await control.runCronJob(parsed.id);
    send(res, 200, { status: result.status, ...(result.error ? { error: result.error } : {}) });
  } catch (err) {
    if (err instanceof UserError)
      return send(res, 409, { error: err.message, ...(err.hint ? { hint: err.hint } : {}) });
    log.error(`gateway: cron run ${parsed.id} failed: ${(err as Error).message}`);
    send(res, 500, { error: 'the run failed; see the gateway log' });
  }
}

/** The body as text, or undefined past MAX_BODY (the rest is read and dropped, so the answer still reaches the client). */
function readBody(req: http.IncomingMessage): Promise<string | undefined> {
  return new Promise((resolve) => {
    let body = '';
    let tooLarge = false;
    req.on('data', (chunk: Buffer) => {
      if (tooLarge) return;
      body += chunk.toString('utf8');
      if (body.length > MAX_BODY) tooLarge = true;
    });
    req.on('end', () => resolve(tooLarge ? undefined : body));
    req.on('error', () => resolve(undefined));
  });
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
