/**
 * A loopback OneBot v11 implementation (what NapCat is to QQ), speaking the real wire protocol: a forward
 * WebSocket server that checks `Authorization: Bearer <token>` (or `?access_token=`), sends a lifecycle event and
 * heartbeat meta events, pushes message and notice events (array or CQ-string form), and answers actions with
 * their `echo`. It also serves files over HTTP on the same origin, as implementations do for their cache.
 *
 * Messages the bot sends are recorded as segments; a string message is read as CQ codes by this file's own small
 * reader (not the channel's), so a test can see whether text ever turned into a code.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type WebSocket, WebSocketServer } from 'ws';

export const SELF = { id: 3_000_000_001, nickname: 'nanobot-qq' };

export interface FakeSegment {
  type: string;
  data: Record<string, unknown>;
}

export interface SentMessage {
  chatId: string;
  messageId: number;
  segments: FakeSegment[];
  /** The message exactly as the action carried it. */
  raw: unknown;
  replyTo?: string;
}

export interface UserMessage {
  /** `private:<qq>` or `group:<number>`. */
  chatId: string;
  userId: number | string;
  messageId?: number;
  nickname?: string;
  /** Text; `@bot` becomes an `at` segment with the bot's QQ number. */
  text?: string;
  segments?: FakeSegment[];
  /** Send the message as a CQ-code string (messagePostFormat: string) instead of segments. */
  asString?: string;
  /** Overrides the event's self_id (a forged or other account's event). */
  selfId?: number;
  extra?: Record<string, unknown>;
}

export interface ActionCall {
  action: string;
  params: Record<string, unknown>;
}

export interface FakeOneBot {
  url: string;
  httpUrl: string;
  token: string;
  sent: SentMessage[];
  actions: ActionCall[];
  /** Actions answered with retcode 1404 (not implemented), like a plainer implementation. */
  unsupported: Set<string>;
  /** Actions never answered (a hung implementation). */
  silent: Set<string>;
  /** Actions answered only after this many milliseconds (answers then arrive out of order). */
  delays: Map<string, number>;
  /** What get_file / get_image answer for a file id, instead of a URL of `serve` (e.g. only a local path). */
  fileAnswers: Map<string, Record<string, unknown>>;
  /** Serves bytes at `<httpUrl>/files/<name>`; returns the URL. */
  serve(name: string, body: Buffer | (() => Buffer)): string;
  downloads: string[];
  userSays(message: UserMessage): number;
  notice(event: Record<string, unknown>): void;
  /** Every event pushed to the bot, raw (for pushing a hand-made frame). */
  push(frame: unknown): void;
  messagesIn(chatId: string): string[];
  connections(): number;
  /** Upgrades seen, with the Authorization they carried. */
  upgrades: { authorization?: string; query: string }[];
  drop(): void;
  restore(): void;
  close(): Promise<void>;
}

