/**
 * A loopback fake of WeChat's iLink bot API and its CDN, speaking the real HTTP protocol: the QR login
 * (get_bot_qrcode, get_qrcode_status: wait → scaned → confirmed), the getupdates long-poll with an opaque cursor
 * (messages after the cursor, held until one comes), sendmessage (checked: a valid context token, at most
 * `contextLimit` sends per token, text within 2,048 characters), getconfig, sendtyping, notifystart/stop,
 * getuploadurl and the CDN's AES-128-ECB upload and download. A wrong or revoked token gets errcode -14.
 * `drop()` cuts every connection and refuses new ones until `restore()`; messages said meanwhile wait in the queue.
 */
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

export const FAKE_MAX_TEXT = 2048;

export interface Sent {
  to: string;
  contextToken: string;
  clientId: string;
  item: Record<string, unknown>;
  /** For a media item: the file's decrypted bytes, as the CDN holds them. */
  file?: Buffer;
}

export interface Call {
  path: string;
  headers: http.IncomingHttpHeaders;
  body: Record<string, unknown>;
}

export interface Said {
  from: string;
  id?: string;
  text?: string;
  items?: Record<string, unknown>[];
  /** Default: a new context token for this message. */
  contextToken?: string;
  messageType?: number;
}

export interface FakeIlinkOptions {
  /** How long getupdates waits for a message before answering an empty batch. */
  holdMs?: number;
  contextLimit?: number;
  /** `manual`: the test calls scan() and confirm(); `auto`: wait, scaned, confirmed on the first three polls. */
  login?: 'auto' | 'manual';
}

