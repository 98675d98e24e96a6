/** A WebSocket channel on a free loopback port with its own data dir, and a `ws` client that queues frames. */

import { mkdtemp, readFile } from 'node:fs/promises';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import WebSocket from 'ws';
import { MessageBus } from '../../../src/bus/message-bus.js';
import type { WebUiBackend } from '../../../src/channels/websocket/backend.js';
import { WebSocketChannel } from '../../../src/channels/websocket/channel.js';
import type { ServerFrame } from '../../../src/channels/websocket/frames.js';
import { parseWebSocketSettings } from '../../../src/channels/websocket/index.js';
import type { VoiceService } from '../../../src/providers/voice.js';
import type { AuthLimiter } from '../../../src/security/auth-limiter.js';
import type { IssuedTokens } from '../../../src/security/issued-tokens.js';

export interface StartedChannel {
  channel: WebSocketChannel;
  bus: MessageBus;
  port: number;
  token: string;
  dataDir: string;
  url: string;
}

export async function startChannel(
  block: Record<string, unknown> = {},
  options: {
    backend?: WebUiBackend;
    dataDir?: string;
    tokens?: IssuedTokens;
    authLimiter?: AuthLimiter;
    /** A WebUI build to serve instead of ours (an index.html of the test's own). */
    webuiDir?: string;
    /** Speech-to-text for `transcribe_audio`. */
    voice?: VoiceService;
  } = {},
): Promise<StartedChannel> {
  const { backend } = options;
  const dataDir = options.dataDir ?? (await mkdtemp(join(tmpdir(), 'nb-ws-')));
  const settings = parseWebSocketSettings({ port: 0, pingIntervalS: 60, ...block });
  const channel = new WebSocketChannel({
    settings: () => settings,
    dataDir,
    ...(options.tokens ? { tokens: options.tokens } : {}),
    ...(options.authLimiter ? { authLimiter: options.authLimiter } : {}),
    ...(options.webuiDir ? { webuiDir: options.webuiDir } : {}),
    ...(options.voice ? { voice: options.voice } : {}),
  });
  if (backend) channel.bindBackend(backend);
  const bus = new MessageBus();
  await channel.start(bus);
  const port = channel.address?.port ?? 0;
  const token = settings.websocketRequiresToken
    ? settings.token || (await readFile(join(dataDir, 'webui-token'), 'utf8')).trim()
    : '';
  return { channel, bus, port, token, dataDir, url: `http://127.0.0.1:${port}` };
}

export interface TestClient {
  ws: WebSocket;
  frames: ServerFrame[];
  /** The first frame (already received or future) matching `match` that no earlier `next` call took. */
  next(match?: (frame: ServerFrame) => boolean, timeoutMs?: number): Promise<ServerFrame>;
  send(data: unknown): void;
  close(): Promise<void>;
}

export interface ConnectOptions {
  token?: string | null;
  origin?: string;
  host?: string;
  clientId?: string;
  path?: string;
}

export function wsUrl(port: number, options: ConnectOptions): string {
  const params = new URLSearchParams();
  if (options.token) params.set('token', options.token);
  if (options.clientId) params.set('client_id', options.clientId);
  return `ws://127.0.0.1:${port}${options.path ?? '/'}?${params}`;
}

/** Opens a connection; resolves with the client, or rejects with the HTTP status of a refused upgrade. */
export function connect(port: number, options: ConnectOptions = {}): Promise<TestClient> {
  const headers: Record<string, string> = {};
  if (options.origin) headers.origin = options.origin;
  if (options.host) headers.host = options.host;
  const ws = new WebSocket(wsUrl(port, options), { headers });
  const frames: ServerFrame[] = [];
  const taken = new Set<number>();
  const waiters: (() => void)[] = [];
  ws.on('message', (data) => {
    frames.push(JSON.parse(String(data)) as ServerFrame);
    for (const wake of waiters.splice(0)) wake();
  });
  const client: TestClient = {
    ws,
    frames,
    next(match = () => true, timeoutMs = 5_000) {
      return new Promise((resolve, reject) => {
        const deadline = setTimeout(() => {
          reject(new Error(`no matching frame in ${timeoutMs} ms; got ${JSON.stringify(frames)}`));
        }, timeoutMs);
        const look = () => {
          const index = frames.findIndex((frame, i) => !taken.has(i) && match(frame));
          if (index === -1) {
            waiters.push(look);
            return;
          }
          taken.add(index);
          clearTimeout(deadline);
          resolve(frames[index] as ServerFrame);
        };
        look();
      });
    },
    send(data) {
      ws.send(typeof data === 'string' ? data : JSON.stringify(data));
    },
    close() {
      return new Promise((resolve) => {
        if (ws.readyState === WebSocket.CLOSED) return resolve();
        ws.once('close', () => resolve());
        ws.close();
      });
    },
  };
  return new Promise((resolve, reject) => {
    ws.once('open', () => resolve(client));
    ws.once('unexpected-response', (_req, res) => reject(new RefusedError(res.statusCode ?? 0)));
    ws.once('error', (err) => reject(err));
  });
}

export class RefusedError extends Error {
  constructor(readonly status: number) {
    super(`upgrade refused with HTTP ${status}`);
  }
}

export function api(started: StartedChannel, path: string, init: RequestInit & { token?: string | null } = {}) {
  const { token = started.token, headers, ...rest } = init;
  return fetch(`${started.url}${path}`, {
    ...rest,
    headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...(headers as Record<string, string>) },
  });
}

/** An HTTP request with exactly these headers (fetch would not let a test set Host or Origin). */
export function rawRequest(
  port: number,
  path: string,
  headers: Record<string, string>,
  method = 'GET',
): Promise<{ status: number; body: string; headers: Record<string, string | string[] | undefined> }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path, method, headers }, (res) => {
      let body = '';
      res.on('data', (chunk: Buffer) => {
        body += chunk.toString();
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body, headers: res.headers }));
    });
    req.on('error', reject);
    req.end();
  });
}
