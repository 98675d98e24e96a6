/**
 * The bot's messaging endpoint: the HTTP server Bot Framework posts activities to (`host:port` + `path`, usually
 * behind a reverse proxy or tunnel that terminates TLS). It only moves bytes: a POST to the path with a JSON body of
 * bounded size, handed to `handle` with its Authorization header; `handle` decides the status (200, 401, 400, 503).
 * A request without a bearer token is refused before its body is read.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { errorMessage } from '../../util/errors.js';
import type { Logger } from '../../util/log.js';

/** Bot Framework's activities stay far below this (Teams caps a message at 40 KB). */
export const MAX_BODY_BYTES = 256 * 1024;

export interface EndpointOptions {
  host: string;
  port: number;
  path: string;
  handle(body: unknown, authorization: string | undefined): Promise<number>;
  /** A request refused before `handle` (no bearer token); the caller decides how loudly to say so. */
  refused(reason: string): void;
  log: Logger;
}

export interface Endpoint {
  port: number;
  close(): Promise<void>;
}

export async function startEndpoint(options: EndpointOptions): Promise<Endpoint> {
  const server = http.createServer((req, res) => {
    const path = (req.url ?? '/').split('?', 1)[0];
    if (path !== options.path) return reply(res, 404);
    if (req.method !== 'POST') return reply(res, 405);
    const authorization = req.headers.authorization;
    if (!authorization?.trim().toLowerCase().startsWith('bearer ')) {
      options.refused('refused an activity: no bearer token');
      return reply(res, 401);
    }
    const declared = Number(req.headers['content-length'] ?? 0);
    if (declared > MAX_BODY_BYTES) return reply(res, 413);
    readBody(req)
      .then(async (text) => {
        let body: unknown;
        try {
          body = JSON.parse(text);
        } catch {
          return reply(res, 400);
        }
        reply(res, await options.handle(body, authorization));
      })
      .catch((err: unknown) => {
        if (err instanceof BodyTooLarge) return reply(res, 413);
        options.log.debug(`an activity request failed: ${errorMessage(err)}`);
        reply(res, 400);
      });
  });
  server.requestTimeout = 15_000;
  server.headersTimeout = 10_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) => {
      reject(
        err.code === 'EADDRINUSE'
          ? new Error(`port ${options.port} on ${options.host} is in use (channels.msteams.port)`)
          : err,
      );
    });
    server.listen(options.port, options.host, () => resolve());
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

class BodyTooLarge extends Error {}

async function readBody(req: http.IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES) throw new BodyTooLarge();
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

const REASONS: Record<number, string> = {
  200: '',
  400: 'bad request',
  401: 'unauthorized',
  404: 'not found',
  405: 'method not allowed',
  413: 'body too large',
  503: 'unavailable',
};

function reply(res: http.ServerResponse, status: number): void {
  if (res.headersSent) return;
  const body = status === 200 ? '{}' : JSON.stringify({ error: REASONS[status] ?? 'error' });
  res.writeHead(status, { 'content-type': 'application/json', ...(status === 503 ? { 'retry-after': '5' } : {}) });
  res.end(body);
}