export async function startFakeIlink(options: FakeIlinkOptions = {}) {
  const holdMs = options.holdMs ?? 300;
  const contextLimit = options.contextLimit ?? 10;
  const validTokens = new Set<string>(['bot-token-preset']);
  const queue: Record<string, unknown>[] = [];
  let seq = 0;
  const waiters = new Set<() => void>();
  const contexts = new Map<string, string>(); // user → latest context token
  const issued = new Map<string, string>(); // context token → the user it was issued to
  const contextUses = new Map<string, number>();
  const sent: Sent[] = [];
  const calls: Call[] = [];
  const typing: { user: string; status: number }[] = [];
  const uploads = new Map<string, { key: Buffer; md5: string; rawsize: number; filekey: string }>();
  const cdn = new Map<string, { encrypted: Buffer; plain: Buffer }>();
  const sockets = new Set<Socket>();
  let dropped = false;
  let stall = false;
  let loginCount = 0;
  const codes = new Map<
    string,
    { polls: number; state: 'wait' | 'scaned' | 'confirmed' | 'expired'; token?: string }
  >();
  const overrides: { endpoint: string; answer: unknown; status?: number; headers?: Record<string, string> }[] = [];

  const wake = () => {
    for (const resolve of [...waiters]) resolve();
  };

  const server = http.createServer((req, res) => {
    void handle(req, res).catch((err: unknown) => {
      res.statusCode = 500;
      res.end(String(err));
    });
  });
  server.on('connection', (socket) => {
    if (dropped) {
      socket.destroy();
      return;
    }
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });

  async function handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://fake');
    const raw = await readBody(req);
    if (url.pathname.startsWith('/c2c/')) return handleCdn(url, raw, res);
    const body = raw.length ? (JSON.parse(raw.toString('utf8')) as Record<string, unknown>) : {};
    const endpoint = url.pathname.replace(/^\/ilink\/bot\//, '');
    calls.push({ path: `${url.pathname}${url.search}`, headers: req.headers, body });
    const json = (value: unknown, status = 200, headers: Record<string, string> = {}) => {
      res.writeHead(status, { 'content-type': 'application/json', ...headers });
      res.end(JSON.stringify(value));
    };
    const override = overrides.findIndex((o) => o.endpoint === endpoint);
    if (override >= 0) {
      const [o] = overrides.splice(override, 1);
      return json(o?.answer, o?.status, o?.headers);
    }
    if (endpoint === 'get_bot_qrcode') {
      const code = `qr-${codes.size + 1}`;
      codes.set(code, { polls: 0, state: 'wait' });
      return json({ ret: 0, qrcode: code, qrcode_img_content: `https://liteapp.weixin.qq.com/q/${code}?bot_type=3` });
    }
    if (endpoint === 'get_qrcode_status') {
      const code = codes.get(url.searchParams.get('qrcode') ?? '');
      if (!code) return json({ ret: 0, status: 'expired' });
      code.polls += 1;
      if (options.login !== 'manual' && code.state !== 'expired') {
        if (code.polls === 2) code.state = 'scaned';
        if (code.polls >= 3) confirmCode(code);
      }
      if (code.state === 'confirmed') {
        return json({
          ret: 0,
          status: 'confirmed',
          bot_token: code.token,
          ilink_bot_id: 'fakebot@im.bot',
          ilink_user_id: 'owner@im.wechat',
          baseurl: base,
        });
      }
      return json({ ret: 0, status: code.state });
    }
    const auth = req.headers.authorization ?? '';
    if (req.headers.authorizationtype !== 'ilink_bot_token' || !validTokens.has(auth.replace(/^Bearer /, ''))) {
      return json({ ret: -14, errcode: -14, errmsg: 'session timeout' });
    }
    if (endpoint === 'getupdates') {
      if (stall) return; // never answers: the client's watchdog must notice
      const after = Number(String(body.get_updates_buf ?? '').replace(/^cursor-/, '')) || 0;
      const pending = () => queue.filter((m) => Number(m.seq) > after);
      if (pending().length === 0) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(done, holdMs);
          function done() {
            clearTimeout(timer);
            waiters.delete(done);
            resolve();
          }
          waiters.add(done);
          req.on('close', done);
        });
      }
      const batch = pending().slice(0, 20);
      const last = batch.at(-1)?.seq ?? after;
      return json({ ret: 0, msgs: batch, get_updates_buf: `cursor-${last}` });
    }
    if (endpoint === 'sendmessage') {
      const msg = body.msg as Record<string, unknown>;
      const to = String(msg.to_user_id);
      const token = String(msg.context_token ?? '');
      if (!token || issued.get(token) !== to) return json({ ret: -2, errmsg: 'context token invalid' });
      const uses = (contextUses.get(token) ?? 0) + 1;
      if (uses > contextLimit) return json({ ret: -2, errmsg: 'rate limited' });
      const item = (msg.item_list as Record<string, unknown>[])[0] ?? {};
      const text = (item.text_item as { text?: string } | undefined)?.text;
      if (text !== undefined && (text.length > FAKE_MAX_TEXT || !text.trim())) {
        return json({ ret: -3, errmsg: 'bad text' });
      }
      contextUses.set(token, uses);
      const media = Object.values(item).find(
        (v): v is { media: { encrypt_query_param: string } } =>
          typeof v === 'object' && v !== null && 'media' in (v as Record<string, unknown>),
      );
      const file = media ? cdn.get(media.media.encrypt_query_param)?.plain : undefined;
      sent.push({ to, contextToken: token, clientId: String(msg.client_id), item, ...(file ? { file } : {}) });
      return json({ ret: 0 });
    }
    if (endpoint === 'getconfig') {
      const user = String(body.ilink_user_id);
      return json({ ret: 0, typing_ticket: `ticket-${user}`, context_token: contexts.get(user) });
    }
    if (endpoint === 'sendtyping') {
      typing.push({ user: String(body.ilink_user_id), status: Number(body.status) });
      return json({ ret: 0 });
    }
    if (endpoint === 'getuploadurl') {
      const param = `up-${uploads.size + 1}`;
      uploads.set(param, {
        key: Buffer.from(String(body.aeskey), 'hex'),
        md5: String(body.rawfilemd5),
        rawsize: Number(body.rawsize),
        filekey: String(body.filekey),
      });
      return json({ ret: 0, upload_param: param });
    }
    if (endpoint === 'msg/notifystart' || endpoint === 'msg/notifystop') return json({ ret: 0 });
    return json({ ret: -1, errmsg: `unknown endpoint ${endpoint}` }, 404);
  }

  function handleCdn(url: URL, raw: Buffer, res: http.ServerResponse): void {
    if (url.pathname === '/c2c/upload') {
      const upload = uploads.get(url.searchParams.get('encrypted_query_param') ?? '');
      if (!upload || upload.filekey !== url.searchParams.get('filekey')) {
        res.writeHead(400).end();
        return;
      }
      const plain = aes(raw, upload.key, false);
      if (createHash('md5').update(plain).digest('hex') !== upload.md5 || plain.length !== upload.rawsize) {
        res.writeHead(400).end('md5 mismatch');
        return;
      }
      const param = `dl-${randomBytes(6).toString('hex')}`;
      cdn.set(param, { encrypted: raw, plain });
      res.writeHead(200, { 'x-encrypted-param': param }).end();
      return;
    }
    const stored = cdn.get(url.searchParams.get('encrypted_query_param') ?? '');
    if (url.pathname !== '/c2c/download' || !stored) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'content-type': 'application/octet-stream' }).end(stored.encrypted);
  }

  function confirmCode(code: { state: string; token?: string }): void {
    if (code.state === 'confirmed') return;
    loginCount += 1;
    code.state = 'confirmed';
    code.token = `bot-token-login-${loginCount}`;
    validTokens.add(code.token);
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  return {
    url: base,
    cdnUrl: `${base}/c2c`,
    token: 'bot-token-preset',
    sent,
    calls,
    typing,
    /** A user writes to the bot; returns the message as getupdates delivers it. */
    userSays(said: Said): Record<string, unknown> {
      seq += 1;
      const contextToken = said.contextToken ?? `ctx-${seq}-${randomBytes(3).toString('hex')}`;
      contexts.set(said.from, contextToken);
      issued.set(contextToken, said.from);
      const message = {
        seq,
        message_id: said.id ?? `msg-${seq}`,
        from_user_id: said.from,
        to_user_id: 'fakebot@im.bot',
        create_time_ms: Date.now(),
        message_type: said.messageType ?? 1,
        message_state: 2,
        context_token: contextToken,
        item_list: said.items ?? [{ type: 1, text_item: { text: said.text ?? '' } }],
      };
      queue.push(message);
      wake();
      return message;
    },
    /** A context token WeChat gave out for `user` (as if they wrote earlier), without a message to deliver. */
    issueContext(user: string): string {
      const token = `ctx-issued-${randomBytes(3).toString('hex')}`;
      contexts.set(user, token);
      issued.set(token, user);
      return token;
    },
    /** Puts a file on the CDN, encrypted with `key`; returns the encrypt_query_param that names it. */
    putCdn(plain: Buffer, key: Buffer): string {
      const param = `in-${randomBytes(6).toString('hex')}`;
      cdn.set(param, { encrypted: aes(plain, key, true), plain });
      return param;
    },
    /** The texts the bot sent to a user, in order. */
    textsTo(user: string): string[] {
      return sent
        .filter((s) => s.to === user)
        .map((s) => (s.item.text_item as { text?: string } | undefined)?.text)
        .filter((t): t is string => t !== undefined);
    },
    /** The next answer of an endpoint (`getupdates`, `sendmessage`…) is this, with this HTTP status. */
    answerNext(endpoint: string, answer: unknown, status = 200, headers: Record<string, string> = {}): void {
      overrides.push({ endpoint, answer, status, headers });
    },
    revoke(token: string): void {
      validTokens.delete(token);
    },
    scan(code = `qr-${codes.size}`): void {
      const entry = codes.get(code);
      if (entry) entry.state = 'scaned';
    },
    confirm(code = `qr-${codes.size}`): void {
      const entry = codes.get(code);
      if (entry) confirmCode(entry);
    },
    expireCode(code = `qr-${codes.size}`): void {
      const entry = codes.get(code);
      if (entry) entry.state = 'expired';
    },
    codeCount: () => codes.size,
    stallPolls(on: boolean): void {
      stall = on;
    },
    drop(): void {
      dropped = true;
      wake();
      for (const socket of sockets) socket.destroy();
    },
    restore(): void {
      dropped = false;
    },
    async close(): Promise<void> {
      dropped = true;
      wake();
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

export type FakeIlink = Awaited<ReturnType<typeof startFakeIlink>>;

export function aes(data: Buffer, key: Buffer, encrypt: boolean): Buffer {
  const cipher = encrypt ? createCipheriv('aes-128-ecb', key, null) : createDecipheriv('aes-128-ecb', key, null);
  return Buffer.concat([cipher.update(data), cipher.final()]);
}

async function readBody(req: http.IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}
