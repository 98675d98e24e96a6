/**
 * A loopback DingTalk speaking the real wire protocols an internal app's robot uses:
 * - POST /v1.0/oauth2/accessToken (appKey + appSecret → accessToken, expireIn); robot calls check the
 *   x-acs-dingtalk-access-token header and answer 401 InvalidAuthentication for a token it does not know (expired);
 * - Stream Mode: POST /v1.0/gateway/connections/open (clientId, clientSecret, subscriptions → endpoint + ticket), then
 *   the WebSocket at the endpoint with `?ticket=` (each ticket opens one connection): SYSTEM `ping` frames the client
 *   must answer, SYSTEM `disconnect` before the server closes, CALLBACK frames on the robot topic
 *   (/v1.0/im/bot/messages/get) whose `data` is the robot message JSON; a frame not ACKed (a response with its
 *   messageId) is sent again on the next connection, as DingTalk retries unanswered pushes;
 * - the robot API: /v1.0/robot/oToMessages/batchSend, /v1.0/robot/groupMessages/send (msgKey + msgParam as a JSON
 *   string), /v1.0/robot/messageFiles/download (downloadCode → downloadUrl);
 * - the oapi host's /media/upload?access_token=…&type=… (multipart `media` → media_id; errcode 40014 for a bad token).
 * Files behind download URLs are served from the same origin.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type WebSocket, WebSocketServer } from 'ws';

export const CLIENT_ID = 'dingtestrobot0123';
export const CLIENT_SECRET = 'dingtalk-client-secret-0123456789abcdef';
export const ROBOT_TOPIC = '/v1.0/im/bot/messages/get';

export interface SentDingtalk {
  /** The user id (batchSend) or `group:<openConversationId>`. */
  chatId: string;
  msgKey: string;
  param: Record<string, unknown>;
  robotCode: unknown;
}

export interface DingtalkUserMessage {
  /** A user id (one-to-one chat) or `group:<openConversationId>`. */
  chatId: string;
  /** The sender's staff id. */
  staffId: string;
  id?: string;
  text?: string;
  msgtype?: string;
  content?: Record<string, unknown>;
  senderNick?: string;
  /** Groups: the bot was @mentioned (default true: DingTalk pushes only those). */
  isInAtList?: boolean;
  extra?: Record<string, unknown>;
}

export interface ClientFrame {
  code?: number;
  headers?: Record<string, string>;
  message?: string;
  data?: string;
}

interface Pending {
  frameId: string;
  frame: string;
  deliveries: number;
}

export interface FakeDingtalk {
  url: string;
  settings: Record<string, unknown>;
  sent: SentDingtalk[];
  uploads: { type: string; name: string; mimeType: string; data: Buffer }[];
  /** Every frame the bot sent on the Stream connections, in order. */
  frames: ClientFrame[];
  registrations: Record<string, unknown>[];
  /** Robot API calls refused for a token the fake does not know. */
  refusedTokens(): number;
  tokens(): string[];
  tokenRequests(): number;
  connections(): number;
  /** How many times each robot message (by msgId) was pushed. */
  deliveries(msgId: string): number;
  /** Robot messages pushed and not ACKed yet. */
  unacked(): string[];
  userSays(message: DingtalkUserMessage): string;
  /** A CALLBACK frame on the robot topic with this data (any JSON, or a string as is). */
  push(data: unknown, topic?: string): string;
  /** A raw text frame on the open connections. */
  raw(text: string): void;
  /** Sends a SYSTEM ping; resolves with the client's answer. */
  ping(): Promise<ClientFrame>;
  /** SYSTEM disconnect, then closes the connection after `graceMs` (DingTalk gives the client a moment). */
  askDisconnect(graceMs?: number): void;
  /** Forgets every token issued: the next robot call is refused until a new one is fetched. */
  expireTokens(): void;
  /** false: pushed frames are recorded but not sent (a connection that lost them). */
  delivering: boolean;
  /** The endpoint connections/open names (default: this fake's own WebSocket). */
  endpoint?: string;
  /** false: ACKs are lost on the way (so DingTalk sends those frames again on the next connection). */
  takingAcks: boolean;
  messagesIn(chatId: string): string[];
  serveFile(name: string, data: Buffer, contentType?: string): void;
  /** A downloadCode the robot API turns into this URL (any URL, for attacks). */
  downloadCode(code: string, url: string): void;
  fileRequests: string[];
  drop(): void;
  restore(): void;
  close(): Promise<void>;
}

