/**
 * A loopback WeCom intelligent-bot long connection (openws.work.weixin.qq.com), as the official SDK speaks it: JSON
 * frames `{ cmd, headers: { req_id }, body }`. The bot subscribes first (`aibot_subscribe` with bot_id + secret) and
 * is answered `{ headers: { req_id }, errcode, errmsg }`; `ping` is acked the same way. WeCom pushes
 * `aibot_msg_callback` (messages) and `aibot_event_callback` (enter_chat, disconnected_event); the bot answers a
 * callback with `aibot_respond_msg` / `aibot_respond_welcome_msg` on the callback's req_id, pushes with
 * `aibot_send_msg`, and uploads with `aibot_upload_media_init|chunk|finish`. Every command is acked on its req_id.
 *
 * Callbacks pushed while no connection is subscribed wait and go to the next one. Files are served over HTTP on the
 * same port, AES-256-CBC encrypted as WeCom does (key = the base64 aeskey, IV = its first 16 bytes, PKCS#7 to 32).
 */
import { createCipheriv, createHash, randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type WebSocket, WebSocketServer } from 'ws';

export const BOT_ID = 'aib-fake-bot-0001';
export const SECRET = 'fake-wecom-secret-0123456789';

export interface Frame {
  cmd?: string;
  headers?: { req_id?: string };
  body?: Record<string, unknown>;
}

export interface BotMessage {
  chatId: string;
  /** `stream` (a reply), `markdown` (a push), or a media type. */
  kind: string;
  text: string;
  finished: boolean;
  streamId?: string;
  mediaId?: string;
  via: 'reply' | 'push';
}

export interface Upload {
  type: string;
  filename: string;
  data: Buffer;
}

export interface UserMessage {
  chatId?: string;
  userId: string;
  id?: string;
  text?: string;
  chatType?: 'single' | 'group';
  /** The whole body instead (msgtype, image, file…); chat fields are filled in. */
  body?: Record<string, unknown>;
}

export interface FakeWecomOptions {
  secret?: string;
}

export interface FakeWecom {
  settings: { botId: string; secret: string; wsUrl: string };
  origin: string;
  /** Every frame the bot sent, in order. */
  frames: Frame[];
  messages: BotMessage[];
  welcomes: { chatId: string; content: string }[];
  uploads: Map<string, Upload>;
  subscribes(): number;
  connections(): number;
  userSays(message: UserMessage): string;
  enterChat(userId: string): string;
  messagesIn(chatId: string): string[];
  /** An encrypted file served by the fake: the URL and aeskey a message carries. */
  hostFile(plain: Buffer, name?: string): { url: string; aeskey: string };
  /** Replies on callbacks received so far are refused as expired (846605). */
  expireCallbacks(): void;
  /** Leaves subscribe frames unanswered (a server that accepted the socket and went quiet). */
  holdSubscribe(on: boolean): void;
  /** Sends this text as it is to the subscribed connection (malformed frames). */
  sendRaw(data: string): void;
  /** Stops acking pings (a connection that has silently died). */
  silence(on: boolean): void;
  /** Another connection of the bot takes over: disconnected_event, then close. */
  kick(): void;
  drop(): void;
  restore(): void;
  close(): Promise<void>;
}

const MAX_CONTENT_BYTES = 20480;

export function encryptForWecom(plain: Buffer, key: Buffer): Buffer {
  const pad = 32 - (plain.length % 32);
  const padded = Buffer.concat([plain, Buffer.alloc(pad, pad)]);
  const cipher = createCipheriv('aes-256-cbc', key, key.subarray(0, 16));
  cipher.setAutoPadding(false);
  return Buffer.concat([cipher.update(padded), cipher.final()]);
}

