/**
 * Mattermost through @mattermost/client: the WebSocketClient brings `posted` events from direct messages, group
 * messages and channels (of `teamId`, when set); replies go through Client4 as Markdown posts (streamed by editing the
 * post), in the thread of the user's post; files both ways; "typing…" over the WebSocket.
 *
 * Connection: the SDK would reconnect on its own, but reconnecting is the ChannelManager's job (backoff, /health
 * shows it), so a closed WebSocket is reported and the SDK's retry is cancelled. Each new connection then asks the
 * REST API for the posts written meanwhile (in channels seen before, and in any channel with newer posts), and hands
 * them over in order; the framework drops the ones already answered (same channel + post id).
 */
import { randomBytes } from 'node:crypto';
import type { Client4, WebSocketClient, WebSocketMessage } from '@mattermost/client';
import { errorMessage } from '../../util/errors.js';
import type { Logger } from '../../util/log.js';
import type { ChannelCapabilities } from '../channel.js';
import { RecentIds } from '../dedup.js';
import type {
  ChatPlatform,
  IncomingMessage,
  OutgoingFile,
  OutgoingPart,
  PlatformLink,
  ReplyTarget,
} from '../platform.js';
import { Directory } from './directory.js';
import { type MattermostSdk, type MattermostSettings, serverRoot, websocketUrl } from './index.js';
import {
  addressesAgent,
  type Bot,
  ChannelCursors,
  isUserPost,
  type MattermostPost,
  mentionsBot,
  type PostedEvent,
  postListSchema,
  postsAfter,
  readPostedEvent,
  threadContextLines,
  threadOf,
  withoutBotMention,
} from './posts.js';
import {
  describeConnectError,
  describeSendError,
  REQUEST_TIMEOUT_MS,
  toAttachment,
  uploadFile,
  withoutGroupPings,
  withTimeout,
} from './rest.js';
import { provideWebSocketGlobals, QuietSocket, quietly } from './sdk-socket.js';

const CONNECT_TIMEOUT_MS = 30_000;
/** The SDK's own retry waits this long; it is cancelled long before. */
const SDK_RETRY_MS = 3_600_000;
/** Catching up starts this much before the connection was lost (clocks differ; duplicates are dropped). */
const CATCH_UP_OVERLAP_MS = 60_000;
/** Mattermost remembers a pending_post_id for 30 s; a retry after that is a new post anyway. */
const PENDING_POST_REUSE_MS = 25_000;
const MAX_UNCONFIRMED = 100;

export interface MattermostPlatformOptions {
  sdk: MattermostSdk;
  settings: () => MattermostSettings;
  log: Logger;
}

interface Connection {
  client: Client4;
  socket: WebSocketClient;
  sockets: QuietSocket[];
  root: string;
  token: string;
  /** We closed it, or it is being replaced: its events and its close are not ours any more. */
  closing: boolean;
}

export class MattermostPlatform implements ChatPlatform {
  readonly capabilities: ChannelCapabilities = {
    // Mattermost accepts 16,383 characters; parts stay at 4,000 so long answers read as several posts.
    maxMessageLength: 4000,
    markup: 'markdown',
    editMessages: true,
    media: true,
    threads: true,
    buttons: false,
  };
  private connection?: Connection;
  /** Bumped by `disconnect`: a connect still under way when it is called gives up instead of going live. */
  private generation = 0;
  private bot: Bot = { id: '', username: '' };
  /** Kept across reconnects, so a new connection knows where each channel left off. */
  private readonly cursors = new ChannelCursors();
  private readonly directory = new Directory();
  private readonly threadsKnown = new RecentIds(5000);
  private readonly queues = new Map<string, Promise<void>>();
  /** Posts sent whose answer has not come (by chat, thread and text): their pending_post_id, for a retry. */
  private readonly unconfirmed = new Map<string, { id: string; at: number }>();
  private startedAt?: number;
  /** When (our clock) the last live connection ended: the next one catches up from there. */
  private lostAt?: number;

  constructor(private readonly options: MattermostPlatformOptions) {}

