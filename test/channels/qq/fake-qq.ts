/**
 * A loopback QQ bot platform speaking the real API v2 wire protocol: the app access token endpoint (appId +
 * clientSecret), GET /gateway, the WebSocket gateway (op 10 Hello, op 2 Identify with `QQBot <token>` and intents,
 * op 0 READY / dispatches with `s`, op 1 → op 11 heartbeats, op 6 Resume replaying the session's events after the
 * given seq, then RESUMED; op 9 for a session it does not know), and the passive-reply message and file endpoints,
 * which refuse a repeated (msg_id, msg_seq) as QQ does. Attachments are served over HTTP from the same origin.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type WebSocket, WebSocketServer } from 'ws';

export const APP_ID = '102030405';
export const SECRET = 'qq-app-secret-0123456789abcdef';

export interface SentQq {
  /** The user openid (C2C) or `group:<group_openid>`. */
  chatId: string;
  body: {
    msg_type?: number;
    content?: string;
    markdown?: { content: string };
    media?: { file_info: string };
    msg_id?: string;
    msg_seq?: number;
  };
}

export interface QqUserMessage {
  /** The user openid (C2C) or `group:<group_openid>`. */
  chatId: string;
  userOpenid: string;
  id?: string;
  text?: string;
  attachments?: Record<string, unknown>[];
}

interface Frame {
  op: number;
  d?: unknown;
  s?: number;
  t?: string;
}

interface FakeSession {
  id: string;
  seq: number;
  events: { s: number; t: string; d: unknown }[];
}

export interface FakeQq {
  url: string;
  settings: Record<string, unknown>;
  sent: SentQq[];
  uploads: { chatId: string; body: Record<string, unknown> }[];
  /** Every frame the bot sent on the gateway, in order. */
  frames: Frame[];
  tokensIssued(): number;
  /** The access tokens handed out (they must never reach a log). */
  tokens(): string[];
  /** getAppAccessToken calls, good or bad. */
  tokenRequests(): number;
  connections(): number;
  /** Messages refused as duplicates (a repeated msg_id + msg_seq). */
  duplicates: SentQq[];
  userSays(message: QqUserMessage): string;
  /** Any dispatch, as QQ would send it (forged or odd events in attack tests). */
  dispatch(t: string, d: unknown): void;
  /** A raw frame on the open gateway connections. */
  raw(text: string): void;
  messagesIn(chatId: string): string[];
  serveFile(name: string, data: Buffer | (() => Buffer), contentType?: string): string;
  fileRequests: string[];
  /** false: heartbeats go unanswered (a zombie connection). */
  ackHeartbeats: boolean;
  /** A careless platform: on Resume replay the whole session, not only what came after the bot's seq. */
  replayAll: boolean;
  /** Forget every session: the next Resume gets op 9. */
  forgetSessions(): void;
  drop(): void;
  restore(): void;
  close(): Promise<void>;
}

export interface FakeQqOptions {
  heartbeatMs?: number;
  expiresIn?: number;
  /** A dispatch sent right after Hello, before the bot identified (no session is its). */
  beforeReady?: { t: string; d: unknown };
}

