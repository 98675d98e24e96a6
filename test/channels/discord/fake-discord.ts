/**
 * A loopback fake of Discord, enough for the real discord.js: the REST API under `/api/v10` (gateway/bot, channels,
 * messages with JSON or multipart bodies, edits, typing), attachment downloads, and the gateway WebSocket
 * (fake-gateway.ts). It keeps each channel's messages as users see them (edits applied), refuses what Discord refuses
 * (over 2000 characters, empty messages, a wrong token), and can fail on purpose: `drop()` cuts every connection and
 * refuses new ones until `restore()`; `failNext()` answers one request with an error (a 429 rate limit, …).
 *
 *   const discord = await startFakeDiscord();
 *   discord.userSays({ channelId: '501', author: { id: '501', username: 'owner' }, content: 'hi' });
 *   // channels.discord = { token: discord.token, apiBase: discord.apiBase, … }
 */
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { WebSocketServer } from 'ws';
import { FakeGateway } from './fake-gateway.js';
import { readBody } from './multipart.js';

export const BOT_USER = { id: '4242424242424242', username: 'nano_test_bot', global_name: 'Nano', bot: true };
export const GUILD_ID = '9000000000000001';
/** The bot's managed role in the guild (mentioning it addresses the bot too). */
export const BOT_ROLE_ID = '9000000000000002';

export interface UserInput {
  channelId: string;
  /** A direct message (default) or a text channel of the test guild (created on first use). */
  kind?: 'dm' | 'guild';
  id?: string;
  author: { id: string; username: string };
  content?: string;
  /** Replies to this message of the same channel. */
  replyTo?: string;
  attachments?: { name: string; contentType: string; content: Buffer }[];
}

export interface StoredMessage {
  id: string;
  authorId: string;
  content: string;
  edits: number;
  attachments: { filename: string; size: number }[];
  raw: Record<string, unknown>;
}

export interface RestCall {
  method: string;
  /** The path with ids replaced by `:id`, e.g. `PATCH /channels/:id/messages/:id`. */
  route: string;
  path: string;
  body: Record<string, unknown>;
  files: { name: string; size: number }[];
}

export interface FakeFailure {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
}

interface FakeChannel {
  id: string;
  type: 0 | 1 | 11;
  parentId?: string;
  recipient?: Record<string, unknown>;
  messages: StoredMessage[];
}

