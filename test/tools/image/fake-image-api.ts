/**
 * A loopback fake of the image providers' HTTP APIs: every request is recorded (method, path, headers, JSON or raw
 * body) and answered by the route the test set for its path (`api.on('/v1/images/generations', handler)`); a path
 * without a route is a 404. It also serves image files for URL answers (`api.serve('/files/a.png', bytes)`).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mP8/x8AAwMCAO+/p9sAAAAASUVORK5CYII=',
  'base64',
);
export const PNG_B64 = PNG.toString('base64');
export const JPEG = Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0, 0x10, 0x4a, 0x46, 0x49, 0x46, 0, 1]);

export interface RecordedRequest {
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  raw: Buffer;
  /** The JSON body, when it was JSON. */
  json?: Record<string, unknown>;
}

export interface Answer {
  status?: number;
  json?: unknown;
  body?: string | Buffer;
  headers?: Record<string, string>;
}

type Route = (request: RecordedRequest) => Answer | Promise<Answer>;

export async function startFakeImageApi() {
  const requests: RecordedRequest[] = [];
  const routes = new Map<string, Route>();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const raw = Buffer.concat(chunks);
      const path = (req.url ?? '/').split('?')[0] ?? '/';
      const recorded: RecordedRequest = { method: req.method ?? 'GET', path, headers: req.headers, raw };
      if (String(req.headers['content-type'] ?? '').includes('json')) {
        try {
          recorded.json = JSON.parse(raw.toString('utf8'));
        } catch {
          // recorded raw only
        }
      }
      requests.push(recorded);
      const route = routes.get(path);
      void Promise.resolve(route ? route(recorded) : { status: 404, json: { error: { message: 'no route' } } }).then(
        (answer) => {
          const body = answer.json !== undefined ? JSON.stringify(answer.json) : (answer.body ?? '');
          res.writeHead(answer.status ?? 200, {
            ...(answer.json !== undefined ? { 'content-type': 'application/json' } : {}),
            ...answer.headers,
          });
          res.end(body);
        },
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const url = `http://127.0.0.1:${port}`;
  return {
    url,
    port,
    requests,
    on(path: string, route: Route) {
      routes.set(path, route);
    },
    serve(path: string, bytes: Buffer, type = 'image/png') {
      routes.set(path, () => ({ body: bytes, headers: { 'content-type': type } }));
    },
    last(): RecordedRequest {
      const request = requests.at(-1);
      if (!request) throw new Error('no request yet');
      return request;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export type FakeImageApi = Awaited<ReturnType<typeof startFakeImageApi>>;