export async function startFakeQq(options: FakeQqOptions = {}): Promise<FakeQq> {
  const sockets = new Set<WebSocket>();
  const sessions = new Map<string, FakeSession>();
  const tokens = new Set<string>();
  const sent: SentQq[] = [];
  const duplicates: SentQq[] = [];
  const uploads: FakeQq['uploads'] = [];
  const frames: Frame[] = [];
  const files = new Map<string, { data: Buffer | (() => Buffer); type: string }>();
  const fileRequests: string[] = [];
  const used = new Set<string>();
  let current: FakeSession | undefined;
  let live: WebSocket | undefined;
  let dropped = false;
  let issued = 0;
  let tokenRequests = 0;
  let connections = 0;
  let nextId = 1;

  const authorized = (req: IncomingMessage) => {
    const match = /^QQBot (.+)$/.exec(req.headers.authorization ?? '');
    return match?.[1] !== undefined && tokens.has(match[1]);
  };

  const server: Server = createServer((req, res) => {
    void handle(req, res).catch(() => json(res, 500, { message: 'fake failed' }));
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    const body = req.method === 'POST' ? await readBody(req) : {};
    if (path === '/redirect') {
      const to = new URL(req.url ?? '/', 'http://x').searchParams.get('to') ?? '/';
      res.writeHead(302, { location: to }).end();
      return;
    }
    if (path.startsWith('/files/')) {
      fileRequests.push(path);
      const file = files.get(decodeURIComponent(path.slice('/files/'.length)));
      if (!file) return json(res, 404, {});
      const data = typeof file.data === 'function' ? file.data() : file.data;
      res.writeHead(200, { 'content-type': file.type, 'content-length': data.length }).end(data);
      return;
    }
    if (dropped) return json(res, 503, { message: 'network down' });
    if (req.method === 'POST' && path === '/app/getAppAccessToken') {
      tokenRequests += 1;
      if (body.appId !== APP_ID || body.clientSecret !== SECRET)
        return json(res, 401, { code: 100016, message: 'invalid appid or secret' });
      const token = `tok-${++issued}-${Math.random().toString(36).slice(2)}`;
      tokens.add(token);
      return json(res, 200, { access_token: token, expires_in: String(options.expiresIn ?? 7200) });
    }
    if (!authorized(req)) return json(res, 401, { code: 11244, message: 'token not exist or expire' });
    if (req.method === 'GET' && path === '/gateway') {
      const { port } = server.address() as AddressInfo;
      return json(res, 200, { url: `ws://127.0.0.1:${port}/websocket` });
    }
    const route = /^\/v2\/(users|groups)\/([^/]+)\/(messages|files)$/.exec(path);
    if (req.method === 'POST' && route?.[1] && route[2] && route[3]) {
      const openid = decodeURIComponent(route[2]);
      const chatId = route[1] === 'groups' ? `group:${openid}` : openid;
      if (route[3] === 'files') {
        uploads.push({ chatId, body });
        return json(res, 200, { file_uuid: 'u', file_info: `file-info-${uploads.length}`, ttl: 3600 });
      }
      const message: SentQq = { chatId, body: body as SentQq['body'] };
      if (typeof body.msg_id === 'string') {
        const key = `${body.msg_id}/${String(body.msg_seq)}`;
        if (used.has(key)) {
          duplicates.push(message);
          return json(res, 400, { code: 40054005, message: 'msg_seq duplicated' });
        }
        used.add(key);
      }
      sent.push(message);
      return json(res, 200, { id: `sent-${sent.length}`, timestamp: new Date().toISOString() });
    }
    json(res, 404, { message: 'no such endpoint' });
  }

  const wss = new WebSocketServer({ noServer: true });
  server.on('upgrade', (req, socket, head) => {
    if (dropped || !req.url?.startsWith('/websocket')) {
      socket.destroy();
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => {
      connections += 1;
      sockets.add(ws);
      ws.on('close', () => {
        sockets.delete(ws);
        if (live === ws) live = undefined;
      });
      ws.on('message', (raw) => onFrame(ws, JSON.parse(String(raw)) as Frame));
      send(ws, { op: 10, d: { heartbeat_interval: options.heartbeatMs ?? 30_000 } });
      if (options.beforeReady) send(ws, { op: 0, s: 1, ...options.beforeReady });
    });
  });

  function onFrame(ws: WebSocket, frame: Frame): void {
    frames.push(frame);
    const d = (frame.d ?? {}) as Record<string, unknown>;
    const tokenOk = typeof d.token === 'string' && tokens.has(d.token.replace(/^QQBot /, ''));
    if (frame.op === 1) {
      if (fake.ackHeartbeats) send(ws, { op: 11 });
      return;
    }
    if (frame.op === 2) {
      if (!tokenOk) return void ws.close(4004, 'invalid token');
      if (typeof d.intents !== 'number' || (d.intents & (1 << 25)) === 0) return void ws.close(4014, 'intents');
      const session: FakeSession = { id: `session-${sessions.size + 1}`, seq: 0, events: [] };
      sessions.set(session.id, session);
      current = session;
      live = ws;
      session.seq += 1;
      send(ws, {
        op: 0,
        s: session.seq,
        t: 'READY',
        d: {
          version: 1,
          session_id: session.id,
          user: { id: 'bot-1', username: 'nanobot-test', bot: true },
          shard: [0, 1],
        },
      });
      return;
    }
    if (frame.op === 6) {
      const session = typeof d.session_id === 'string' ? sessions.get(d.session_id) : undefined;
      if (!tokenOk || !session) {
        send(ws, { op: 9, d: false });
        return;
      }
      current = session;
      live = ws;
      const after = fake.replayAll ? 0 : typeof d.seq === 'number' ? d.seq : 0;
      for (const event of session.events.filter((e) => e.s > after)) send(ws, { op: 0, ...event });
      session.seq += 1;
      send(ws, { op: 0, s: session.seq, t: 'RESUMED', d: '' });
    }
  }

  function dispatch(t: string, d: unknown): void {
    if (!current) throw new Error('no gateway session yet');
    current.seq += 1;
    const event = { s: current.seq, t, d };
    current.events.push(event);
    if (live && !dropped) send(live, { op: 0, ...event });
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const url = `http://127.0.0.1:${port}`;
  const fake: FakeQq = {
    replayAll: false,
    ackHeartbeats: true,
    url,
    settings: { appId: APP_ID, secret: SECRET, apiBase: url, tokenUrl: `${url}/app/getAppAccessToken` },
    sent,
    uploads,
    frames,
    duplicates,
    fileRequests,
    tokensIssued: () => issued,
    tokens: () => [...tokens],
    tokenRequests: () => tokenRequests,
    connections: () => connections,
    userSays(message) {
      const id = message.id ?? `msg-${nextId++}`;
      const common = {
        id,
        content: message.text ?? '',
        timestamp: new Date().toISOString(),
        ...(message.attachments ? { attachments: message.attachments } : {}),
      };
      if (message.chatId.startsWith('group:')) {
        dispatch('GROUP_AT_MESSAGE_CREATE', {
          ...common,
          // QQ strips the @bot and leaves the space after it.
          content: ` ${message.text ?? ''}`,
          group_openid: message.chatId.slice('group:'.length),
          author: { member_openid: message.userOpenid },
        });
      } else {
        dispatch('C2C_MESSAGE_CREATE', { ...common, author: { user_openid: message.userOpenid } });
      }
      return id;
    },
    dispatch,
    raw(text) {
      for (const ws of sockets) ws.send(text);
    },
    messagesIn: (chatId) =>
      sent.filter((m) => m.chatId === chatId).map((m) => m.body.markdown?.content ?? m.body.content ?? ''),
    serveFile(name, data, contentType = 'application/octet-stream') {
      files.set(name, { data, type: contentType });
      return `${url}/files/${encodeURIComponent(name)}`;
    },
    forgetSessions: () => sessions.clear(),
    drop() {
      dropped = true;
      for (const ws of sockets) ws.terminate();
    },
    restore() {
      dropped = false;
    },
    async close() {
      for (const ws of sockets) ws.terminate();
      wss.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  return fake;
}

function send(ws: WebSocket, frame: Frame): void {
  if (ws.readyState === ws.OPEN) ws.send(JSON.stringify(frame));
}

function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}

async function readBody(req: IncomingMessage): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString('utf8');
  return text ? (JSON.parse(text) as Record<string, unknown>) : {};
}