  async connect(link: PlatformLink): Promise<void> {
    provideWebSocketGlobals();
    const generation = ++this.generation;
    const settings = this.options.settings();
    const root = serverRoot(settings.serverUrl);
    const client = new this.options.sdk.Client4();
    client.setUrl(root);
    client.setToken(settings.token);
    client.setIncludeCookies(false);
    const me = await withTimeout(client.getMe(), REQUEST_TIMEOUT_MS, 'users/me').catch((err: unknown) => {
      throw describeConnectError(err, root);
    });
    this.bot = { id: me.id, username: me.username };
    // The first connection starts fresh; every later one first catches up on what it missed.
    const reconnecting = this.startedAt !== undefined;
    const connection = this.openSocket(client, root, settings.token, link, (opened) => {
      if (reconnecting) this.catchUp(opened, link);
    });
    try {
      await withTimeout(connection.ready, CONNECT_TIMEOUT_MS, 'the WebSocket');
    } catch (err) {
      this.retire(connection.connection);
      throw new Error(`cannot open the Mattermost WebSocket: ${errorMessage(err)}`);
    }
    if (generation !== this.generation) {
      this.retire(connection.connection);
      throw new Error('mattermost was disconnected while connecting');
    }
    this.connection = connection.connection;
    link.log.info(`connected as @${me.username} to ${root}`);
    this.startedAt ??= Date.now();
  }

  async disconnect(): Promise<void> {
    this.generation += 1;
    const connection = this.connection;
    this.connection = undefined;
    if (!connection) return;
    this.lostAt ??= Date.now();
    this.retire(connection);
  }

  async sendText(target: ReplyTarget, part: OutgoingPart): Promise<string> {
    const { client } = this.requireConnection();
    const message = withoutGroupPings(part.text);
    const pending = this.pendingPostId(target, message);
    const post = await withTimeout(
      client.createPost({
        channel_id: target.chatId,
        message,
        pending_post_id: pending.id,
        ...(target.threadId ? { root_id: target.threadId } : {}),
      }),
      REQUEST_TIMEOUT_MS,
      'a post',
    ).catch((err: unknown) => {
      throw describeSendError('a post', target.chatId, err);
    });
    this.unconfirmed.delete(pending.key);
    return post.id;
  }

  /**
   * A post whose answer was lost (the connection dropped after the server stored it) is sent again by the retry:
   * with the same `pending_post_id`, which Mattermost de-duplicates for 30 s, so the chat shows it once.
   */
  private pendingPostId(target: ReplyTarget, message: string): { key: string; id: string } {
    const key = `${target.chatId}\n${target.threadId ?? ''}\n${message}`;
    const now = Date.now();
    const earlier = this.unconfirmed.get(key);
    if (earlier && now - earlier.at < PENDING_POST_REUSE_MS) return { key, id: earlier.id };
    const id = `${this.bot.id || 'nanobot'}:${now}${randomBytes(4).toString('hex')}`;
    this.unconfirmed.set(key, { id, at: now });
    if (this.unconfirmed.size > MAX_UNCONFIRMED) this.unconfirmed.delete(this.unconfirmed.keys().next().value ?? key);
    return { key, id };
  }

  async editText(target: ReplyTarget, messageId: string, part: OutgoingPart): Promise<void> {
    const { client } = this.requireConnection();
    await withTimeout(
      client.patchPost({ id: messageId, message: withoutGroupPings(part.text) }),
      REQUEST_TIMEOUT_MS,
      'an edit',
    ).catch((err: unknown) => {
      throw describeSendError('an edit', target.chatId, err);
    });
  }

  async sendFile(target: ReplyTarget, file: OutgoingFile): Promise<void> {
    const { client } = this.requireConnection();
    try {
      const fileId = await uploadFile(client, target.chatId, file.path, file.name);
      await withTimeout(
        client.createPost({
          channel_id: target.chatId,
          message: '',
          file_ids: [fileId],
          ...(target.threadId ? { root_id: target.threadId } : {}),
        }),
        REQUEST_TIMEOUT_MS,
        'a file post',
      );
    } catch (err) {
      throw describeSendError(`the file ${file.name}`, target.chatId, err);
    }
  }

  async sendTyping(target: ReplyTarget): Promise<void> {
    this.connection?.socket.userTyping(target.chatId, target.threadId ?? '');
  }

  private requireConnection(): Connection {
    if (!this.connection) throw new Error('mattermost is not connected');
    return this.connection;
  }