export async function startFakeDiscord(options: { token?: string; refusedIntents?: number } = {}) {
  const token = options.token ?? 'fake-discord-token';
  const channels = new Map<string, FakeChannel>();
  const users = new Map<string, Record<string, unknown>>([[BOT_USER.id, BOT_USER]]);
  const files = new Map<string, Buffer>();
  const calls: RestCall[] = [];
  const failures = new Map<string, FakeFailure[]>();
  const sockets = new Set<Socket>();
  let nextId = 1_100_000_000_000_000_000n;
  let down = false;
  const newId = () => String(nextId++);

  const server = http.createServer((req, res) => {
    if (down) return void req.socket.destroy();
    void handle(req, res).catch((err: unknown) => {
      if (!res.headersSent) json(res, 500, { message: String(err), code: 0 });
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  const wss = new WebSocketServer({ noServer: true });
  server.on('upgrade', (req, socket, head) => {
    if (down || !req.url?.startsWith('/gateway')) return void socket.destroy();
    wss.handleUpgrade(req, socket, head, (ws) => gateway.accept(ws));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  const gateway = new FakeGateway({
    token,
    ...(options.refusedIntents !== undefined ? { refusedIntents: options.refusedIntents } : {}),
    readyPayload: (sessionId) => ({
      v: 10,
      user: { ...BOT_USER, discriminator: '0', avatar: null },
      guilds: [{ id: GUILD_ID, unavailable: true }],
      session_id: sessionId,
      resume_gateway_url: `${url.replace('http', 'ws')}/gateway`,
      application: { id: BOT_USER.id, flags: 0 },
    }),
    guildCreates: () => [guildObject()],
  });

  function guildObject() {
    const guildChannels = [...channels.values()].filter((c) => c.type !== 1);
    return {
      id: GUILD_ID,
      name: 'Test Guild',
      owner_id: '1',
      unavailable: false,
      member_count: users.size,
      large: false,
      joined_at: new Date().toISOString(),
      features: [],
      emojis: [],
      stickers: [],
      members: [],
      presences: [],
      voice_states: [],
      roles: [
        { id: GUILD_ID, name: '@everyone', permissions: '1024', position: 0, color: 0, managed: false, flags: 0 },
        { id: BOT_ROLE_ID, name: 'Nano', permissions: '0', position: 1, managed: true, tags: { bot_id: BOT_USER.id } },
      ],
      channels: guildChannels.filter((c) => c.type === 0).map(channelObject),
      threads: guildChannels.filter((c) => c.type === 11).map(channelObject),
    };
  }

  function channelObject(channel: FakeChannel): Record<string, unknown> {
    if (channel.type === 1) return { id: channel.id, type: 1, recipients: [channel.recipient], flags: 0 };
    const base = { id: channel.id, type: channel.type, guild_id: GUILD_ID, name: `channel-${channel.id}` };
    if (channel.type === 0) return { ...base, position: 0, permission_overwrites: [], parent_id: null };
    return {
      ...base,
      parent_id: channel.parentId,
      owner_id: '1',
      thread_metadata: { archived: false, locked: false, auto_archive_duration: 1440, archive_timestamp: isoNow() },
    };
  }

  function ensureChannel(input: UserInput): FakeChannel {
    const existing = channels.get(input.channelId);
    if (existing) return existing;
    const guild = input.kind === 'guild';
    const channel: FakeChannel = guild
      ? { id: input.channelId, type: 0, messages: [] }
      : { id: input.channelId, type: 1, recipient: userObject(input.author), messages: [] };
    channels.set(channel.id, channel);
    if (guild) gateway.dispatch('CHANNEL_CREATE', channelObject(channel));
    return channel;
  }

  function userObject(user: { id: string; username: string }): Record<string, unknown> {
    const known = { id: user.id, username: user.username, global_name: null, discriminator: '0', avatar: null };
    users.set(user.id, known);
    return known;
  }

  function messageObject(channel: FakeChannel, fields: Record<string, unknown>): Record<string, unknown> {
    const content = String(fields.content ?? '');
    const mentioned = [...content.matchAll(/<@!?(\d+)>/g)].map((m) => users.get(m[1] ?? '')).filter(Boolean);
    return {
      channel_id: channel.id,
      channel_type: channel.type,
      ...(channel.type !== 1 ? { guild_id: GUILD_ID, member: { roles: [], joined_at: isoNow(), flags: 0 } } : {}),
      timestamp: isoNow(),
      edited_timestamp: null,
      tts: false,
      mention_everyone: false,
      mentions: mentioned,
      mention_roles: [...content.matchAll(/<@&(\d+)>/g)].map((m) => m[1]),
      attachments: [],
      embeds: [],
      pinned: false,
      type: 0,
      flags: 0,
      ...fields,
    };
  }

  function store(channel: FakeChannel, raw: Record<string, unknown>): StoredMessage {
    const attachments = (raw.attachments as { filename: string; size: number }[]).map(({ filename, size }) => ({
      filename,
      size,
    }));
    const message: StoredMessage = {
      id: String(raw.id),
      authorId: String((raw.author as { id: string }).id),
      content: String(raw.content ?? ''),
      edits: 0,
      attachments,
      raw,
    };
    channel.messages.push(message);
    return message;
  }

  async function handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const path = new URL(req.url ?? '/', url).pathname;
    if (path.startsWith('/attachments/')) {
      const content = files.get(path);
      if (!content) return json(res, 404, { message: 'Not Found', code: 0 });
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': content.length });
      return void res.end(content);
    }
    if (!path.startsWith('/api/v10/')) return json(res, 404, { message: '404: Not Found', code: 0 });
    if (req.headers.authorization !== `Bot ${token}`) return json(res, 401, { message: '401: Unauthorized', code: 0 });
    const rest = path.slice('/api/v10'.length);
    const method = req.method ?? 'GET';
    const route = `${method} ${rest.replace(/\/\d+/g, '/:id')}`;
    const { body, files: uploads } = await readBody(req);
    calls.push({ method, route, path: rest, body, files: uploads.map((f) => ({ name: f.name, size: f.size })) });
    const failure = failures.get(route)?.shift();
    if (failure)
      return json(res, failure.status, failure.body ?? { message: 'fake failure', code: 0 }, failure.headers);

    if (route === 'GET /gateway/bot') {
      const limit = { total: 1000, remaining: 999, reset_after: 0, max_concurrency: 1 };
      return json(res, 200, { url: `${url.replace('http', 'ws')}/gateway`, shards: 1, session_start_limit: limit });
    }
    if (route === 'GET /users/@me') return json(res, 200, { ...BOT_USER, discriminator: '0', avatar: null });
    const [, channelId = '', , messageId] = rest.split('/').slice(1);
    const channel = channels.get(channelId);
    if (rest.startsWith('/channels/') && !channel) return json(res, 404, { message: 'Unknown Channel', code: 10003 });
    if (!channel) return json(res, 404, { message: '404: Not Found', code: 0 });
    switch (route) {
      case 'GET /channels/:id':
        return json(res, 200, channelObject(channel));
      case 'POST /channels/:id/typing':
        res.writeHead(204);
        return void res.end();
      case 'GET /channels/:id/messages': {
        const query = new URL(req.url ?? '/', url).searchParams;
        const after = BigInt(query.get('after') ?? '0');
        const limit = Number(query.get('limit') ?? 50);
        const page = channel.messages.filter((m) => BigInt(m.id) > after).slice(0, limit);
        return json(
          res,
          200,
          page.reverse().map((m) => m.raw),
        );
      }
      case 'POST /channels/:id/messages': {
        const content = String(body.content ?? '');
        const problem = invalid(content, uploads.length);
        if (problem) return json(res, 400, problem);
        const attachments = uploads.map((file) => ({ id: newId(), filename: file.name, size: file.size }));
        const raw = messageObject(channel, { id: newId(), author: BOT_USER, content, attachments });
        store(channel, raw);
        gateway.dispatch('MESSAGE_CREATE', raw);
        return json(res, 200, raw);
      }
      case 'PATCH /channels/:id/messages/:id': {
        const message = channel.messages.find((m) => m.id === messageId);
        if (!message) return json(res, 404, { message: 'Unknown Message', code: 10008 });
        const content = String(body.content ?? '');
        const problem = invalid(content, message.attachments.length);
        if (problem) return json(res, 400, problem);
        message.content = content;
        message.edits += 1;
        message.raw = { ...message.raw, content, edited_timestamp: isoNow() };
        return json(res, 200, message.raw);
      }
      default:
        return json(res, 404, { message: '404: Not Found', code: 0 });
    }
  }

  return {
    url,
    token,
    /** channels.discord.apiBase */
    apiBase: `${url}/api`,
    calls,
    gateway,
    /** A user writes; delivered over the gateway (or kept for the session while it is disconnected). */
    userSays(input: UserInput): string {
      const channel = ensureChannel(input);
      const id = input.id ?? newId();
      const replied = input.replyTo ? channel.messages.find((m) => m.id === input.replyTo) : undefined;
      const attachments = (input.attachments ?? []).map((file) => {
        const attachmentId = newId();
        const path = `/attachments/${channel.id}/${attachmentId}/${file.name}`;
        files.set(path, file.content);
        const { name: filename, contentType: content_type } = file;
        return { id: attachmentId, filename, size: file.content.length, url: `${url}${path}`, content_type };
      });
      const raw = messageObject(channel, {
        id,
        author: userObject(input.author),
        content: input.content ?? '',
        attachments,
        ...(replied
          ? {
              type: 19,
              message_reference: { type: 0, message_id: replied.id, channel_id: channel.id },
              referenced_message: replied.raw,
            }
          : {}),
      });
      if (!channel.messages.some((m) => m.id === id)) store(channel, raw);
      gateway.dispatch('MESSAGE_CREATE', raw);
      return id;
    },
    /** A thread under a guild channel, announced like Discord does. */
    addThread(threadId: string, parentId: string): void {
      const thread: FakeChannel = { id: threadId, type: 11, parentId, messages: [] };
      channels.set(threadId, thread);
      gateway.dispatch('THREAD_CREATE', { ...channelObject(thread), newly_created: true });
    },
    /** What the bot posted in a channel, edits applied. */
    messagesIn(channelId: string): StoredMessage[] {
      return (channels.get(channelId)?.messages ?? []).filter((m) => m.authorId === BOT_USER.id);
    },
    callsOf(route: string): RestCall[] {
      return calls.filter((call) => call.route === route);
    },
    /** The next requests on `route` (e.g. `PATCH /channels/:id/messages/:id`) fail like this, in order. */
    failNext(route: string, ...errors: FakeFailure[]): void {
      failures.set(route, [...(failures.get(route) ?? []), ...errors]);
    },
    /** Cuts every connection (REST and gateway) and refuses new ones until `restore`. */
    drop(): void {
      down = true;
      gateway.terminateAll();
      for (const socket of sockets) socket.destroy();
    },
    restore(): void {
      down = false;
    },
    async close(): Promise<void> {
      down = true;
      gateway.terminateAll();
      for (const socket of sockets) socket.destroy();
      wss.close();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

export type FakeDiscord = Awaited<ReturnType<typeof startFakeDiscord>>;

/** Discord's answer to a message it will not post, or undefined when it would. */
function invalid(content: string, files: number): Record<string, unknown> | undefined {
  if (content.length > 2000) {
    const error = { code: 'BASE_TYPE_MAX_LENGTH', message: 'Must be 2000 or fewer in length.' };
    return { code: 50035, message: 'Invalid Form Body', errors: { content: { _errors: [error] } } };
  }
  if (!content.trim() && files === 0) return { code: 50006, message: 'Cannot send an empty message' };
  return undefined;
}

function json(res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), ...headers });
  res.end(text);
}

function isoNow(): string {
  return new Date().toISOString();
}