export async function startFakeWecom(options: FakeWecomOptions = {}): Promise<FakeWecom> {
  const secret = options.secret ?? SECRET;
  const files = new Map<string, { data: Buffer; name?: string }>();
  const callbacks = new Map<string, string>(); // req_id → chat id
  const expired = new Set<string>();
  const pending: Frame[] = [];
  const frames: Frame[] = [];
  const messages: BotMessage[] = [];
  const welcomes: { chatId: string; content: string }[] = [];
  const uploads = new Map<string, Upload>();
  const uploading = new Map<string, { type: string; filename: string; chunks: Buffer[]; total: number; md5: string }>();
  let subscribed: WebSocket | undefined;
  let subscribeCount = 0;
  let dropped = false;
  let silent = false;
  let holding = false;
  let seq = 0;
  const sockets = new Set<WebSocket>();

  const server: Server = createServer((req, res) => {
    const file = files.get((req.url ?? '').replace(/^\/files\//, ''));
    if (!file) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, {
      'content-type': 'application/octet-stream',
      ...(file.name ? { 'content-disposition': `attachment; filename="${encodeURIComponent(file.name)}"` } : {}),
    });
    res.end(file.data);
  });
  const wss = new WebSocketServer({ server, verifyClient: () => !dropped });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const origin = `http://127.0.0.1:${port}`;

  const push = (frame: Frame) => {
    if (subscribed && subscribed.readyState === subscribed.OPEN) subscribed.send(JSON.stringify(frame));
    else pending.push(frame);
  };
  const ack = (ws: WebSocket, reqId: string, errcode = 0, errmsg = 'ok', body?: Record<string, unknown>) =>
    ws.send(JSON.stringify({ headers: { req_id: reqId }, errcode, errmsg, ...(body ? { body } : {}) }));

  function content(text: unknown): string {
    if (typeof text !== 'string') throw new Error('content is not a string');
    if (Buffer.byteLength(text) > MAX_CONTENT_BYTES) throw new Error(`content of ${Buffer.byteLength(text)} bytes`);
    return text;
  }

  /** A reply or push body → the message the chat shows; throws what WeCom would refuse. */
  function record(chatId: string, body: Record<string, unknown>, via: 'reply' | 'push'): void {
    const msgtype = String(body.msgtype ?? '');
    if (msgtype === 'stream' && via === 'reply') {
      const stream = body.stream as { id?: unknown; content?: unknown; finish?: unknown };
      if (typeof stream?.id !== 'string' || !stream.id) throw new Error('stream without id');
      const text = content(stream.content);
      const existing = messages.find((m) => m.streamId === stream.id);
      if (existing?.finished) throw Object.assign(new Error('stream message update expired'), { code: 846608 });
      if (existing) {
        existing.text = text;
        existing.finished = stream.finish === true;
      } else {
        messages.push({ chatId, kind: 'stream', text, finished: stream.finish === true, streamId: stream.id, via });
      }
      return;
    }
    if (msgtype === 'markdown' && via === 'push') {
      const text = content((body.markdown as { content?: unknown })?.content);
      messages.push({ chatId, kind: 'markdown', text, finished: true, via });
      return;
    }
    if (['image', 'file', 'voice', 'video'].includes(msgtype)) {
      const mediaId = (body[msgtype] as { media_id?: unknown })?.media_id;
      if (typeof mediaId !== 'string' || !uploads.has(mediaId)) throw new Error('unknown media_id');
      messages.push({ chatId, kind: msgtype, text: `[${msgtype}]`, finished: true, mediaId, via });
      return;
    }
    throw Object.assign(new Error(`msgtype ${msgtype} is not supported here`), { code: 40008 });
  }

  function handle(ws: WebSocket, frame: Frame): void {
    frames.push(frame);
    const reqId = frame.headers?.req_id ?? '';
    const body = frame.body ?? {};
    if (frame.cmd === 'aibot_subscribe') {
      subscribeCount += 1;
      if (holding) return;
      if (body.bot_id !== BOT_ID || body.secret !== secret) {
        ack(ws, reqId, 40058, 'invalid bot_id or secret');
        return;
      }
      subscribed = ws;
      ack(ws, reqId);
      for (const waiting of pending.splice(0)) ws.send(JSON.stringify(waiting));
      return;
    }
    if (ws !== subscribed) {
      ack(ws, reqId, 846609, 'not subscribed');
      return;
    }
    try {
      switch (frame.cmd) {
        case 'ping':
          if (!silent) ack(ws, reqId);
          return;
        case 'aibot_respond_msg': {
          const chatId = callbacks.get(reqId);
          if (!chatId || expired.has(reqId)) {
            ack(ws, reqId, 846605, 'invalid req_id');
            return;
          }
          record(chatId, body, 'reply');
          ack(ws, reqId);
          return;
        }
        case 'aibot_respond_welcome_msg': {
          const chatId = callbacks.get(reqId);
          if (!chatId) {
            ack(ws, reqId, 846605, 'invalid req_id');
            return;
          }
          welcomes.push({ chatId, content: String((body.text as { content?: unknown })?.content ?? '') });
          ack(ws, reqId);
          return;
        }
        case 'aibot_send_msg':
          if (typeof body.chatid !== 'string' || !body.chatid) {
            ack(ws, reqId, 40003, 'invalid chatid');
            return;
          }
          record(body.chatid, body, 'push');
          ack(ws, reqId);
          return;
        case 'aibot_upload_media_init': {
          const uploadId = `up-${++seq}`;
          uploading.set(uploadId, {
            type: String(body.type),
            filename: String(body.filename),
            chunks: [],
            total: Number(body.total_chunks),
            md5: String(body.md5),
          });
          ack(ws, reqId, 0, 'ok', { upload_id: uploadId });
          return;
        }
        case 'aibot_upload_media_chunk': {
          const upload = uploading.get(String(body.upload_id));
          if (!upload) {
            ack(ws, reqId, 40004, 'invalid upload_id');
            return;
          }
          upload.chunks[Number(body.chunk_index)] = Buffer.from(String(body.base64_data), 'base64');
          ack(ws, reqId);
          return;
        }
        case 'aibot_upload_media_finish': {
          const upload = uploading.get(String(body.upload_id));
          if (!upload) {
            ack(ws, reqId, 40004, 'invalid upload_id');
            return;
          }
          const data = Buffer.concat(upload.chunks);
          if (upload.chunks.length !== upload.total || createHash('md5').update(data).digest('hex') !== upload.md5) {
            ack(ws, reqId, 40005, 'md5 mismatch');
            return;
          }
          const mediaId = `media-${++seq}`;
          uploads.set(mediaId, { type: upload.type, filename: upload.filename, data });
          ack(ws, reqId, 0, 'ok', { media_id: mediaId, type: upload.type, created_at: '1700000000' });
          return;
        }
        default:
          ack(ws, reqId, 40001, `unknown cmd ${frame.cmd}`);
          return;
      }
    } catch (err) {
      const code = (err as { code?: number }).code ?? 40002;
      ack(ws, reqId, code, (err as Error).message);
    }
  }

  wss.on('connection', (ws) => {
    sockets.add(ws);
    ws.on('message', (data) => {
      try {
        handle(ws, JSON.parse(String(data)) as Frame);
      } catch {
        ws.close(1007, 'not JSON');
      }
    });
    ws.on('close', () => {
      sockets.delete(ws);
      if (subscribed === ws) subscribed = undefined;
    });
  });

  const callback = (cmd: string, chatId: string, body: Record<string, unknown>): string => {
    const reqId = `req-${++seq}-${randomBytes(4).toString('hex')}`;
    callbacks.set(reqId, chatId);
    push({ cmd, headers: { req_id: reqId }, body });
    return reqId;
  };

  const closeAll = () => {
    for (const ws of sockets) ws.terminate();
    subscribed = undefined;
  };

  return {
    settings: { botId: BOT_ID, secret, wsUrl: `ws://127.0.0.1:${port}` },
    origin,
    frames,
    messages,
    welcomes,
    uploads,
    subscribes: () => subscribeCount,
    connections: () => sockets.size,
    userSays(message) {
      const group = message.chatType === 'group';
      const chatId = group ? (message.chatId ?? 'group-1') : message.userId;
      const body: Record<string, unknown> = {
        msgid: message.id ?? `msg-${++seq}`,
        aibotid: BOT_ID,
        chattype: group ? 'group' : 'single',
        ...(group ? { chatid: chatId } : {}),
        from: { userid: message.userId },
        create_time: Date.now(),
        msgtype: 'text',
        text: { content: message.text ?? '' },
        ...message.body,
      };
      return callback('aibot_msg_callback', chatId, body);
    },
    enterChat(userId) {
      return callback('aibot_event_callback', userId, {
        msgid: `ev-${++seq}`,
        aibotid: BOT_ID,
        chattype: 'single',
        from: { userid: userId },
        create_time: Date.now(),
        msgtype: 'event',
        event: { eventtype: 'enter_chat' },
      });
    },
    messagesIn: (chatId) => messages.filter((m) => m.chatId === chatId).map((m) => m.text),
    hostFile(plain, name) {
      const key = randomBytes(32);
      const id = `f${++seq}`;
      files.set(id, { data: encryptForWecom(plain, key), ...(name ? { name } : {}) });
      return { url: `${origin}/files/${id}`, aeskey: key.toString('base64') };
    },
    expireCallbacks() {
      for (const reqId of callbacks.keys()) expired.add(reqId);
    },
    holdSubscribe(on) {
      holding = on;
    },
    sendRaw(data) {
      subscribed?.send(data);
    },
    silence(on) {
      silent = on;
    },
    kick() {
      const ws = subscribed;
      if (!ws) return;
      ws.send(
        JSON.stringify({
          cmd: 'aibot_event_callback',
          headers: { req_id: `req-${++seq}` },
          body: {
            msgid: `ev-${seq}`,
            aibotid: BOT_ID,
            msgtype: 'event',
            create_time: Date.now(),
            event: { eventtype: 'disconnected_event' },
          },
        }),
      );
      subscribed = undefined;
      ws.close();
    },
    drop() {
      dropped = true;
      closeAll();
    },
    restore() {
      dropped = false;
    },
    async close() {
      closeAll();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
