/**
 * A loopback fake of the Feishu Open Platform, enough for the real Lark SDK: tenant tokens, bot info, sending,
 * replying, patching (cards) and updating (text) messages, image / file uploads, message resources, and the
 * long connection (`POST /callback/ws/endpoint`, then a WebSocket speaking protobuf `pbbp2.Frame`s).
 *
 * Like Feishu it refuses malformed cards and over-long requests (30 KB for cards, 150 KB for text), patches only
 * shared cards, and redelivers events that were not acknowledged when a connection comes back.
 *
 *   const fake = await startFakeFeishu();
 *   fake.userSays({ chatId: 'oc_1', text: 'hello' });
 *   // channels.feishu = { appId: APP.id, appSecret: APP.secret, domain: fake.url, … }
 */
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { type WebSocket, WebSocketServer } from 'ws';
import { checkContent, encodeFrame, Frame, readBody, send, shownText, visibleOf } from './fake-helpers.js';
import { fakeRegistration } from './fake-registration.js';

export const APP = { id: 'cli_a1b2c3d4e5f60718', secret: 'fake-app-secret' };
export const BOT = { openId: 'ou_fakebot0000000000000000000000001', name: 'Nano' };
const REDELIVERY_DELAY_MS = 100;
const REDELIVERY_INTERVAL_MS = 3_000;

export interface BotMessage {
  messageId: string;
  chatId: string;
  msgType: string;
  /** The message `content` as sent (a JSON string). */
  content: string;
  /** What the chat shows: a card's Markdown, a text's text, `[image img_…]` … */
  text: string;
  edits: number;
  replyTo?: string;
  inThread?: boolean;
}

export interface ApiCall {
  method: string;
  path: string;
  query: Record<string, string>;
  body: Record<string, unknown>;
  files: Record<string, { name: string; size: number }>;
}

export interface UserMessageInput {
  chatId: string;
  messageId?: string;
  chatType?: 'p2p' | 'group';
  from?: { openId: string; userId?: string };
  senderType?: 'user' | 'app';
  text?: string;
  /** Other people mentioned: `@_user_N` keys in the text. */
  mentions?: { key: string; openId: string; name: string }[];
  /** Starts the text with an @mention of the bot (`@_user_1`). */
  mentionBot?: boolean;
  image?: Buffer;
  file?: { name: string; content: Buffer };
  post?: Record<string, unknown>;
  threadId?: string;
  rootId?: string;
  parentId?: string;
}

export interface FakeFailure {
  status: number;
  code: number;
  msg: string;
}

type Route = 'token' | 'botInfo' | 'create' | 'reply' | 'patch' | 'update' | 'image' | 'file' | 'resource';