export async function startFakeOneBot(options: { token?: string; heartbeatMs?: number } = {}): Promise<FakeOneBot> {
  const token = options.token ?? 'onebot-secret-token';
  const sockets = new Set<WebSocket>();
  const sent: SentMessage[] = [];
  const actions: ActionCall[] = [];
  const unsupported = new Set<string>();
  const files = new Map<string, Buffer | (() => Buffer)>();
  const fileAnswers = new Map<string, Record<string, unknown>>();
  const silent = new Set<string>();
  const delays = new Map<string, number>();
  const downloads: string[] = [];
  const upgrades: FakeOneBot['upgrades'] = [];
  const history = new Map<string, Record<string, unknown>[]>();
  let dropped = false;
  let nextId = 1000;

  const server: Server = createServer((req, res) => {
    const name = decodeURIComponent((req.url ?? '').replace(/^\/files\//, ''));
    const body = files.get(name);
    downloads.push(req.url ?? '');
    if (req.url?.startsWith('/redirect?to=')) {
      res.writeHead(302, { location: decodeURIComponent(req.url.slice('/redirect?to='.length)) }).end();
      return;
    }
    if (!req.url?.startsWith('/files/') || body === undefined) {
      res.writeHead(404).end();
      return;
    }
    const bytes = typeof body === 'function' ? body() : body;
    res.writeHead(200, { 'content-type': 'application/octet-stream' }).end(bytes);
  });
  const wss = new WebSocketServer({ noServer: true });
  server.on('upgrade', (req: IncomingMessage, socket, head) => {
    const query = new URL(req.url ?? '/', 'http://x').searchParams.get('access_token') ?? '';
    upgrades.push({ ...(req.headers.authorization ? { authorization: req.headers.authorization } : {}), query });
    if (dropped) {
      socket.end('HTTP/1.1 503 Service Unavailable\r\n\r\n');
      return;
    }
    if (req.headers.authorization !== `Bearer ${token}` && query !== token) {
      socket.end('HTTP/1.1 401 Unauthorized\r\n\r\n');
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => {
      sockets.add(ws);
      ws.on('close', () => sockets.delete(ws));
      ws.on('message', (raw) => {
        const { action, params } = JSON.parse(String(raw)) as { action: string; params?: Record<string, unknown> };
        actions.push({ action, params: params ?? {} });
        if (silent.has(action)) return;
        const delay = delays.get(action);
        if (delay === undefined) answer(ws, String(raw));
        else setTimeout(() => answer(ws, String(raw)), delay);
      });
      ws.send(JSON.stringify(meta('lifecycle', { sub_type: 'connect' })));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const httpUrl = `http://127.0.0.1:${port}`;
  const heartbeat = setInterval(() => {
    for (const ws of sockets) {
      ws.send(JSON.stringify(meta('heartbeat', { interval: options.heartbeatMs ?? 100, status: { online: true } })));
    }
  }, options.heartbeatMs ?? 100);

  function meta(type: string, extra: Record<string, unknown>) {
    return { post_type: 'meta_event', meta_event_type: type, self_id: SELF.id, time: now(), ...extra };
  }

  function broadcast(frame: unknown): void {
    if (dropped) return;
    for (const ws of sockets) ws.send(JSON.stringify(frame));
  }

  function reply(ws: WebSocket, echo: unknown, data: unknown, failed?: { retcode: number; wording: string }): true {
    const base = failed
      ? { status: 'failed', retcode: failed.retcode, data: null, message: failed.wording, wording: failed.wording }
      : { status: 'ok', retcode: 0, data };
    ws.send(JSON.stringify({ ...base, echo }));
    return true;
  }

  function answer(ws: WebSocket, raw: string): true {
    const frame = JSON.parse(raw) as { action: string; params?: Record<string, unknown>; echo?: unknown };
    const params = frame.params ?? {};
    if (unsupported.has(frame.action)) {
      return reply(ws, frame.echo, null, { retcode: 1404, wording: `${frame.action} is not implemented` });
    }
    switch (frame.action) {
      case 'get_login_info':
        return reply(ws, frame.echo, { user_id: SELF.id, nickname: SELF.nickname });
      case 'send_msg':
      case 'send_private_msg':
      case 'send_group_msg': {
        const kind = frame.action === 'send_msg' ? params.message_type : frame.action.slice(5, -4);
        const chatId = kind === 'group' ? `group:${params.group_id}` : `private:${params.user_id}`;
        const segments = readSent(params.message, params.auto_escape === true);
        if (segments.some((s) => s.type === 'file') && unsupported.has('file-segment')) {
          return reply(ws, frame.echo, null, { retcode: 1200, wording: 'file segments are not supported' });
        }
        const messageId = nextId++;
        const replyTo = segments.find((s) => s.type === 'reply')?.data.id;
        sent.push({
          chatId,
          messageId,
          segments,
          raw: params.message,
          ...(replyTo !== undefined ? { replyTo: String(replyTo) } : {}),
        });
        return reply(ws, frame.echo, { message_id: messageId });
      }
      case 'get_group_member_info':
        return reply(ws, frame.echo, { user_id: params.user_id, nickname: `member${params.user_id}`, card: '' });
      case 'get_friend_msg_history':
      case 'get_group_msg_history': {
        const chatId =
          frame.action === 'get_group_msg_history' ? `group:${params.group_id}` : `private:${params.user_id}`;
        return reply(ws, frame.echo, { messages: (history.get(chatId) ?? []).slice(-Number(params.count ?? 20)) });
      }
      case 'get_file':
      case 'get_image': {
        const name = String(params.file_id ?? params.file ?? '');
        const canned = fileAnswers.get(name);
        if (canned) return reply(ws, frame.echo, canned);
        return files.has(name)
          ? reply(ws, frame.echo, { file: `/var/napcat/cache/${name}`, url: `${httpUrl}/files/${name}` })
          : reply(ws, frame.echo, null, { retcode: 1404, wording: 'no such file' });
      }
      case 'upload_private_file':
      case 'upload_group_file': {
        const chatId = frame.action === 'upload_group_file' ? `group:${params.group_id}` : `private:${params.user_id}`;
        sent.push({
          chatId,
          messageId: nextId++,
          segments: [{ type: 'file', data: { file: params.file, name: params.name, uploaded: true } }],
          raw: params,
        });
        return reply(ws, frame.echo, null);
      }
      default:
        return reply(ws, frame.echo, null, { retcode: 1404, wording: `unknown action ${frame.action}` });
    }
  }

  function userSays(message: UserMessage): number {
    const messageId = message.messageId ?? nextId++;
    const [kind, target] = message.chatId.split(':');
    const segments: FakeSegment[] = message.segments ?? textToSegments(message.text ?? '');
    const event: Record<string, unknown> = {
      post_type: 'message',
      message_type: kind,
      sub_type: kind === 'group' ? 'normal' : 'friend',
      time: now(),
      self_id: message.selfId ?? SELF.id,
      message_id: messageId,
      user_id: typeof message.userId === 'string' ? message.userId : Number(message.userId),
      ...(kind === 'group' ? { group_id: Number(target) } : {}),
      message: message.asString ?? segments,
      raw_message: message.asString ?? segments.map(toCq).join(''),
      message_format: message.asString !== undefined ? 'string' : 'array',
      font: 0,
      sender: { user_id: Number(message.userId), nickname: message.nickname ?? `qq${message.userId}`, card: '' },
      ...message.extra,
    };
    const list = history.get(message.chatId) ?? [];
    list.push(event);
    history.set(message.chatId, list);
    broadcast(event);
    return messageId;
  }

  return {
    url: `ws://127.0.0.1:${port}`,
    httpUrl,
    token,
    sent,
    actions,
    unsupported,
    silent,
    delays,
    fileAnswers,
    downloads,
    upgrades,
    serve(name, body) {
      files.set(name, body);
      return `${httpUrl}/files/${encodeURIComponent(name)}`;
    },
    userSays,
    notice: (event) => broadcast({ post_type: 'notice', time: now(), self_id: SELF.id, ...event }),
    push: broadcast,
    messagesIn: (chatId) =>
      sent
        .filter((m) => m.chatId === chatId)
        .map((m) =>
          m.segments
            .map((s) => (s.type === 'text' ? String(s.data.text ?? '') : s.type === 'reply' ? '' : `[${s.type}]`))
            .join(''),
        ),
    connections: () => sockets.size,
    drop() {
      dropped = true;
      for (const ws of sockets) ws.terminate();
    },
    restore() {
      dropped = false;
    },
    async close() {
      clearInterval(heartbeat);
      for (const ws of sockets) ws.terminate();
      wss.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

const now = () => Math.floor(Date.now() / 1000);

function textToSegments(text: string): FakeSegment[] {
  const out: FakeSegment[] = [];
  const parts = text.split(/(@bot\b)/);
  for (const part of parts) {
    if (part === '@bot') out.push({ type: 'at', data: { qq: String(SELF.id) } });
    else if (part) out.push({ type: 'text', data: { text: part } });
  }
  return out;
}

function toCq(segment: FakeSegment): string {
  if (segment.type === 'text') {
    return String(segment.data.text ?? '')
      .replace(/&/g, '&amp;')
      .replace(/\[/g, '&#91;')
      .replace(/\]/g, '&#93;');
  }
  const params = Object.entries(segment.data).map(([k, v]) => `,${k}=${String(v).replace(/,/g, '&#44;')}`);
  return `[CQ:${segment.type}${params.join('')}]`;
}

/** A sent message as segments: the array form as is, a string as CQ codes (unless auto_escape). */
function readSent(message: unknown, autoEscape: boolean): FakeSegment[] {
  if (Array.isArray(message)) return message as FakeSegment[];
  if (typeof message !== 'string') return [];
  if (autoEscape) return [{ type: 'text', data: { text: message } }];
  const out: FakeSegment[] = [];
  let rest = message;
  for (;;) {
    const start = rest.indexOf('[CQ:');
    const end = start < 0 ? -1 : rest.indexOf(']', start);
    if (start < 0 || end < 0) break;
    if (start > 0) out.push({ type: 'text', data: { text: rest.slice(0, start) } });
    const [type = '', ...pairs] = rest.slice(start + 4, end).split(',');
    out.push({ type, data: Object.fromEntries(pairs.map((p) => p.split('=', 2) as [string, string])) });
    rest = rest.slice(end + 1);
  }
  if (rest) out.push({ type: 'text', data: { text: rest } });
  return out;
}
