/**
 * A loopback fake of a Mattermost server, enough for the real @mattermost/client: the REST API under `/api/v4`
 * (users, channels, posts with threads and edits, posts since a time, file upload, info and download) and the
 * WebSocket at `/api/v4/websocket` (authentication challenge, hello, `posted` events with sequence numbers, ping,
 * typing). It keeps each channel's posts as users see them (edits applied), refuses what Mattermost refuses (a wrong
 * token, over 16,383 characters, an empty post, a root that is not a root of that channel), and can fail on purpose:
 * `drop()` cuts every connection and refuses new ones until `restore()` (posts written meanwhile are stored, as a
 * server stores them, but reach no one).
 */
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { type WebSocket, WebSocketServer } from 'ws';
import { jsonBody, readRequest } from '../../helpers/multipart.js';

export const BOT = { id: 'botuserid0000000000000000a', username: 'nanobot' };
export const TEAM_ID = 'team00000000000000000000t1';
export const MAX_POST_RUNES = 16383;

export interface FakeFile {
  id: string;
  name: string;
  size: number;
  mime_type: string;
  content: Buffer;
  channel_id: string;
}

export interface FakePost {
  id: string;
  create_at: number;
  update_at: number;
  delete_at: number;
  edit_at: number;
  user_id: string;
  channel_id: string;
  root_id: string;
  message: string;
  type: string;
  props: Record<string, unknown>;
  file_ids: string[];
  metadata: { files?: Omit<FakeFile, 'content'>[] };
}

export interface UserPost {
  channelId: string;
  /** A direct message (default: when channelId is the user's id), a public channel, or a group message. */
  kind?: 'dm' | 'channel' | 'group';
  user: { id: string; username: string };
  text: string;
  id?: string;
  rootId?: string;
  /** The team of a channel (default: the test team). */
  teamId?: string;
  files?: { name: string; mimeType: string; content: Buffer }[];
}

interface FakeChannel {
  id: string;
  type: 'O' | 'P' | 'D' | 'G';
  team_id: string;
  last_post_at: number;
}

export interface Call {
  method: string;
  path: string;
  body: Record<string, unknown>;
}

