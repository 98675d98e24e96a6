/**
 * A loopback fake of a Matrix homeserver's client-server API, enough for the real matrix-js-sdk: versions, whoami,
 * login, push rules, capabilities, filters, `/sync` (initial and incremental by `since`, long-polled, joined and
 * invited rooms, account data), sending and editing messages, typing, joining, media upload and download, and
 * end-to-end encryption's key and to-device endpoints (fake-keys.ts). Besides the bot, `addUser` makes accounts
 * another real client (a user's, with its own crypto) can sync and send with.
 * Every room keeps an ordered event log; a sync answers from a stream position, so nothing is lost across a
 * reconnect. It rejects events over 64 KiB as Synapse does, and can fail on purpose: `drop()` cuts every
 * connection until `restore()`, `failNext()` answers one request kind with an error.
 *
 *   const hs = await startFakeHomeserver();
 *   const room = hs.createRoom({ members: ['@alice:localhost'] });
 *   hs.userSays({ roomId: room, sender: '@alice:localhost', body: 'hello' });
 *   // channels.matrix = { homeserver: hs.url, userId: hs.botId, accessToken: hs.token }
 */
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { type Device, FakeKeys } from './fake-keys.js';
import { type BotMessage, type FakeEvent, RoomLog, type RoomOptions } from './fake-rooms.js';

export type { BotMessage, FakeEvent, RoomOptions } from './fake-rooms.js';

export interface FakeFailure {
  status: number;
  errcode: string;
  error?: string;
  retryAfterMs?: number;
}

export type RequestKind = 'sync' | 'send' | 'join' | 'whoami' | 'login' | 'typing' | 'upload' | 'download' | 'other';

export const MAX_EVENT_BYTES = 65_536;