export interface FakeDingtalkOptions {
  expireIn?: number;
}

export async function startFakeDingtalk(options: FakeDingtalkOptions = {}): Promise<FakeDingtalk> {
  const sockets = new Set<WebSocket>();
  const tokens = new Set<string>();
  const issuedTokens: string[] = [];
  const tickets = new Set<string>();
  const sent: SentDingtalk[] = [];
  const uploads: FakeDingtalk['uploads'] = [];
  const frames: ClientFrame[] = [];
  const registrations: Record<string, unknown>[] = [];
  const files = new Map<string, { data: Buffer; type: string }>();
  const codes = new Map<string, string>();
  const fileRequests: string[] = [];
  const pending = new Map<string, Pending>();
  const deliveries = new Map<string, number>();
  const pings = new Map<string, (frame: ClientFrame) => void>();
  let dropped = false;
  let refused = 0;
  let tokenRequests = 0;
  let connections = 0;
  let nextId = 1;

  const server: Server = createServer((req, res) => {
    void handle(req, res).catch((err: unknown) => json(res, 500, { code: 'FakeFailed', message: String(err) }));
  });

  const tokenOk = (req: IncomingMessage) => tokens.has(String(req.headers['x-acs-dingtalk-access-token'] ?? ''));

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://x');
    const path = url.pathname;
    if (path === '/redirect') {
      res.writeHead(302, { location: url.searchParams.get('to') ?? '/' }).end();
      return;
    }
    if (path.startsWith('/files/')) {
      fileRequests.push(path);
      const file = files.get(decodeURIComponent(path.slice('/files/'.length)));
      if (!file) return json(res, 404, {});
      res.writeHead(200, { 'content-type': file.type, 'content-length': file.data.length }).end(file.data);
      return;
    }
    if (dropped) return json(res, 503, { code: 'ServiceUnavailable', message: 'network down' });
    if (req.method === 'POST' && path === '/media/upload') return upload(req, res, url);
    const body = req.method === 'POST' ? await readJson(req) : {};
    if (req.method === 'POST' && path === '/v1.0/oauth2/accessToken') {
      tokenRequests += 1;
      if (body.appKey !== CLIENT_ID || body.appSecret !== CLIENT_SECRET)
        return json(res, 400, { code: 'invalidClientIdOrSecret', message: '无效的clientId或者clientSecret' });
      const token = `dtok-${issuedTokens.length + 1}-${Math.random().toString(36).slice(2)}`;
      tokens.add(token);
      issuedTokens.push(token);
      return json(res, 200, { accessToken: token, expireIn: options.expireIn ?? 7200 });
    }
    if (req.method === 'POST' && path === '/v1.0/gateway/connections/open') {
      registrations.push(body);
      if (body.clientId !== CLIENT_ID || body.clientSecret !== CLIENT_SECRET)
        return json(res, 401, { code: 'InvalidAuthentication', message: 'clientId or clientSecret is invalid' });
      const ticket = `ticket-${registrations.length}-${Math.random().toString(36).slice(2)}`;
      tickets.add(ticket);
      const { port } = server.address() as AddressInfo;
      return json(res, 200, { endpoint: fake.endpoint ?? `ws://127.0.0.1:${port}/connect`, ticket });
    }
    if (req.method === 'POST' && path.startsWith('/v1.0/robot/')) {
      if (!tokenOk(req)) {
        refused += 1;
        return json(res, 401, { code: 'InvalidAuthentication', message: '不合法的access_token' });
      }
      if (body.robotCode !== CLIENT_ID) return json(res, 400, { code: 'invalidParameter', message: 'robotCode' });
      if (path === '/v1.0/robot/messageFiles/download') {
        const target = codes.get(String(body.downloadCode));
        if (!target) return json(res, 400, { code: 'invalidDownloadCode', message: 'downloadCode is invalid' });
        return json(res, 200, { downloadUrl: target });
      }
      const chatId =
        path === '/v1.0/robot/groupMessages/send'
          ? `group:${String(body.openConversationId)}`
          : path === '/v1.0/robot/oToMessages/batchSend' && Array.isArray(body.userIds) && body.userIds.length === 1
            ? String(body.userIds[0])
            : undefined;
      if (!chatId || typeof body.msgParam !== 'string' || typeof body.msgKey !== 'string')
        return json(res, 400, { code: 'invalidParameter', message: 'bad request' });
      sent.push({
        chatId,
        msgKey: body.msgKey,
        param: JSON.parse(body.msgParam) as Record<string, unknown>,
        robotCode: body.robotCode,
      });
      return json(res, 200, {
        processQueryKey: `pqk-${sent.length}`,
        ...(chatId.startsWith('group:') ? {} : { invalidStaffIdList: [], flowControlledStaffIdList: [] }),
      });
    }
    json(res, 404, { code: 'NotFound', message: 'no such endpoint' });
  }

  async function upload(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
    if (!tokens.has(url.searchParams.get('access_token') ?? '')) {
      refused += 1;
      return json(res, 200, { errcode: 40014, errmsg: '不合法的access_token' });
    }
    const raw = await readBody(req);
    const form = await new Response(raw, {
      headers: { 'content-type': String(req.headers['content-type'] ?? '') },
    }).formData();
    const media = form.get('media');
    if (!(media instanceof Blob)) return json(res, 200, { errcode: 40004, errmsg: 'no media' });
    const type = url.searchParams.get('type') ?? '';
    uploads.push({
      type,
      name: (media as File).name,
      mimeType: media.type,
      data: Buffer.from(await media.arrayBuffer()),
    });
    json(res, 200, { errcode: 0, errmsg: 'ok', type, media_id: `@media-${uploads.length}`, created_at: Date.now() });
  }

  const wss = new WebSocketServer({ noServer: true });
  server.on('upgrade', (req, socket, head) => {
    const url = new URL(req.url ?? '/', 'http://x');
    const ticket = url.searchParams.get('ticket') ?? '';
    if (dropped || url.pathname !== '/connect' || !tickets.delete(ticket)) {
      socket.end('HTTP/1.1 401 Unauthorized\r\nconnection: close\r\n\r\n');
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => {
      connections += 1;
      sockets.add(ws);
      ws.on('close', () => sockets.delete(ws));
      ws.on('message', (raw) => onFrame(String(raw)));
      // What was pushed and never answered comes again on the new connection.
      for (const entry of pending.values()) deliver(entry, ws);
    });
  });

  function onFrame(text: string): void {
    let frame: ClientFrame;
    try {
      frame = JSON.parse(text) as ClientFrame;
    } catch {
      return;
    }
    frames.push(frame);
    const id = frame.headers?.messageId ?? '';
    const ping = pings.get(id);
    if (ping) {
      pings.delete(id);
      ping(frame);
      return;
    }
    if (frame.code === 200 && fake.takingAcks) pending.delete(id);
  }

  function downstream(type: string, topic: string, data: string, messageId: string): string {
    return JSON.stringify({
      specVersion: '1.0',
      type,
      headers: {
        appId: 'fake-app-id',
        connectionId: 'fake-connection',
        contentType: 'application/json',
        messageId,
        time: String(Date.now()),
        topic,
      },
      data,
    });
  }

  /** To one connection, as DingTalk does: the newest (the one a client that was asked to leave has just opened). */
  function deliver(entry: Pending, to?: WebSocket): void {
    if (!fake.delivering || dropped) return;
    const ws = to ?? [...sockets].filter((socket) => socket.readyState === socket.OPEN).at(-1);
    if (!ws) return;
    entry.deliveries += 1;
    const msgId = msgIdOf(entry.frame);
    if (msgId) deliveries.set(msgId, (deliveries.get(msgId) ?? 0) + 1);
    ws.send(entry.frame);
  }

  function push(data: unknown, topic = ROBOT_TOPIC): string {
    const frameId = `frame-${nextId++}`;
    const entry: Pending = {
      frameId,
      frame: downstream('CALLBACK', topic, typeof data === 'string' ? data : JSON.stringify(data), frameId),
      deliveries: 0,
    };
    pending.set(frameId, entry);
    deliver(entry);
    return frameId;
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const url = `http://127.0.0.1:${port}`;
  const fake: FakeDingtalk = {
    url,
    settings: { clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, apiBase: url, oapiBase: url },
    sent,
    uploads,
    frames,
    registrations,
    delivering: true,
    takingAcks: true,
    fileRequests,
    refusedTokens: () => refused,
    tokens: () => [...issuedTokens],
    tokenRequests: () => tokenRequests,
    connections: () => connections,
    deliveries: (msgId) => deliveries.get(msgId) ?? 0,
    unacked: () => [...pending.values()].map((entry) => msgIdOf(entry.frame) ?? entry.frameId),
    userSays(message) {
      const id = message.id ?? `msg${nextId++}`;
      const group = message.chatId.startsWith('group:');
      const msgtype = message.msgtype ?? 'text';
      push({
        conversationId: group ? message.chatId.slice('group:'.length) : `cid-dm-${message.staffId}`,
        chatbotCorpId: 'ding-corp',
        chatbotUserId: '$:LWCP_v1:$robot',
        msgId: id,
        senderNick: message.senderNick ?? `User ${message.staffId}`,
        isAdmin: false,
        senderStaffId: message.staffId,
        sessionWebhookExpiredTime: Date.now() + 90 * 60_000,
        createAt: Date.now(),
        senderCorpId: 'ding-corp',
        conversationType: group ? '2' : '1',
        senderId: `$:LWCP_v1:$${message.staffId}`,
        sessionWebhook: `${url}/robot/sendBySession?session=unused`,
        robotCode: CLIENT_ID,
        msgtype,
        ...(group ? { isInAtList: message.isInAtList ?? true, conversationTitle: 'Test group' } : {}),
        // DingTalk removes the @robot from the text and leaves the space after it.
        ...(msgtype === 'text' ? { text: { content: group ? ` ${message.text ?? ''}` : (message.text ?? '') } } : {}),
        ...(message.content ? { content: message.content } : {}),
        ...message.extra,
      });
      return id;
    },
    push,
    raw(text) {
      for (const ws of sockets) ws.send(text);
    },
    ping() {
      const id = `ping-${nextId++}`;
      return new Promise((resolve) => {
        pings.set(id, resolve);
        for (const ws of sockets) ws.send(downstream('SYSTEM', 'ping', JSON.stringify({ opaque: id }), id));
      });
    },
    askDisconnect(graceMs = 200) {
      for (const ws of sockets) {
        ws.send(downstream('SYSTEM', 'disconnect', JSON.stringify({ reason: 'server rebalancing' }), `d-${nextId++}`));
        setTimeout(() => ws.close(1000, 'disconnect'), graceMs).unref();
      }
    },
    expireTokens: () => tokens.clear(),
    messagesIn: (chatId) =>
      sent
        .filter((m) => m.chatId === chatId)
        .map((m) => String(m.param.text ?? m.param.content ?? m.param.photoURL ?? m.param.fileName ?? '')),
    serveFile(name, data, contentType = 'application/octet-stream') {
      files.set(name, { data, type: contentType });
      codes.set(`code-${name}`, `${url}/files/${encodeURIComponent(name)}`);
    },
    downloadCode(code, target) {
      codes.set(code, target);
    },
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

function msgIdOf(frame: string): string | undefined {
  try {
    const data = JSON.parse((JSON.parse(frame) as { data: string }).data) as { msgId?: unknown };
    return typeof data.msgId === 'string' ? data.msgId : undefined;
  } catch {
    return undefined;
  }
}

function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

async function readJson(req: IncomingMessage): Promise<Record<string, unknown>> {
  const text = (await readBody(req)).toString('utf8');
  return text ? (JSON.parse(text) as Record<string, unknown>) : {};
}
