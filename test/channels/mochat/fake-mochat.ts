/**
 * A loopback MoChat: a real Socket.IO server (`socket.io`, msgpack packets unless `json: true`) on 127.0.0.1 that
 * checks the claw token in the handshake's `auth`, answers `com.claw.im.subscribeSessions` (with each session's
 * events after the given cursor) and `com.claw.im.subscribePanels`, and pushes `claw.session.events` /
 * `claw.panel.events` to subscribers and `notify:chat.inbox.append` for sessions a socket has not subscribed; and the
 * HTTP endpoints upstream calls (`X-Claw-Token`, `{code, data}` answers): sessions/list, sessions/send,
 * sessions/watch (a long-poll from a cursor), groups/get, groups/panels/send, groups/panels/messages.
 * The agent's own messages become events of their session or panel too, as on MoChat.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type Socket, Server as SocketServer } from 'socket.io';
import * as msgpackParser from 'socket.io-msgpack-parser';

export const CLAW_TOKEN = 'claw-token-0123456789abcdef';
export const AGENT_ID = 'agent_bot_1';
export const GROUP_ID = 'group_main';

interface FakeEvent {
  seq: number;
  type: 'message.add';
  timestamp: string;
  payload: Record<string, unknown>;
}

interface FakeSession {
  sessionId: string;
  converseId: string;
  events: FakeEvent[];
}

interface FakePanel {
  panelId: string;
  messages: { messageId: string; author: string; content: unknown; createdAt: string; meta?: unknown }[];
  events: FakeEvent[];
}

export interface UserMessage {
  /** A session id (`session_…`) or a panel id. */
  chatId: string;
  author: string;
  text: unknown;
  id?: string;
  nickname?: string;
  meta?: Record<string, unknown>;
}

export interface SentMochat {
  path: string;
  body: Record<string, unknown>;
}

export interface FakeMochatOptions {
  /** JSON Socket.IO packets instead of msgpack. */
  json?: boolean;
  /** Refuse every socket connection (the channel falls back to HTTP polling). */
  noSocket?: boolean;
  panels?: string[];
}

export interface FakeMochat {
  url: string;
  settings: Record<string, unknown>;
  userSays(message: UserMessage): string;
  /** The agent's messages in a chat, in order. */
  messagesIn(chatId: string): string[];
  sent: SentMochat[];
  /** Every HTTP call and socket event the channel made, in order: `POST /api/...` or `emit com.claw...`. */
  calls: string[];
  /** The cursors of each subscribeSessions call. */
  subscribes: Record<string, unknown>[];
  socketConnections(): number;
  /** A careless server: subscribeSessions answers with each session's whole history, whatever the cursor. */
  replayAll: boolean;
  /** Emits any event to every connected socket (hostile or malformed pushes). */
  push(event: string, payload: unknown): void;
  drop(): void;
  restore(): void;
  close(): Promise<void>;
}

