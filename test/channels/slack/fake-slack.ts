/**
 * A loopback fake of Slack for the real @slack/bolt in Socket Mode: the Web API under `/api/<method>` (form, JSON or
 * multipart bodies; the bot token for most methods, the app token for `apps.connections.open`), the Socket Mode
 * WebSocket at the URL `apps.connections.open` returns, the file upload URLs of files.uploadV2, and private file
 * downloads (an HTML login page without the bot token, as Slack answers).
 *
 * Events are delivered in envelopes and kept until Bolt acknowledges them; unacknowledged ones are delivered again
 * (with `retry_attempt` raised) on the next connection, as Slack retries. Each conversation keeps the bot's messages
 * as a user sees them (chat.update applied, thread_ts kept). `drop()` cuts every connection until `restore()`.
 *
 *   const slack = await startFakeSlack();
 *   slack.addUser('U1', 'alice');
 *   slack.userSays({ channel: 'D1', user: 'U1', text: 'hello', channelType: 'im' });
 *   // channels.slack = { botToken: slack.botToken, appToken: slack.appToken, apiBase: slack.apiBase, … }
 */
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { WebSocket, WebSocketServer } from 'ws';
import {
  type ApiCall,
  BOT,
  type BotPost,
  blockActionsPayload,
  type Envelope,
  eventCallback,
  json,
  multipartFile,
  parseParams,
  readBody,
  slashCommandPayload,
  type UserMessage,
} from './fake-slack-wire.js';

export type { ApiCall, BotPost, UserFile, UserMessage } from './fake-slack-wire.js';
export { BOT };