export async function startFakeHomeserver(options: { serverName?: string; password?: string } = {}) {
  const serverName = options.serverName ?? 'localhost';
  const botId = `@nanobot:${serverName}`;
  /** Access token → its account and device. */
  const tokens = new Map<string, Device>([['syt_test_token', { user: botId, device: 'DEV0' }]]);
  const media = new Map<string, Buffer>();
  const transactions = new Map<string, string>();
  const failures = new Map<RequestKind, FakeFailure[]>();
  const requests: {
    kind: RequestKind;
    method: string;
    path: string;
    query: URLSearchParams;
    body: unknown;
    /** The access token's account. */
    user?: string;
  }[] = [];
  const typing: { roomId: string; typing: boolean }[] = [];
  const sockets = new Set<Socket>();
  const waiters = new Set<() => void>();
  let down = false;
  let logins = 0;
  const rooms = new RoomLog(serverName, botId, () => {
    for (const waiter of [...waiters]) waiter();
  });
  const keys = new FakeKeys(rooms);

  function syncBody(who: Device, from: number | undefined, limit: number) {
    const roomPart = rooms.syncBody(from, limit, who.user);
    const extras = keys.syncExtras(who, from, rooms.position);
    return { body: { ...roomPart.body, ...extras.body }, empty: roomPart.empty && extras.empty };
  }

  async function sync(url: URL, res: http.ServerResponse, who: Device): Promise<void> {
    const since = url.searchParams.get('since');
    const from = since ? Number(since.slice(1)) : undefined;
    const filter = url.searchParams.get('filter') ?? '';
    const limit = Number(/"limit":(\d+)/.exec(filter)?.[1] ?? 10);
    const timeout = Number(url.searchParams.get('timeout') ?? 0);
    let answer = syncBody(who, from, limit);
    if (answer.empty && timeout > 0) {
      // Long poll: answer when something happens, or after a short wait (a real server waits `timeout` ms).
      await new Promise<void>((resolve) => {
        const done = () => {
          waiters.delete(done);
          clearTimeout(timer);
          resolve();
        };
        const timer = setTimeout(done, Math.min(timeout, 250));
        waiters.add(done);
        res.on('close', done);
      });
      answer = syncBody(who, from, limit);
    }
    json(res, 200, answer.body);
  }

  const server = http.createServer((req, res) => {
    void handle(req, res).catch((err: unknown) => {
      if (!res.headersSent) json(res, 500, { errcode: 'M_UNKNOWN', error: String(err) });
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

  function kindOf(method: string, path: string): RequestKind {
    if (path.endsWith('/sync')) return 'sync';
    if (/\/rooms\/[^/]+\/send\//.test(path)) return 'send';
    if (/\/join\/|\/rooms\/[^/]+\/join$/.test(path)) return 'join';
    if (path.endsWith('/account/whoami')) return 'whoami';
    if (path.endsWith('/login') && method === 'POST') return 'login';
    if (/\/typing\//.test(path)) return 'typing';
    if (path.includes('/media/') && path.endsWith('/upload')) return 'upload';
    if (path.includes('/media/') && path.includes('/download/')) return 'download';
    return 'other';
  }

  async function handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://fake');
    const path = decodeURIComponent(url.pathname);
    const method = req.method ?? 'GET';
    const raw = await readBody(req);
    const kind = kindOf(method, path);
    const body =
      kind === 'upload' || raw.length === 0 ? {} : (JSON.parse(raw.toString('utf8')) as Record<string, unknown>);
    const bearer = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
    const caller = bearer ? tokens.get(bearer)?.user : undefined;
    requests.push({ kind, method, path, query: url.searchParams, body, ...(caller ? { user: caller } : {}) });
    if (path === '/_matrix/client/versions') return json(res, 200, { versions: ['v1.1', 'v1.5', 'v1.11'] });
    if (path === '/_matrix/client/v3/login') {
      if (method === 'GET') return json(res, 200, { flows: [{ type: 'm.login.password' }] });
      const failure = failures.get(kind)?.shift();
      if (failure) return fail(res, failure);
      const identifier = body.identifier as { user?: string } | undefined;
      const user = identifier?.user ?? '';
      if (body.password !== (options.password ?? 'hunter2') || (user !== botId && user !== 'nanobot'))
        return json(res, 403, { errcode: 'M_FORBIDDEN', error: 'Invalid username or password' });
      const token = `syt_login_${++logins}`;
      const device = typeof body.device_id === 'string' ? body.device_id : `DEV${logins}`;
      tokens.set(token, { user: botId, device });
      return json(res, 200, { user_id: botId, access_token: token, device_id: device });
    }
    const auth = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1] ?? url.searchParams.get('access_token');
    const who = auth ? tokens.get(auth) : undefined;
    if (!auth || !who)
      return json(res, 401, { errcode: 'M_UNKNOWN_TOKEN', error: 'Invalid access token passed.', soft_logout: false });
    const failure = failures.get(kind)?.shift();
    if (failure) return fail(res, failure);
    const ok = (result: unknown = {}) => json(res, 200, result);

    if (path === '/_matrix/client/v3/account/whoami') return ok({ user_id: who.user, device_id: who.device });
    const e2e = keys.handle(method, path, body, who);
    if (e2e && typeof e2e === 'object' && 'errcode' in e2e) return fail(res, e2e as FakeFailure);
    if (e2e) return ok(e2e);
    if (path.startsWith('/_matrix/client/v3/room_keys/'))
      return json(res, 404, { errcode: 'M_NOT_FOUND', error: 'No current backup version' });
    if (path.startsWith('/_matrix/client/v3/pushrules')) return ok({ global: {} });
    if (path === '/_matrix/client/v3/capabilities') return ok({ capabilities: {} });
    if (/^\/_matrix\/client\/v3\/user\/[^/]+\/filter$/.test(path)) return ok({ filter_id: 'f1' });
    if (kind === 'sync') return sync(url, res, who);
    const accountDataPath = /^\/_matrix\/client\/v3\/user\/[^/]+\/account_data\/(.+)$/.exec(path);
    if (accountDataPath?.[1]) {
      if (method === 'PUT') {
        rooms.setAccountData(accountDataPath[1], body);
        return ok();
      }
      const found = rooms.getAccountData(accountDataPath[1]);
      return found ? ok(found) : json(res, 404, { errcode: 'M_NOT_FOUND', error: 'no account data' });
    }
    const send = /^\/_matrix\/client\/v3\/rooms\/([^/]+)\/send\/([^/]+)\/([^/]+)$/.exec(path);
    if (send && method === 'PUT') {
      const [, roomId = '', type = '', txn = ''] = send;
      if (rooms.membership(roomId, who.user) !== 'join')
        return json(res, 403, { errcode: 'M_FORBIDDEN', error: 'User not in room' });
      const known = transactions.get(`${auth}/${txn}`);
      if (known) return ok({ event_id: known });
      if (Buffer.byteLength(raw) + 600 > MAX_EVENT_BYTES)
        return json(res, 413, { errcode: 'M_TOO_LARGE', error: 'event too large' });
      const event = rooms.append(roomId, { type, sender: who.user, content: body });
      transactions.set(`${auth}/${txn}`, event.event_id);
      return ok({ event_id: event.event_id });
    }
    const typingPath = /^\/_matrix\/client\/v3\/rooms\/([^/]+)\/typing\//.exec(path);
    if (typingPath?.[1]) {
      typing.push({ roomId: typingPath[1], typing: body.typing === true });
      return ok();
    }
    const joinPath = /^\/_matrix\/client\/v3\/(?:join\/([^/]+)|rooms\/([^/]+)\/join)$/.exec(path);
    if (joinPath) {
      const roomId = joinPath[1] ?? joinPath[2] ?? '';
      const state = rooms.membership(roomId, botId);
      if (state !== 'invite' && state !== 'join')
        return json(res, 403, { errcode: 'M_FORBIDDEN', error: 'You are not invited to this room.' });
      if (state === 'invite') rooms.member(roomId, botId, 'join');
      return ok({ room_id: roomId });
    }
    if (kind === 'upload') {
      const id = randomUUID().slice(0, 12);
      media.set(id, raw);
      return ok({ content_uri: `mxc://${serverName}/${id}` });
    }
    const download = /\/_matrix\/client\/v1\/media\/download\/([^/]+)\/([^/]+)/.exec(path);
    if (download?.[2]) {
      const content = media.get(download[2]);
      if (!content) return json(res, 404, { errcode: 'M_NOT_FOUND', error: 'no media' });
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': content.length });
      res.end(content);
      return;
    }
    json(res, 404, { errcode: 'M_UNRECOGNIZED', error: `Unrecognized request ${method} ${path}` });
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  return {
    url,
    token: 'syt_test_token',
    botId,
    /** The E2E side: which devices uploaded keys, which to-device messages went where. */
    keys,
    /** An account for another client (a user's own matrix-js-sdk): its access token and device. */
    addUser(userId: string, device = 'USERDEV'): { accessToken: string; deviceId: string } {
      const accessToken = `syt_user_${randomUUID().slice(0, 8)}`;
      tokens.set(accessToken, { user: userId, device });
      return { accessToken, deviceId: device };
    },
    serverName,
    requests,
    typing,
    createRoom: (room: RoomOptions = {}) => rooms.createRoom(room),
    /** A message from a user; returns its event id. `content` is merged over `{ msgtype: 'm.text', body }`. */
    userSays(input: {
      roomId: string;
      sender: string;
      body?: string;
      content?: Record<string, unknown>;
      eventId?: string;
      type?: string;
    }): string {
      if (!rooms.has(input.roomId)) throw new Error(`no room ${input.roomId}`);
      if (rooms.membership(input.roomId, input.sender) !== 'join') rooms.member(input.roomId, input.sender, 'join');
      const event = rooms.append(input.roomId, {
        type: input.type ?? 'm.room.message',
        sender: input.sender,
        content:
          (input.type ?? 'm.room.message') === 'm.room.message'
            ? { msgtype: 'm.text', body: input.body ?? '', ...input.content }
            : (input.content ?? {}),
        ...(input.eventId ? { event_id: input.eventId } : {}),
      });
      return event.event_id;
    },
    /** `user` invites the bot into an existing room. */
    invite(roomId: string, user: string, isDirect = false): void {
      rooms.member(roomId, botId, 'invite', user, isDirect ? { is_direct: true } : {});
    },
    hasRoom: (roomId: string) => rooms.has(roomId),
    botMembership: (roomId: string) => rooms.membership(roomId, botId),
    eventsIn: (roomId: string): FakeEvent[] => rooms.events(roomId),
    /** Has the bot's sync loop acknowledged this event (asked for what came after it)? */
    botHasSeen(eventId: string): boolean {
      const pos = [...rooms.allEvents()].find((e) => e.event_id === eventId)?.pos ?? Number.POSITIVE_INFINITY;
      return requests.some(
        (r) => r.kind === 'sync' && r.user === botId && Number(r.query.get('since')?.slice(1) ?? -1) >= pos,
      );
    },
    /** The bot's messages in a room as a user sees them (edits applied), in order. */
    messagesIn: (roomId: string): BotMessage[] => rooms.botMessages(roomId),
    uploaded: (mxc: string) => media.get(mxc.split('/').at(-1) ?? ''),
    /** Stores a file as if a user had uploaded it; returns its mxc:// URI. */
    upload(content: Buffer): string {
      const id = randomUUID().slice(0, 12);
      media.set(id, content);
      return `mxc://${serverName}/${id}`;
    },
    setAccountData: (type: string, content: unknown) => rooms.setAccountData(type, content),
    revokeTokens(): void {
      tokens.clear();
    },
    /** The next requests of this kind fail with these errors, in order. */
    failNext(kind: RequestKind, ...errors: FakeFailure[]): void {
      failures.set(kind, [...(failures.get(kind) ?? []), ...errors]);
    },
    /** Cuts every connection (held long polls too) and refuses new ones until `restore`. */
    drop(): void {
      down = true;
      for (const socket of sockets) socket.destroy();
    },
    restore(): void {
      down = false;
    },
    async close(): Promise<void> {
      down = true;
      for (const socket of sockets) socket.destroy();
      for (const waiter of [...waiters]) waiter();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

export type FakeHomeserver = Awaited<ReturnType<typeof startFakeHomeserver>>;

function json(res: http.ServerResponse, status: number, body: unknown): void {
  if (res.destroyed || res.writableEnded) return;
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

function fail(res: http.ServerResponse, failure: FakeFailure): void {
  json(res, failure.status, {
    errcode: failure.errcode,
    error: failure.error ?? failure.errcode,
    ...(failure.retryAfterMs !== undefined ? { retry_after_ms: failure.retryAfterMs } : {}),
  });
}

async function readBody(req: http.IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}