export async function startFakeMattermost(options: { token?: string } = {}) {
  const token = options.token ?? 'fake-mattermost-token';
  const users = new Map<string, { id: string; username: string; first_name: string; last_name: string }>([
    [BOT.id, { ...BOT, first_name: 'Nano', last_name: 'Bot' }],
  ]);
  const channels = new Map<string, FakeChannel>();
  const posts = new Map<string, FakePost>();
  const files = new Map<string, FakeFile>();
  const calls: Call[] = [];
  const redirects = new Map<string, string>();
  const typing: { channelId: string; parentId: string }[] = [];
  const sockets = new Set<Socket>();
  const live = new Set<{ ws: WebSocket; seq: number }>();
  let down = false;
  let counter = 0;
  let lastTime = 0;
  const newId = (prefix: string) => `${prefix}${String(++counter).padStart(26 - prefix.length, '0')}`;
  const now = () => {
    lastTime = Math.max(Date.now(), lastTime + 1);
    return lastTime;
  };

  const pendingPosts = new Map<string, { postId: string; at: number }>();
  let answersToLose = 0;
  const server = http.createServer((req, res) => {
    if (down) return void req.socket.destroy();
    void handle(req, res).catch((err: unknown) => {
      if (!res.headersSent) fail(res, 500, String(err));
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  const wss = new WebSocketServer({ noServer: true });
  server.on('upgrade', (req, socket, head) => {
    if (down || !req.url?.startsWith('/api/v4/websocket')) return void socket.destroy();
    wss.handleUpgrade(req, socket, head, (ws) => accept(ws));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  function accept(ws: WebSocket): void {
    const connection = { ws, seq: 0 };
    let authed = false;
    ws.on('message', (raw) => {
      const frame = JSON.parse(String(raw)) as { action?: string; seq?: number; data?: Record<string, unknown> };
      const reply = (body: Record<string, unknown>) => ws.send(JSON.stringify({ ...body, seq_reply: frame.seq }));
      if (frame.action === 'authentication_challenge') {
        if (frame.data?.token !== token) {
          reply({ status: 'FAIL', error: { id: 'api.web_socket_router.not_authenticated.app_error' } });
          ws.close(1008);
          return;
        }
        authed = true;
        reply({ status: 'OK' });
        live.add(connection);
        send(connection, 'hello', { connection_id: newId('conn'), server_version: '11.9.0' }, {});
        return;
      }
      if (!authed) return;
      if (frame.action === 'ping') reply({ status: 'OK', data: { text: 'pong' } });
      else if (frame.action === 'user_typing') {
        typing.push({ channelId: String(frame.data?.channel_id), parentId: String(frame.data?.parent_id ?? '') });
        reply({ status: 'OK' });
      } else reply({ status: 'OK' });
    });
    ws.on('close', () => live.delete(connection));
  }

  function send(
    connection: { ws: WebSocket; seq: number },
    event: string,
    data: Record<string, unknown>,
    broadcast: Record<string, unknown>,
  ): void {
    const body = {
      event,
      data,
      broadcast: { omit_users: null, user_id: '', channel_id: '', team_id: '', ...broadcast },
    };
    connection.ws.send(JSON.stringify({ ...body, seq: connection.seq++ }));
  }

  function broadcastPost(post: FakePost, senderName: string): void {
    const channel = channels.get(post.channel_id);
    const mentions = post.message.includes(`@${BOT.username}`) ? JSON.stringify([BOT.id]) : undefined;
    for (const connection of live) {
      send(
        connection,
        'posted',
        {
          channel_type: channel?.type ?? 'O',
          channel_display_name: post.channel_id,
          sender_name: `@${senderName}`,
          team_id: channel?.team_id ?? '',
          post: JSON.stringify(post),
          ...(mentions ? { mentions } : {}),
        },
        { channel_id: post.channel_id, team_id: channel?.team_id ?? '' },
      );
    }
  }

  function channelFor(id: string, type: FakeChannel['type'], teamId: string): FakeChannel {
    let channel = channels.get(id);
    if (!channel) {
      channel = { id, type, team_id: type === 'D' || type === 'G' ? '' : teamId, last_post_at: 0 };
      channels.set(id, channel);
    }
    return channel;
  }

  function storePost(fields: Partial<FakePost> & Pick<FakePost, 'user_id' | 'channel_id' | 'message'>): FakePost {
    const time = now();
    const fileIds = fields.file_ids ?? [];
    const infos = fileIds.map((id) => files.get(id)).filter((f): f is FakeFile => f !== undefined);
    const post: FakePost = {
      id: fields.id ?? newId('post'),
      create_at: time,
      update_at: time,
      delete_at: 0,
      edit_at: 0,
      root_id: fields.root_id ?? '',
      type: '',
      props: fields.props ?? {},
      ...fields,
      file_ids: fileIds,
      metadata: infos.length ? { files: infos.map(({ content: _, ...info }) => info) } : {},
    };
    posts.set(post.id, post);
    const channel = channels.get(post.channel_id);
    if (channel) channel.last_post_at = time;
    return post;
  }

  function postList(list: FakePost[]) {
    const sorted = [...list].sort((a, b) => b.create_at - a.create_at);
    return {
      order: sorted.map((p) => p.id),
      posts: Object.fromEntries(sorted.map((p) => [p.id, p])),
      next_post_id: '',
      prev_post_id: '',
    };
  }

  async function handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const address = new URL(req.url ?? '/', url);
    const path = address.pathname;
    const { raw, parts } = await readRequest(req);
    const body = parts ? {} : jsonBody(raw);
    calls.push({ method: req.method ?? 'GET', path, body });
    if (!/^bearer /i.test(req.headers.authorization ?? '') || req.headers.authorization?.slice(7) !== token) {
      return fail(res, 401, 'Invalid or expired session, please login again.');
    }
    const route = `${req.method} ${path.replace(/^\/api\/v4/, '')}`;
    const param = (pattern: RegExp) => pattern.exec(route)?.[1];
    if (route === 'GET /users/me') return json(res, 200, users.get(BOT.id));
    if (route === 'GET /users/me/channels') return json(res, 200, [...channels.values()]);
    const userId = param(/^GET \/users\/([^/]+)$/);
    if (userId !== undefined) {
      const user = users.get(userId);
      return user ? json(res, 200, user) : fail(res, 404, 'Unable to find the user.');
    }
    const channelId = param(/^GET \/channels\/([^/]+)$/);
    if (channelId !== undefined) {
      const channel = channels.get(channelId);
      return channel ? json(res, 200, channel) : fail(res, 404, 'Unable to find the channel.');
    }
    const postsOf = param(/^GET \/channels\/([^/]+)\/posts$/);
    if (postsOf !== undefined) {
      const since = Number(address.searchParams.get('since') ?? 0);
      const inChannel = [...posts.values()].filter((p) => p.channel_id === postsOf && p.update_at >= since);
      return json(res, 200, postList(inChannel));
    }
    if (route === 'POST /posts') return createPost(res, body);
    const patchId = param(/^PUT \/posts\/([^/]+)\/patch$/);
    if (patchId !== undefined) {
      const post = posts.get(patchId);
      if (!post || post.user_id !== BOT.id) return fail(res, 403, 'You do not have the appropriate permissions.');
      const message = String(body.message ?? '');
      if ([...message].length > MAX_POST_RUNES) return fail(res, 400, 'Post message is too long.');
      Object.assign(post, { message, edit_at: now(), update_at: lastTime });
      return json(res, 200, post);
    }
    const threadId = param(/^GET \/posts\/([^/]+)\/thread$/);
    if (threadId !== undefined) {
      const root = posts.get(threadId);
      if (!root) return fail(res, 404, 'Unable to find the post.');
      return json(res, 200, postList([...posts.values()].filter((p) => p.id === root.id || p.root_id === root.id)));
    }
    const filesOf = param(/^GET \/posts\/([^/]+)\/files\/info$/);
    if (filesOf !== undefined) {
      const post = posts.get(filesOf);
      return json(res, 200, post?.metadata.files ?? []);
    }
    if (route === 'POST /files') {
      const channelId = parts?.find((p) => p.name === 'channel_id')?.content.toString() ?? '';
      if (!channels.has(channelId)) return fail(res, 403, 'You do not have the appropriate permissions.');
      const infos = (parts ?? [])
        .filter((p) => p.name === 'files' && p.filename !== undefined)
        .map((p) => {
          const file: FakeFile = {
            id: newId('file'),
            name: p.filename ?? 'file',
            size: p.content.length,
            mime_type: 'application/octet-stream',
            content: p.content,
            channel_id: channelId,
          };
          files.set(file.id, file);
          const { content: _, ...info } = file;
          return info;
        });
      return json(res, 201, { file_infos: infos, client_ids: [] });
    }
    const fileId = param(/^GET \/files\/([^/]+)$/);
    const redirect = fileId === undefined ? undefined : redirects.get(fileId);
    if (redirect) {
      res.writeHead(302, { Location: redirect });
      return void res.end();
    }
    if (fileId !== undefined) {
      const file = files.get(fileId);
      if (!file) return fail(res, 404, 'Unable to find the file.');
      res.writeHead(200, { 'Content-Type': file.mime_type, 'Content-Length': file.size });
      return void res.end(file.content);
    }
    return fail(res, 404, `no route ${route}`);
  }

  function createPost(res: http.ServerResponse, body: Record<string, unknown>): void {
    const problem = postProblem(body);
    if (problem) {
      fail(res, problem.status, problem.message);
      return;
    }
    // As Mattermost: a post with a pending_post_id seen in the last 30 s is the one stored then, not a new one.
    const pendingId = typeof body.pending_post_id === 'string' ? body.pending_post_id : '';
    const seen = pendingId ? pendingPosts.get(pendingId) : undefined;
    if (seen && Date.now() - seen.at < 30_000 && posts.has(seen.postId)) {
      json(res, 201, posts.get(seen.postId));
      return;
    }
    const fileIds = Array.isArray(body.file_ids) ? body.file_ids.map(String) : [];
    const post = storePost({
      user_id: BOT.id,
      channel_id: String(body.channel_id),
      message: String(body.message ?? ''),
      root_id: typeof body.root_id === 'string' ? body.root_id : '',
      file_ids: fileIds,
    });
    if (pendingId) pendingPosts.set(pendingId, { postId: post.id, at: Date.now() });
    // The connection dropping after the server stored the post: the bot never hears that it did.
    if (answersToLose > 0) {
      answersToLose -= 1;
      res.socket?.destroy();
      return;
    }
    json(res, 201, post);
  }

  /** What Mattermost refuses in a new post, or undefined. */
  function postProblem(body: Record<string, unknown>): { status: number; message: string } | undefined {
    const channelId = String(body.channel_id ?? '');
    const message = String(body.message ?? '');
    const fileIds = Array.isArray(body.file_ids) ? body.file_ids.map(String) : [];
    const rootId = typeof body.root_id === 'string' ? body.root_id : '';
    if (!channels.has(channelId)) return { status: 403, message: 'You do not have the appropriate permissions.' };
    if (!message.trim() && fileIds.length === 0) return { status: 400, message: 'Invalid message.' };
    if ([...message].length > MAX_POST_RUNES) return { status: 400, message: 'Post message is too long.' };
    const root = rootId ? posts.get(rootId) : undefined;
    if (rootId && (!root || root.channel_id !== channelId || root.root_id))
      return { status: 400, message: 'Invalid RootId parameter.' };
    if (fileIds.some((id) => files.get(id)?.channel_id !== channelId))
      return { status: 400, message: 'Invalid file ids.' };
    return undefined;
  }

  return {
    url,
    token,
    calls,
    typing,
    addUser(id: string, username: string): void {
      users.set(id, { id, username, first_name: '', last_name: '' });
    },
    /** A user writes; returns the post id. While dropped, the post is stored but no event goes out. */
    userSays(input: UserPost): string {
      users.set(input.user.id, { ...input.user, first_name: '', last_name: '' });
      const kind = input.kind ?? (input.channelId === input.user.id ? 'dm' : 'channel');
      const type = kind === 'dm' ? 'D' : kind === 'group' ? 'G' : 'O';
      channelFor(input.channelId, type, input.teamId ?? TEAM_ID);
      const fileIds = (input.files ?? []).map((f) => {
        const file = {
          id: newId('file'),
          name: f.name,
          size: f.content.length,
          mime_type: f.mimeType,
          content: f.content,
          channel_id: input.channelId,
        };
        files.set(file.id, file);
        return file.id;
      });
      const post = storePost({
        ...(input.id ? { id: input.id } : {}),
        user_id: input.user.id,
        channel_id: input.channelId,
        message: input.text,
        root_id: input.rootId ?? '',
        file_ids: fileIds,
      });
      if (!down) broadcastPost(post, input.user.username);
      return post.id;
    },
    /** Sends any event to every live connection (hostile or malformed ones included). */
    injectEvent(event: string, data: Record<string, unknown>, broadcast: Record<string, unknown> = {}): void {
      for (const connection of live) send(connection, event, data, broadcast);
    },
    /** GET /files/<id> answers with a redirect to `location`. */
    redirectFile(id: string, location: string): void {
      redirects.set(id, location);
    },
    /** Makes a channel known (its type and team) without a post, as a hostile event may name one. */
    addChannel(id: string, type: FakeChannel['type'], teamId = TEAM_ID): void {
      channelFor(id, type, teamId);
    },
    /** The bot's posts in a channel as users see them now (edits applied), oldest first. */
    messagesIn(channelId: string): FakePost[] {
      return [...posts.values()]
        .filter((p) => p.channel_id === channelId && p.user_id === BOT.id)
        .sort((a, b) => a.create_at - b.create_at);
    },
    fileContent(id: string): Buffer | undefined {
      return files.get(id)?.content;
    },
    fileInfo(id: string): Omit<FakeFile, 'content'> | undefined {
      const file = files.get(id);
      if (!file) return undefined;
      const { content: _, ...info } = file;
      return info;
    },
    callsTo(method: string, pattern: RegExp): Call[] {
      return calls.filter((c) => c.method === method && pattern.test(c.path));
    },
    /** Live WebSocket connections (authenticated). */
    connections(): number {
      return live.size;
    },
    /** The next `count` posts the bot creates are stored, but their answers are lost with the connection. */
    loseNextPostAnswers(count = 1): void {
      answersToLose = count;
    },
    drop(): void {
      down = true;
      for (const { ws } of live) ws.terminate();
      for (const socket of sockets) socket.destroy();
    },
    restore(): void {
      down = false;
    },
    async close(): Promise<void> {
      down = true;
      for (const { ws } of live) ws.terminate();
      for (const socket of sockets) socket.destroy();
      wss.close();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

export type FakeMattermost = Awaited<ReturnType<typeof startFakeMattermost>>;

function json(res: http.ServerResponse, status: number, body: unknown): void {
  // Client4 parses a body as JSON only when Content-Type is exactly application/json, as the server sends it.
  res.writeHead(status, { 'Content-Type': 'application/json' });
  res.end(JSON.stringify(body));
}

function fail(res: http.ServerResponse, status: number, message: string): void {
  json(res, status, { id: 'api.fake.error', message, detailed_error: '', request_id: 'r1', status_code: status });
}