export async function startFakeSlack(options: { botToken?: string; appToken?: string } = {}) {
  const botToken = options.botToken ?? 'xoxb-test-token';
  const appToken = options.appToken ?? 'xapp-test-token';
  const posts = new Map<string, BotPost[]>();
  const userMessages: { channel: string; user: string; text: string; ts: string; threadTs?: string }[] = [];
  const users = new Map<string, { name: string; teamId: string; realName: string }>();
  const files = new Map<string, { content: Buffer; name: string }>();
  const uploads = new Map<string, { name: string; content?: Buffer }>();
  const calls: ApiCall[] = [];
  const failures = new Map<string, string[]>();
  const pending: Envelope[] = [];
  const sockets = new Set<Socket>();
  const live = new Set<WebSocket>();
  const acks: string[] = [];
  let down = false;
  let clock = 1_700_000_000;
  let counter = 0;
  const nextTs = () => `${clock++}.${String(++counter).padStart(6, '0')}`;

  const server = http.createServer((req, res) => {
    if (down) {
      req.socket.destroy();
      return;
    }
    void handle(req, res).catch((err: unknown) => {
      if (!res.headersSent) json(res, { ok: false, error: `fake_error: ${String(err)}` }, 500);
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  const wss = new WebSocketServer({ noServer: true });
  server.on('upgrade', (req, socket, head) => {
    if (down || !req.url?.startsWith('/link')) {
      socket.destroy();
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => connected(ws));
  });

  function connected(ws: WebSocket): void {
    live.add(ws);
    ws.on('close', () => live.delete(ws));
    ws.on('message', (raw) => {
      const message = JSON.parse(String(raw)) as { envelope_id?: string };
      if (!message.envelope_id) return;
      acks.push(message.envelope_id);
      const at = pending.findIndex((e) => e.envelope_id === message.envelope_id);
      if (at >= 0) pending.splice(at, 1);
    });
    const hello = { type: 'hello', num_connections: live.size, connection_info: { app_id: 'A1' } };
    ws.send(JSON.stringify({ ...hello, debug_info: { approximate_connection_time: 3600 } }));
    // Slack retries what was not acknowledged: on a new connection everything pending goes out again.
    for (const envelope of pending) {
      if (envelope.sent) envelope.retry_attempt += 1;
      deliver(envelope, ws);
    }
  }

  function deliver(envelope: Envelope, ws = [...live].at(-1)): void {
    if (!ws || ws.readyState !== WebSocket.OPEN) return;
    envelope.sent = true;
    const { sent: _sent, ...wire } = envelope;
    ws.send(JSON.stringify(wire));
  }

  function enqueue(type: string, payload: Record<string, unknown>): void {
    const envelope: Envelope = {
      envelope_id: `env-${++counter}`,
      type,
      retry_attempt: 0,
      retry_reason: '',
      accepts_response_payload: type !== 'events_api',
      payload,
    };
    pending.push(envelope);
    deliver(envelope);
  }

  function event(body: Record<string, unknown>): void {
    enqueue('events_api', eventCallback(body, `Ev${++counter}`));
  }

  async function handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://fake');
    const auth = req.headers.authorization ?? '';
    if (req.method === 'GET' && url.pathname.startsWith('/files-pri/')) {
      const file = files.get(url.pathname);
      if (auth !== `Bearer ${botToken}` || !file) {
        // Slack answers a missing or wrong token with its sign-in page, not an error status.
        res.writeHead(200, { 'content-type': 'text/html' });
        res.end('<!DOCTYPE html><html><body>Sign in to Slack</body></html>');
        return;
      }
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': file.content.length });
      res.end(file.content);
      return;
    }
    const body = await readBody(req);
    if (url.pathname.startsWith('/upload/')) {
      const upload = uploads.get(url.pathname.slice('/upload/'.length));
      if (!upload) return json(res, { ok: false }, 404);
      upload.content = multipartFile(body, req.headers['content-type'] ?? '') ?? body;
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end('OK - 1');
      return;
    }
    const method = /^\/api\/([\w.]+)$/.exec(url.pathname)?.[1];
    if (!method) return json(res, { ok: false, error: 'unknown_method' }, 404);
    const params = parseParams(body, req.headers['content-type'] ?? '');
    calls.push({ method, params });
    const token = auth.replace(/^Bearer /, '') || String(params.token ?? '');
    const expected = method === 'apps.connections.open' ? appToken : botToken;
    if (!token) return json(res, { ok: false, error: 'not_authed' });
    if (token !== expected) {
      const wrongType = token === botToken || token === appToken;
      return json(res, { ok: false, error: wrongType ? 'not_allowed_token_type' : 'invalid_auth' });
    }
    const failure = failures.get(method)?.shift();
    if (failure) return json(res, { ok: false, error: failure });
    json(res, api(method, params));
  }

  function api(method: string, params: Record<string, unknown>): Record<string, unknown> {
    switch (method) {
      case 'auth.test':
        return {
          ok: true,
          url: 'https://fake.slack.com/',
          team: 'Fake',
          user: BOT.name,
          team_id: BOT.teamId,
          ...ids(),
        };
      case 'apps.connections.open':
        return { ok: true, url: `${url.replace(/^http/, 'ws')}/link/?ticket=${++counter}` };
      case 'chat.postMessage': {
        const text = String(params.text ?? '');
        if (!text.trim() && !params.blocks) return { ok: false, error: 'no_text' };
        if (text.length > 40_000) return { ok: false, error: 'msg_too_long' };
        const channel = String(params.channel);
        const post: BotPost = { ts: nextTs(), channel, text, edits: 0 };
        if (params.thread_ts) post.threadTs = String(params.thread_ts);
        if (params.blocks) post.blocks = params.blocks as unknown[];
        chatOf(channel).push(post);
        return { ok: true, channel, ts: post.ts, message: { type: 'message', text, user: BOT.userId, ts: post.ts } };
      }
      case 'chat.update': {
        const text = String(params.text ?? '');
        if (text.length > 40_000) return { ok: false, error: 'msg_too_long' };
        const post = chatOf(String(params.channel)).find((p) => p.ts === String(params.ts));
        if (!post) return { ok: false, error: 'message_not_found' };
        post.text = text;
        post.edits += 1;
        if (params.blocks) post.blocks = params.blocks as unknown[];
        return { ok: true, channel: post.channel, ts: post.ts, text };
      }
      case 'conversations.open':
        return { ok: true, channel: { id: `D${String(params.users).replace(/^[UW]/, '')}` } };
      case 'conversations.replies': {
        const thread = String(params.ts);
        const channel = String(params.channel);
        const fromUsers = userMessages
          .filter((m) => m.channel === channel && (m.ts === thread || m.threadTs === thread))
          .map((m) => ({ type: 'message', user: m.user, text: m.text, ts: m.ts }));
        const fromBot = chatOf(channel)
          .filter((p) => p.threadTs === thread)
          .map((p) => ({ type: 'message', user: BOT.userId, bot_id: BOT.botId, text: p.text, ts: p.ts }));
        const messages = [...fromUsers, ...fromBot].sort((a, b) => Number(a.ts) - Number(b.ts));
        return { ok: true, messages: messages.slice(0, Number(params.limit ?? 100)) };
      }
      case 'users.info': {
        const user = users.get(String(params.user));
        if (!user) return { ok: false, error: 'user_not_found' };
        return {
          ok: true,
          user: { id: params.user, name: user.name, team_id: user.teamId, real_name: user.realName, profile: {} },
        };
      }
      case 'files.getUploadURLExternal': {
        const id = `F${++counter}`;
        uploads.set(id, { name: String(params.filename) });
        return { ok: true, upload_url: `${url}/upload/${id}`, file_id: id };
      }
      case 'files.completeUploadExternal': {
        const listed = (typeof params.files === 'string' ? JSON.parse(params.files) : params.files) as { id: string }[];
        const channel = String(params.channel_id ?? '');
        const done = listed.map(({ id }) => {
          const upload = uploads.get(id);
          return {
            id,
            name: upload?.name ?? '',
            size: upload?.content?.length ?? 0,
            content: upload?.content ?? Buffer.alloc(0),
          };
        });
        if (done.some((file) => !file.content.length)) return { ok: false, error: 'file_upload_incomplete' };
        const post: BotPost = {
          ts: nextTs(),
          channel,
          text: String(params.initial_comment ?? ''),
          edits: 0,
          files: done,
        };
        if (params.thread_ts) post.threadTs = String(params.thread_ts);
        chatOf(channel).push(post);
        return { ok: true, files: done.map(({ id, name }) => ({ id, title: name })) };
      }
      default:
        // reactions.add, …
        return { ok: true };
    }
  }

  function ids() {
    return { user_id: BOT.userId, bot_id: BOT.botId };
  }

  function chatOf(channel: string): BotPost[] {
    let chat = posts.get(channel);
    if (!chat) {
      chat = [];
      posts.set(channel, chat);
    }
    return chat;
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  return {
    url,
    apiBase: `${url}/api`,
    botToken,
    appToken,
    calls,
    acks,
    addUser(id: string, name: string, teamId = BOT.teamId): void {
      users.set(id, { name, teamId, realName: `${name} (real)` });
    },
    /** Delivers a user's message as Slack would (a `message` event; `app_mention` too when asked); returns its ts. */
    userSays(message: UserMessage): string {
      const ts = message.ts ?? nextTs();
      const text = message.text ?? '';
      userMessages.push({
        channel: message.channel,
        user: message.user,
        text,
        ts,
        ...(message.threadTs ? { threadTs: message.threadTs } : {}),
      });
      const channelType = message.channelType ?? (message.channel.startsWith('D') ? 'im' : 'channel');
      const common = {
        channel: message.channel,
        user: message.user,
        text,
        ts,
        event_ts: ts,
        team: BOT.teamId,
        ...(message.threadTs ? { thread_ts: message.threadTs } : {}),
      };
      const shared = (message.files ?? []).map((file) => {
        const id = `F${++counter}`;
        const path = `/files-pri/${BOT.teamId}-${id}/${encodeURIComponent(file.name)}`;
        files.set(path, { content: file.content, name: file.name });
        return {
          id,
          name: file.name,
          title: file.name,
          mimetype: file.mimetype,
          size: file.content.length,
          url_private: `${url}${path}`,
          url_private_download: `${url}${path}?download=1`,
        };
      });
      const subtype = message.subtype ?? (shared.length ? 'file_share' : undefined);
      if (!message.onlyAppMention) {
        event({
          type: 'message',
          ...common,
          channel_type: channelType,
          ...(subtype ? { subtype } : {}),
          ...(shared.length ? { files: shared } : {}),
        });
      }
      if (message.appMention || message.onlyAppMention) event({ type: 'app_mention', ...common });
      return ts;
    },
    /** Delivers any Events API event as is. */
    rawEvent(body: Record<string, unknown>): void {
      event(body);
    },
    /** A slash command typed in a conversation (the app must have registered it). */
    slashCommand(input: { command: string; text: string; user: string; channel: string }): void {
      const userName = users.get(input.user)?.name ?? input.user;
      enqueue('slash_commands', slashCommandPayload({ ...input, userName, url, triggerId: `trigger-${++counter}` }));
    },
    /** A press on one of the bot's buttons. */
    pressButton(input: { user: string; channel: string; messageTs: string; value: string; threadTs?: string }): void {
      const post = chatOf(input.channel).find((p) => p.ts === input.messageTs);
      const elements = (post?.blocks ?? []).flatMap((block) => (block as { elements?: unknown[] }).elements ?? []);
      const button = (elements as { action_id: string; value: string }[]).find((e) => e.value === input.value);
      if (!button) throw new Error(`no button "${input.value}" on message ${input.messageTs}`);
      const username = users.get(input.user)?.name ?? input.user;
      const press = { ...input, username, actionId: button.action_id, triggerId: `trigger-${++counter}` };
      enqueue('interactive', blockActionsPayload({ ...press, actionTs: `${clock}.000001` }));
    },
    /** The bot's messages in a conversation, as shown now, in order (all threads; filter by `threadTs`). */
    messagesIn(channel: string): BotPost[] {
      return posts.get(channel) ?? [];
    },
    callsOf(method: string): ApiCall[] {
      return calls.filter((call) => call.method === method);
    },
    /** The next calls of `method` answer `{ ok: false, error }`, in order. */
    failNext(method: string, ...errors: string[]): void {
      failures.set(method, [...(failures.get(method) ?? []), ...errors]);
    },
    /** Slack asks the client to reconnect (it does so every few hours). */
    requestRefresh(): void {
      for (const ws of live) ws.send(JSON.stringify({ type: 'disconnect', reason: 'refresh_requested' }));
    },
    get connections(): number {
      return live.size;
    },
    get unacknowledged(): number {
      return pending.length;
    },
    drop(): void {
      down = true;
      for (const ws of live) ws.terminate();
      for (const socket of sockets) socket.destroy();
    },
    restore(): void {
      down = false;
    },
    async close(): Promise<void> {
      down = true;
      for (const ws of live) ws.terminate();
      for (const socket of sockets) socket.destroy();
      wss.close();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

export type FakeSlack = Awaited<ReturnType<typeof startFakeSlack>>;