/** `app`: the app this platform knows (the one the registration hands out too); default APP. */
export async function startFakeFeishu(options: { app?: { id: string; secret: string } } = {}) {
  const app = options.app ?? APP;
  let url = '';
  const registration = fakeRegistration(() => url, app);
  const chats = new Map<string, BotMessage[]>();
  const messages = new Map<string, BotMessage>();
  const userMessages = new Map<string, string>();
  const resources = new Map<string, Buffer>();
  const calls: ApiCall[] = [];
  const failures = new Map<Route, FakeFailure[]>();
  const tokens = new Set<string>();
  const sockets = new Set<Socket>();
  /** Events not yet acknowledged, by frame id, in delivery order. */
  const pending = new Map<string, { frame: Buffer; sentAt: number }>();
  const acked: string[] = [];
  let connections = 0;
  let next = 1;
  let down = false;

  const server = http.createServer((req, res) => {
    void handle(req, res).catch((err: unknown) => {
      if (!res.headersSent) send(res, 500, { code: 1, msg: String(err) });
    });
  });
  server.on('connection', (socket) => {
    if (down) {
      socket.destroy();
      return;
    }
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  const wss = new WebSocketServer({ server });
  wss.on('connection', (ws) => {
    connections += 1;
    ws.on('message', (raw: Buffer) => onFrame(ws, raw));
    // Unacknowledged events come again once the client listens (it starts listening just after the handshake).
    setTimeout(() => {
      for (const { frame } of pending.values()) if (ws.readyState === ws.OPEN) ws.send(frame);
    }, REDELIVERY_DELAY_MS).unref();
  });
  // Like Feishu, events that stay unacknowledged are pushed again.
  const retry = setInterval(() => {
    const due = Date.now() - REDELIVERY_INTERVAL_MS;
    for (const entry of pending.values()) {
      if (entry.sentAt > due) continue;
      entry.sentAt = Date.now();
      for (const ws of wss.clients) ws.send(entry.frame);
    }
  }, REDELIVERY_INTERVAL_MS);
  retry.unref();

  function onFrame(ws: WebSocket, raw: Buffer): void {
    const frame = Frame.toObject(Frame.decode(raw)) as {
      method: number;
      service: number;
      headers: { key: string; value: string }[];
    };
    const headers = Object.fromEntries(frame.headers.map((h) => [h.key, h.value]));
    if (frame.method === 1 && headers.message_id) {
      pending.delete(headers.message_id);
      acked.push(headers.message_id);
    } else if (frame.method === 0 && headers.type === 'ping') {
      ws.send(encodeFrame(0, [{ key: 'type', value: 'pong' }], clientConfig()));
    }
  }

  async function handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    if (req.url === '/oauth/v1/app/registration') return registration.handle(req, res);
    const url = new URL(req.url ?? '/', 'http://fake');
    const { body, files } = await readBody(req);
    const path = url.pathname;
    calls.push({ method: req.method ?? '', path, query: Object.fromEntries(url.searchParams), body, files });
    const ok = (data: unknown) => send(res, 200, { code: 0, msg: 'success', data });
    const fail = ({ status, code, msg }: FakeFailure) => send(res, status, { code, msg });
    const failure = (route: Route) => failures.get(route)?.shift();

    if (path === '/callback/ws/endpoint') {
      if (body.AppID !== app.id || body.AppSecret !== app.secret)
        return send(res, 200, { code: 1000040343, msg: 'bad app' });
      const port = (server.address() as AddressInfo).port;
      return send(res, 200, {
        code: 0,
        msg: 'ok',
        data: { URL: `ws://127.0.0.1:${port}/ws?device_id=fake&service_id=1`, ClientConfig: clientConfig() },
      });
    }
    if (path === '/open-apis/auth/v3/tenant_access_token/internal') {
      const forced = failure('token');
      if (forced) return fail(forced);
      if (body.app_id !== app.id || body.app_secret !== app.secret)
        return send(res, 200, { code: 10014, msg: 'app secret invalid' });
      const token = `t-fake-${next++}`;
      tokens.add(token);
      return send(res, 200, { code: 0, msg: 'ok', tenant_access_token: token, expire: 7200 });
    }
    const token = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
    if (!token || !tokens.has(token))
      return send(res, 400, { code: 99991663, msg: 'Invalid access token for authorization' });

    if (path === '/open-apis/bot/v3/info') {
      const forced = failure('botInfo');
      if (forced) return fail(forced);
      return send(res, 200, {
        code: 0,
        msg: 'ok',
        bot: { activate_status: 2, app_name: BOT.name, open_id: BOT.openId },
      });
    }
    if (path === '/open-apis/im/v1/images' && req.method === 'POST') {
      const forced = failure('image');
      if (forced) return fail(forced);
      return ok({ image_key: `img_v3_${next++}` });
    }
    if (path === '/open-apis/im/v1/files' && req.method === 'POST') {
      const forced = failure('file');
      if (forced) return fail(forced);
      return ok({ file_key: `file_v3_${next++}` });
    }
    const resource = /^\/open-apis\/im\/v1\/messages\/([^/]+)\/resources\/([^/]+)$/.exec(path);
    if (resource) {
      const forced = failure('resource');
      if (forced) return fail(forced);
      const content = resources.get(`${resource[1]}/${resource[2]}`);
      if (!content) return send(res, 400, { code: 234003, msg: 'File not in msg.' });
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': content.length });
      res.end(content);
      return;
    }
    if (path === '/open-apis/im/v1/messages' && req.method === 'POST') {
      const forced = failure('create');
      if (forced) return fail(forced);
      return createMessage(res, String(body.receive_id), body);
    }
    const reply = /^\/open-apis\/im\/v1\/messages\/([^/]+)\/reply$/.exec(path);
    if (reply?.[1]) {
      const forced = failure('reply');
      if (forced) return fail(forced);
      const chatId = messages.get(reply[1])?.chatId ?? userMessages.get(reply[1]);
      if (!chatId) return send(res, 400, { code: 230011, msg: 'The message was withdrawn.' });
      return createMessage(res, chatId, body, reply[1]);
    }
    const edit = /^\/open-apis\/im\/v1\/messages\/([^/]+)$/.exec(path);
    if (edit?.[1] && (req.method === 'PATCH' || req.method === 'PUT')) {
      const forced = failure(req.method === 'PATCH' ? 'patch' : 'update');
      if (forced) return fail(forced);
      const message = messages.get(edit[1]);
      if (!message) return send(res, 400, { code: 230001, msg: 'invalid message_id' });
      const msgType = req.method === 'PATCH' ? 'interactive' : String(body.msg_type);
      if (message.msgType !== msgType)
        return send(res, 400, { code: 230001, msg: `cannot update a ${message.msgType}` });
      const content = String(body.content ?? '');
      const problem = checkContent(msgType, content, req.method === 'PATCH');
      if (problem) return fail(problem);
      Object.assign(message, { content, text: shownText(msgType, content), edits: message.edits + 1 });
      return ok(req.method === 'PATCH' ? {} : { message_id: message.messageId });
    }
    send(res, 404, { code: 99991400, msg: `not faked: ${req.method} ${path}` });
  }

  function createMessage(res: http.ServerResponse, chatId: string, body: Record<string, unknown>, replyTo?: string) {
    const msgType = String(body.msg_type);
    const content = String(body.content ?? '');
    const problem = checkContent(msgType, content, false);
    if (problem) return send(res, problem.status, { code: problem.code, msg: problem.msg });
    const message: BotMessage = {
      messageId: `om_bot${next++}`,
      chatId,
      msgType,
      content,
      text: shownText(msgType, content),
      edits: 0,
      ...(replyTo ? { replyTo } : {}),
      ...(body.reply_in_thread ? { inThread: true } : {}),
    };
    chatOf(chatId).push(message);
    messages.set(message.messageId, message);
    send(res, 200, {
      code: 0,
      msg: 'success',
      data: { message_id: message.messageId, chat_id: chatId, msg_type: msgType, body: { content } },
    });
  }

  function chatOf(chatId: string): BotMessage[] {
    let chat = chats.get(chatId);
    if (!chat) {
      chat = [];
      chats.set(chatId, chat);
    }
    return chat;
  }

  function deliver(event: Record<string, unknown>): string {
    const frameId = `frame_${next++}`;
    const headers = [
      { key: 'type', value: 'event' },
      { key: 'message_id', value: frameId },
      { key: 'sum', value: '1' },
      { key: 'seq', value: '0' },
      { key: 'trace_id', value: `trace_${frameId}` },
    ];
    const frame = encodeFrame(1, headers, event);
    pending.set(frameId, { frame, sentAt: Date.now() });
    for (const ws of wss.clients) ws.send(frame);
    return frameId;
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const events = new Map<string, Record<string, unknown>>();

  return {
    url,
    /** The accounts server's app registration (the QR login), on the same origin. */
    registration,
    calls,
    acked,
    get connections() {
      return connections;
    },
    /** Delivers a message from a user over the long connection (queued while no connection is up). */
    userSays(input: UserMessageInput): string {
      const messageId = input.messageId ?? `om_user${next++}`;
      userMessages.set(messageId, input.chatId);
      const mentions = [...(input.mentions ?? [])];
      let text = input.text;
      if (input.mentionBot) {
        mentions.unshift({ key: '@_user_1', openId: BOT.openId, name: BOT.name });
        text = `@_user_1 ${text ?? ''}`;
      }
      let messageType = 'text';
      let content: Record<string, unknown> = { text: text ?? '' };
      if (input.image) {
        messageType = 'image';
        content = { image_key: `img_in_${next++}` };
        resources.set(`${messageId}/${content.image_key}`, input.image);
      } else if (input.file) {
        messageType = 'file';
        content = { file_key: `file_in_${next++}`, file_name: input.file.name };
        resources.set(`${messageId}/${content.file_key}`, input.file.content);
      } else if (input.post) {
        messageType = 'post';
        content = input.post;
      }
      const from = input.from ?? { openId: 'ou_user1', userId: 'user1' };
      const event = {
        schema: '2.0',
        header: {
          event_id: `ev_${next++}`,
          event_type: 'im.message.receive_v1',
          create_time: String(Date.now()),
          token: '',
          app_id: app.id,
          tenant_key: 'tenant',
        },
        event: {
          sender: {
            sender_id: { open_id: from.openId, ...(from.userId ? { user_id: from.userId } : {}) },
            sender_type: input.senderType ?? 'user',
            tenant_key: 'tenant',
          },
          message: {
            message_id: messageId,
            ...(input.rootId ? { root_id: input.rootId } : {}),
            ...(input.parentId ? { parent_id: input.parentId } : {}),
            ...(input.threadId ? { thread_id: input.threadId } : {}),
            create_time: String(Date.now()),
            chat_id: input.chatId,
            chat_type: input.chatType ?? 'p2p',
            message_type: messageType,
            content: JSON.stringify(content),
            ...(mentions.length
              ? {
                  mentions: mentions.map((m) => ({
                    key: m.key,
                    id: { open_id: m.openId },
                    name: m.name,
                    tenant_key: 'tenant',
                  })),
                }
              : {}),
          },
        },
      };
      events.set(messageId, event);
      deliver(event);
      return messageId;
    },
    /** Sends the same event again (Feishu retries events it did not see acknowledged in time). */
    redeliver(messageId: string): void {
      const event = events.get(messageId);
      if (!event) throw new Error(`no event for ${messageId}`);
      deliver(event);
    },
    /** What the bot sent to a chat, edits applied. */
    messagesIn(chatId: string): BotMessage[] {
      return chats.get(chatId) ?? [];
    },
    /** The user-visible text of what the bot sent to a chat. */
    shown(chatId: string): string[] {
      return (chats.get(chatId) ?? []).map((m) => visibleOf(m));
    },
    callsTo(path: string | RegExp, method?: string): ApiCall[] {
      return calls.filter(
        (c) => (typeof path === 'string' ? c.path === path : path.test(c.path)) && (!method || c.method === method),
      );
    },
    failNext(route: Route, ...errors: FakeFailure[]): void {
      failures.set(route, [...(failures.get(route) ?? []), ...errors]);
    },
    /** Invalidates every tenant token issued so far (as after an app secret reset). */
    revokeTokens(): void {
      tokens.clear();
    },
    /** Cuts the long connection and every HTTP connection, and refuses new ones until `restore`. */
    drop(): void {
      down = true;
      for (const ws of wss.clients) ws.terminate();
      for (const socket of sockets) socket.destroy();
    },
    restore(): void {
      down = false;
    },
    async close(): Promise<void> {
      down = true;
      clearInterval(retry);
      for (const ws of wss.clients) ws.terminate();
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

export type FakeFeishu = Awaited<ReturnType<typeof startFakeFeishu>>;

function clientConfig() {
  return { PingInterval: 120, ReconnectCount: -1, ReconnectInterval: 1, ReconnectNonce: 0 };
}