export async function startFakeMochat(options: FakeMochatOptions = {}): Promise<FakeMochat> {
  const sessions = new Map<string, FakeSession>();
  const panels = new Map<string, FakePanel>();
  const sent: SentMochat[] = [];
  const calls: string[] = [];
  const subscribes: Record<string, unknown>[] = [];
  const watchers = new Set<() => void>();
  const subscribed = new Map<Socket, { sessions: Set<string>; panels: Set<string> }>();
  let seq = 0;
  let nextId = 1;
  let dropped = false;
  let connections = 0;

  const panel = (panelId: string): FakePanel => {
    let found = panels.get(panelId);
    if (!found) {
      found = { panelId, messages: [], events: [] };
      panels.set(panelId, found);
    }
    return found;
  };
  for (const id of options.panels ?? []) panel(id);
  const session = (sessionId: string): FakeSession => {
    let found = sessions.get(sessionId);
    if (!found) {
      found = { sessionId, converseId: `conv_${sessionId}`, events: [] };
      sessions.set(sessionId, found);
    }
    return found;
  };
  const cursorOf = (s: FakeSession) => s.events.at(-1)?.seq ?? 0;

  function addMessage(chatId: string, author: string, content: unknown, extra: Partial<UserMessage> = {}): string {
    const messageId = extra.id ?? `msg_${nextId++}`;
    const timestamp = new Date().toISOString();
    const payload: Record<string, unknown> = {
      messageId,
      author,
      content,
      meta: extra.meta ?? {},
      ...(extra.nickname ? { authorInfo: { nickname: extra.nickname } } : {}),
    };
    const event: FakeEvent = { seq: ++seq, type: 'message.add', timestamp, payload };
    if (chatId.startsWith('session_')) {
      const s = session(chatId);
      Object.assign(payload, { converseId: s.converseId, groupId: '' });
      s.events.push(event);
      if (dropped) return messageId;
      for (const [socket, subs] of subscribed) {
        if (subs.sessions.has(chatId)) {
          socket.emit('claw.session.events', { sessionId: chatId, cursor: event.seq, events: [event] });
        } else if (author !== AGENT_ID) {
          socket.emit('notify:chat.inbox.append', {
            _id: `inbox_${messageId}`,
            type: 'message',
            createdAt: timestamp,
            payload: {
              converseId: s.converseId,
              messageId,
              messageAuthor: author,
              messagePlainContent: typeof content === 'string' ? content : JSON.stringify(content),
            },
          });
        }
      }
      for (const wake of watchers) wake();
    } else {
      const p = panel(chatId);
      Object.assign(payload, { converseId: chatId, groupId: GROUP_ID });
      p.events.push(event);
      p.messages.push({ messageId, author, content, createdAt: timestamp, meta: payload.meta });
      if (dropped) return messageId;
      for (const [socket, subs] of subscribed) {
        if (subs.panels.has(chatId) || subs.panels.has('*')) {
          socket.emit('claw.panel.events', { sessionId: chatId, panelId: chatId, events: [event] });
        }
      }
    }
    return messageId;
  }

  async function readBody(req: IncomingMessage): Promise<Record<string, unknown>> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    try {
      return JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as Record<string, unknown>;
    } catch {
      return {};
    }
  }

  const ok = (res: ServerResponse, data: unknown) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ code: 200, data }));
  };

  async function watch(body: Record<string, unknown>, res: ServerResponse, req: IncomingMessage): Promise<void> {
    const s = session(String(body.sessionId));
    const cursor = Number(body.cursor ?? 0);
    const limit = Number(body.limit ?? 100);
    const answer = () => {
      const events = s.events.filter((e) => e.seq > cursor).slice(0, limit);
      ok(res, { sessionId: s.sessionId, cursor: events.at(-1)?.seq ?? Math.max(cursor, cursorOf(s)), events });
    };
    if (s.events.some((e) => e.seq > cursor)) return answer();
    await new Promise<void>((resolve) => {
      const timer = setTimeout(done, Math.min(Number(body.timeoutMs ?? 1000), 5000));
      function done() {
        clearTimeout(timer);
        watchers.delete(wake);
        resolve();
      }
      const wake = () => {
        if (s.events.some((e) => e.seq > cursor) || dropped) done();
      };
      watchers.add(wake);
      req.on('close', done);
    });
    if (dropped) {
      res.writeHead(503);
      res.end('down');
      return;
    }
    if (!res.writableEnded) answer();
  }

  const http: Server = createServer((req, res) => {
    void (async () => {
      const body = await readBody(req);
      calls.push(`${req.method} ${req.url}`);
      if (dropped) {
        res.writeHead(503);
        res.end('down');
        return;
      }
      if (req.headers['x-claw-token'] !== CLAW_TOKEN) {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ code: 401, message: 'invalid claw token' }));
        return;
      }
      switch (req.url) {
        case '/api/claw/sessions/list':
          return ok(res, {
            sessions: [...sessions.values()].map((s) => ({ sessionId: s.sessionId, converseId: s.converseId })),
          });
        case '/api/claw/groups/get':
          return ok(res, {
            _id: GROUP_ID,
            panels: [...panels.keys()].map((id) => ({ id, type: 0, name: id })),
          });
        case '/api/claw/sessions/send':
        case '/api/claw/groups/panels/send': {
          const chatId = String(body.sessionId ?? body.panelId ?? '');
          if (!chatId || typeof body.content !== 'string') {
            return ok(res, undefined);
          }
          sent.push({ path: req.url, body });
          const messageId = addMessage(chatId, AGENT_ID, body.content);
          return ok(res, { messageId });
        }
        case '/api/claw/sessions/watch':
          return watch(body, res, req);
        case '/api/claw/groups/panels/messages': {
          const p = panel(String(body.panelId));
          const limit = Number(body.limit ?? 100);
          return ok(res, { groupId: GROUP_ID, messages: [...p.messages].reverse().slice(0, limit) });
        }
        default:
          res.writeHead(404);
          res.end('not found');
      }
    })();
  });

  const io = new SocketServer(http, {
    transports: ['websocket'],
    ...(options.json ? {} : { parser: msgpackParser }),
  });
  io.use((socket, next) => {
    calls.push('socket connect');
    if (dropped || options.noSocket) return next(new Error('unavailable'));
    if ((socket.handshake.auth as { token?: unknown }).token !== CLAW_TOKEN) return next(new Error('invalid token'));
    next();
  });
  io.on('connection', (socket) => {
    connections += 1;
    const subs = { sessions: new Set<string>(), panels: new Set<string>() };
    subscribed.set(socket, subs);
    socket.on('disconnect', () => subscribed.delete(socket));
    socket.on('com.claw.im.subscribeSessions', (payload: Record<string, unknown>, ack: (answer: unknown) => void) => {
      calls.push('emit com.claw.im.subscribeSessions');
      subscribes.push(payload);
      const ids = Array.isArray(payload.sessionIds) ? payload.sessionIds.map(String) : [];
      const cursors = (payload.cursors ?? {}) as Record<string, number>;
      const limit = Number(payload.limit ?? 100);
      for (const id of ids) subs.sessions.add(id);
      ack({
        result: true,
        data: {
          sessions: ids.map((id) => {
            const s = session(id);
            const after = fake.replayAll ? 0 : (cursors[id] ?? 0);
            const events = s.events.filter((e) => e.seq > after).slice(0, limit);
            return { sessionId: id, cursor: events.at(-1)?.seq ?? cursorOf(s), events };
          }),
        },
      });
    });
    socket.on('com.claw.im.subscribePanels', (payload: Record<string, unknown>, ack: (answer: unknown) => void) => {
      calls.push('emit com.claw.im.subscribePanels');
      const ids = Array.isArray(payload.panelIds) ? payload.panelIds.map(String) : [];
      for (const id of ids) subs.panels.add(id);
      ack({ result: true });
    });
  });

  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;

  const fake: FakeMochat = {
    url,
    replayAll: false,
    settings: {
      baseUrl: url,
      clawToken: CLAW_TOKEN,
      agentUserId: AGENT_ID,
      sessions: ['*'],
      panels: ['*'],
      socketDisableMsgpack: options.json === true,
      retryDelayMs: 50,
      refreshIntervalMs: 1000,
      watchTimeoutMs: 1000,
    },
    userSays: (message) => addMessage(message.chatId, message.author, message.text, message),
    messagesIn: (chatId) =>
      sent.filter((m) => (m.body.sessionId ?? m.body.panelId) === chatId).map((m) => String(m.body.content)),
    sent,
    calls,
    subscribes,
    socketConnections: () => connections,
    push: (event, payload) => {
      io.emit(event, payload);
    },
    drop() {
      dropped = true;
      io.disconnectSockets(true);
      for (const wake of watchers) wake();
    },
    restore() {
      dropped = false;
    },
    async close() {
      dropped = true;
      for (const wake of watchers) wake();
      await new Promise<void>((resolve) => io.close(() => resolve()));
      http.closeAllConnections();
    },
  };
  return fake;
}