  /** A WebSocketClient whose `ready` resolves at the server's hello; a close before that rejects it. */
  private openSocket(
    client: Client4,
    root: string,
    token: string,
    link: PlatformLink,
    onHello: (c: Connection) => void,
  ) {
    const sockets: QuietSocket[] = [];
    const socket = new this.options.sdk.WebSocketClient({
      newWebSocketFn: (url) => {
        const raw = new QuietSocket(url, link.log);
        sockets.push(raw);
        // The SDK's type is the DOM WebSocket; it uses only what QuietSocket has.
        return raw as unknown as WebSocket;
      },
      minWebSocketRetryTime: SDK_RETRY_MS,
      maxWebSocketRetryTime: SDK_RETRY_MS,
      reconnectJitterRange: 0,
    });
    const connection: Connection = { client, socket, sockets, root, token, closing: false };
    let hello = false;
    const ready = new Promise<void>((resolve, reject) => {
      socket.addMessageListener((message) => {
        if (connection.closing) return;
        if (message.event === 'hello') {
          hello = true;
          onHello(connection);
          resolve();
          return;
        }
        this.onEvent(connection, link, message);
      });
      socket.addCloseListener(() => {
        // The SDK schedules its own retry right after its close listeners: cancel it once that is done.
        setImmediate(() => quietly(link.log, () => socket.close()));
        if (!hello) reject(new Error('the connection closed before the server said hello'));
        if (connection.closing) return;
        connection.closing = true;
        if (this.connection !== connection) return;
        this.lostAt = Date.now();
        link.failed(new Error('lost the connection to the Mattermost WebSocket'));
      });
    });
    quietly(link.log, () => socket.initialize(websocketUrl(root), token));
    return { connection, ready };
  }

  private retire(connection: Connection): void {
    connection.closing = true;
    quietly(this.options.log, () => connection.socket.close());
    for (const raw of connection.sockets) {
      if (raw.readyState === 0 || raw.readyState === 1) raw.close();
    }
  }

  private onEvent(connection: Connection, link: PlatformLink, message: WebSocketMessage): void {
    if (message.event !== 'posted') return;
    const posted = readPostedEvent(message);
    if (!posted || !isUserPost(posted.post, this.bot.id)) return;
    this.cursors.saw(posted.post);
    this.enqueue(posted.post.channel_id, () => this.deliver(connection, link, posted), link.log);
  }

  /** One post → the framework, if the settings (team, direct messages, channel or thread policy) say it is for us. */
  private async deliver(connection: Connection, link: PlatformLink, posted: PostedEvent): Promise<void> {
    const { post } = posted;
    const settings = this.options.settings();
    const direct = posted.channelType === 'D';
    if (direct && !settings.dm.enabled) return;
    if (!direct && settings.teamId) {
      const teamId = posted.teamId || (await this.directory.channel(connection.client, post.channel_id)).teamId;
      if (teamId !== settings.teamId) return;
    }
    const mentioned = direct || mentionsBot(post.message, this.bot, posted.mentions);
    if (!direct && !addressesAgent(settings, post, mentioned)) {
      link.log.debug(`ignored a post in ${post.channel_id}: not addressed to the agent (groupPolicy)`);
      return;
    }
    const thread = threadOf(post, direct, settings.replyInThread);
    let text = withoutBotMention(post.message, this.bot);
    if (post.root_id && thread) text = await this.withThreadContext(connection, post, thread, text, link.log);
    if (thread) this.threadsKnown.seen(`${post.channel_id}:${thread}`);
    const user = await this.directory.user(connection.client, post.user_id, link.log);
    const incoming: IncomingMessage = {
      id: post.id,
      chatId: post.channel_id,
      sender: { id: post.user_id, ...user },
      chatType: direct ? 'direct' : 'group',
      text,
      mentioned: true,
      ...(thread && settings.replyInThread ? { threadId: thread } : {}),
      ...(thread ? { sessionKey: `mattermost:${post.channel_id}:${thread}` } : {}),
      attachments: (await this.filesOf(connection, post)).map((file) =>
        toAttachment(file, connection.root, connection.token),
      ),
      metadata: {
        mattermost: {
          post_id: post.id,
          root_id: post.root_id,
          channel_type: posted.channelType,
          ...(thread ? { thread_ts: thread } : {}),
        },
      },
    };
    await link.receive(incoming);
  }

