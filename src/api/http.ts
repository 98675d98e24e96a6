/** HTTP plumbing of the API server: the error a handler throws, how it is answered, the body reader, listening. */
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { UserError } from '../util/errors.js';
import type { Logger } from '../util/log.js';
import { errorBody } from './completions.js';

/** A refusal with its HTTP status and OpenAI-style error fields. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly type = 'invalid_request_error',
    readonly code: string | null = null,
    readonly retryAfterS = 0,
  ) {
    super(message);
  }
}

/** Answers a handler's failure: an HttpError as itself, anything else as a logged 500; a started reply just ends. */
export function sendFailure(req: IncomingMessage, res: ServerResponse, err: unknown, log: Logger): void {
  const http = err instanceof HttpError ? err : undefined;
  if (!http) log.error(`api: ${req.method} ${req.url}: ${(err as Error).stack ?? String(err)}`);
  if (res.headersSent) {
    res.end();
    return;
  }
  const status = http?.status ?? 500;
  if (http?.retryAfterS) res.setHeader('retry-after', String(http.retryAfterS));
  sendJson(res, status, errorBody(http?.message ?? 'internal error', http?.type ?? 'server_error', http?.code));
}

export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
  });
  res.end(text);
}

export async function readBody(req: IncomingMessage, maxBytes: number): Promise<string> {
  const declared = Number(req.headers['content-length'] ?? 0);
  if (declared > maxBytes)
    throw new HttpError(413, `the request body is over ${maxBytes} bytes`, 'invalid_request_error');
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > maxBytes) throw new HttpError(413, `the request body is over ${maxBytes} bytes`);
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** Listens on host:port; a taken port is a UserError saying how to pick another. Resolves to the server's URL. */
export async function listen(server: Server, host: string, port: number): Promise<string> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) => {
      reject(
        err.code === 'EADDRINUSE'
          ? new UserError(
              `port ${port} on ${host} is in use`,
              'Stop the other process or pick a port: nanobot serve -p <port>',
            )
          : err,
      );
    });
    server.listen(port, host, resolve);
  });
  const address = server.address() as AddressInfo;
  const shown = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return `http://${shown}:${address.port}`;
}

/** Stops accepting and drops open connections (a streaming client would otherwise hold close() forever). */
export function closeServer(server: Server): Promise<void> {
  return new Promise<void>((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}