  /**
   * The first time the agent is addressed inside a thread it did not see start, it gets the thread so far (it would
   * otherwise answer "this" without knowing what "this" is).
   */
  private async withThreadContext(
    connection: Connection,
    post: MattermostPost,
    thread: string,
    text: string,
    log: Logger,
  ): Promise<string> {
    const settings = this.options.settings();
    const key = `${post.channel_id}:${thread}`;
    if (!settings.includeThreadContext || text.startsWith('/') || this.threadsKnown.seen(key)) return text;
    try {
      const list = postListSchema.parse(
        await withTimeout(connection.client.getPostThread(thread), REQUEST_TIMEOUT_MS, 'the thread'),
      );
      const names = new Map<string, string>();
      for (const id of new Set(Object.values(list.posts).map((p) => p.user_id))) {
        const username = (await this.directory.user(connection.client, id, log)).username;
        if (username) names.set(id, username);
      }
      const lines = threadContextLines(list, this.bot, post.id, names).slice(-settings.threadContextLimit);
      if (lines.length === 0) return text;
      return `[Mattermost thread so far]\n${lines.join('\n')}\n\n[Current message]\n${text}`;
    } catch (err) {
      log.debug(`thread context for ${key} unavailable: ${errorMessage(err)}`);
      return text;
    }
  }

  private async filesOf(connection: Connection, post: MattermostPost) {
    if (post.metadata?.files?.length) return post.metadata.files;
    if (!post.file_ids?.length) return [];
    const infos = await withTimeout(connection.client.getFileInfosForPost(post.id), REQUEST_TIMEOUT_MS, 'file info');
    return infos.map((info) => ({ id: info.id, name: info.name, mime_type: info.mime_type, size: info.size }));
  }

  /**
   * After a reconnect: the posts written meanwhile, per channel, in order. Called at the server's hello, before any
   * later event is handled, so each channel's missed posts queue up ahead of its new ones, from where it left off.
   */
  private catchUp(connection: Connection, link: PlatformLink): void {
    const since = Math.max(this.startedAt ?? 0, (this.lostAt ?? Date.now()) - CATCH_UP_OVERLAP_MS);
    this.lostAt = undefined;
    const known = new Set<string>();
    for (const channelId of this.cursors.channels()) {
      const cursor = this.cursors.get(channelId);
      known.add(channelId);
      this.enqueue(channelId, () => this.catchUpChannel(connection, link, channelId, since, cursor), link.log);
    }
    // Channels the bot has not heard from since it started (a first direct message) are found by their last post.
    const others = async () => {
      const channels = await withTimeout(connection.client.getAllTeamsChannels(), REQUEST_TIMEOUT_MS, 'channels');
      for (const channel of channels) {
        this.directory.remember(channel.id, channel);
        if (known.has(channel.id) || channel.last_post_at < since) continue;
        this.enqueue(channel.id, () => this.catchUpChannel(connection, link, channel.id, since), link.log);
      }
    };
    others().catch((err: unknown) =>
      link.log.warn(`could not list the bot's channels to catch up: ${errorMessage(err)}`),
    );
  }

  private async catchUpChannel(
    connection: Connection,
    link: PlatformLink,
    channelId: string,
    since: number,
    cursor?: { id: string; createAt: number },
  ): Promise<void> {
    if (connection.closing) return;
    const after = cursor?.createAt ?? since;
    let posts: MattermostPost[];
    try {
      const list = postListSchema.parse(
        await withTimeout(connection.client.getPostsSince(channelId, after), REQUEST_TIMEOUT_MS, 'posts'),
      );
      posts = postsAfter(list, after, cursor?.id).filter((post) => isUserPost(post, this.bot.id));
    } catch (err) {
      link.log.warn(`could not fetch the posts written in ${channelId} while away: ${errorMessage(err)}`);
      return;
    }
    if (posts.length === 0) return;
    const info = await this.directory.channel(connection.client, channelId).catch(() => ({ type: '', teamId: '' }));
    for (const post of posts) {
      this.cursors.saw(post);
      await this.deliver(connection, link, { post, channelType: info.type, teamId: info.teamId, mentions: [] });
    }
    link.log.info(`caught up ${posts.length} post(s) in ${channelId} written while away`);
  }

  /** One queue per channel: posts of a channel reach the framework in order, channels do not wait for each other. */
  private enqueue(channelId: string, task: () => Promise<void>, log: Logger): void {
    const previous = this.queues.get(channelId) ?? Promise.resolve();
    const next = previous
      .then(task)
      .catch((err: unknown) => log.warn(`handling a post in ${channelId} failed: ${errorMessage(err)}`));
    this.queues.set(channelId, next);
    void next.then(() => {
      if (this.queues.get(channelId) === next) this.queues.delete(channelId);
    });
  }
}
