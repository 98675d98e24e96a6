/**
 * QQ through OneBot v11: private and group `message` events in, `send_msg` out (array segments, a `reply` segment to
 * quote), files as base64 segments, new group members as notices. Chat ids are upstream's: `private:<qq>` and
 * `group:<group number>`.
 *
 * Who is who: the bot's QQ number comes from get_login_info on each connection, and events for another account
 * (a multi-account implementation, or a forged self_id) are dropped; the sender is the event's top-level user_id.
 * After a reconnect the chats seen so far are caught up through get_friend_msg_history / get_group_msg_history
 * where the implementation has them (NapCat, go-cqhttp, Lagrange); others simply have nothing to catch up from.
 */
import { z } from 'zod';
import { errorMessage } from '../../util/errors.js';
import type { Logger } from '../../util/log.js';
import type { ChannelCapabilities } from '../channel.js';
import type {
  ChatPlatform,
  IncomingMessage,
  OutgoingFile,
  OutgoingPart,
  PlatformLink,
  ReplyTarget,
} from '../platform.js';
import { checkWsUrl, type NapcatSettings, plainTokenWarning } from './index.js';
import { fileSegment, toAttachment, trustedOrigin } from './media.js';
import { ActionFailed, eventSchema, type OneBotEvent, OneBotSocket, type WebSocketClass } from './onebot.js';
import { readMessage, type Segment, summarize, textSegment } from './segments.js';

const idLike = z.union([z.string(), z.number()]).transform(String);
export const loginSchema = z.looseObject({ user_id: idLike, nickname: z.string().optional() });
const sentSchema = z.looseObject({ message_id: idLike.optional() }).nullish();
const historySchema = z.looseObject({ messages: z.array(z.unknown()).default([]) }).nullish();
const memberSchema = z.looseObject({ card: z.string().optional(), nickname: z.string().optional() }).nullish();

/** Catching up starts this long before the connection was lost (clocks differ; duplicates are dropped). */
const CATCH_UP_OVERLAP_S = 60;
const HISTORY_COUNT = 20;

export interface NapcatPlatformOptions {
  WebSocket: WebSocketClass;
  settings: () => NapcatSettings;
  log: Logger;
}

interface Chat {
  kind: 'private' | 'group';
  id: string;
}

export class NapcatPlatform implements ChatPlatform {
  readonly capabilities: ChannelCapabilities = {
    // QQ takes a few thousand characters per message; long answers arrive as several.
    maxMessageLength: 3000,
    markup: 'plain',
    editMessages: false,
    media: true,
    threads: false,
    buttons: false,
  };
  private socket?: OneBotSocket;
  private selfId = '';
  private origin = '';
  private generation = 0;
  /** Ids of the bot's own messages: a reply to one of them addresses the bot. */
  private readonly sent = new Set<string>();
  /** Kept across reconnects: the chats to catch up on. */
  private readonly chats = new Map<string, Chat>();
  private readonly queues = new Map<string, Promise<void>>();
  private lostAt?: number;
  private warned = false;

  constructor(private readonly options: NapcatPlatformOptions) {}

  async connect(link: PlatformLink): Promise<void> {
    const generation = ++this.generation;
    const settings = this.options.settings();
    const url = checkWsUrl(settings.wsUrl).href;
    const warning = plainTokenWarning(settings);
    if (warning && !this.warned) link.log.warn(warning);
    this.warned = true;
    // Events can arrive before get_login_info answers: they wait until we know who the bot is.
    const early: OneBotEvent[] = [];
    let ready = false;
    const socket: OneBotSocket = new OneBotSocket({
      WebSocket: this.options.WebSocket,
      url,
      accessToken: settings.accessToken,
      onEvent: (event) => (ready ? this.onEvent(socket, event, link) : early.push(event)),
      onClose: (err) => {
        if (this.socket !== socket) return;
        this.socket = undefined;
        this.lostAt = Date.now();
        link.failed(err);
      },
    });
    await socket.open();
    let login: z.infer<typeof loginSchema>;
    try {
      login = loginSchema.parse(await socket.call('get_login_info', {}));
    } catch (err) {
      socket.close();
      throw new Error(`the OneBot server did not say which QQ account it runs (get_login_info): ${errorMessage(err)}`);
    }
    if (generation !== this.generation) {
      socket.close();
      throw new Error('napcat was disconnected while connecting');
    }
    this.selfId = login.user_id;
    this.origin = trustedOrigin(url);
    this.socket = socket;
    ready = true;
    link.log.info(
      `connected to ${withoutQuery(url)} as QQ ${login.user_id}${login.nickname ? ` (${login.nickname})` : ''}`,
    );
    const reconnecting = this.lostAt !== undefined;
    for (const event of early.splice(0)) this.onEvent(socket, event, link);
    if (reconnecting) this.catchUp(socket, link);
  }

  async disconnect(): Promise<void> {
    this.generation += 1;
    const socket = this.socket;
    this.socket = undefined;
    if (!socket) return;
    this.lostAt ??= Date.now();
    socket.close();
  }

  async sendText(target: ReplyTarget, part: OutgoingPart): Promise<string> {
    const segments: Segment[] = [];
    if (target.replyTo) segments.push({ type: 'reply', data: { id: target.replyTo } });
    segments.push(textSegment(part.text));
    return this.send(target.chatId, segments);
  }

  async sendFile(target: ReplyTarget, file: OutgoingFile): Promise<void> {
    const segment = await fileSegment(file);
    try {
      await this.send(target.chatId, [segment]);
    } catch (err) {
      // `file` segments are an extension (NapCat, LLOneBot); go-cqhttp-style servers upload by path instead.
      if (segment.type !== 'file' || !(err instanceof ActionFailed)) throw err;
      const chat = chatOf(target.chatId);
      const action = chat.kind === 'group' ? 'upload_group_file' : 'upload_private_file';
      await this.requireSocket().call(action, { ...chatParams(chat), file: file.path, name: file.name });
    }
  }

  directChatWith(chatId: string): { id: string } | undefined {
    const match = /^private:(\d+)$/.exec(chatId);
    return match?.[1] ? { id: match[1] } : undefined;
  }

  private async send(chatId: string, message: Segment[]): Promise<string> {
    const chat = chatOf(chatId);
    const data = sentSchema.parse(
      await this.requireSocket().call('send_msg', { message_type: chat.kind, ...chatParams(chat), message }),
    );
    const id = data?.message_id ?? '';
    if (id) {
      this.sent.add(id);
      if (this.sent.size > 2000) this.sent.delete(this.sent.values().next().value ?? '');
    }
    return id;
  }

  private requireSocket(): OneBotSocket {
    if (!this.socket) throw new Error('napcat is not connected');
    return this.socket;
  }

  private onEvent(socket: OneBotSocket, event: OneBotEvent, link: PlatformLink): void {
    if (socket !== this.socket) return;
    if (event.self_id !== undefined && event.self_id !== this.selfId) {
      link.log.debug(`ignored an event for QQ ${event.self_id} (this connection is QQ ${this.selfId})`);
      return;
    }
    const chat = chatOfEvent(event);
    if (!chat) return;
    if (event.post_type === 'message') {
      this.chats.set(chatKey(chat), chat);
      this.enqueue(chatKey(chat), () => this.deliver(socket, event, chat, link), link.log);
    } else if (event.post_type === 'notice' && event.notice_type === 'group_increase') {
      this.enqueue(chatKey(chat), () => this.welcome(socket, event, chat, link), link.log);
    }
  }

  /** One message event → the framework, if it is a user's and (in groups) meant for the agent. */
  private async deliver(socket: OneBotSocket, event: OneBotEvent, chat: Chat, link: PlatformLink): Promise<void> {
    const userId = event.user_id;
    if (!userId || userId === this.selfId) return;
    const read = summarize(readMessage(event.message ?? event.raw_message), this.selfId);
    const settings = this.options.settings();
    let mentioned = read.mentionsBot || (read.replyTo !== undefined && this.sent.has(read.replyTo));
    if (chat.kind === 'group') {
      const policy = settings.groupPolicyOverrides[chat.id] ?? settings.groupPolicy;
      if (policy === 'open') mentioned = true;
      if (policy === 'mention' && !mentioned) {
        link.log.debug(`ignored a message in group ${chat.id}: the bot was not @mentioned (groupPolicy)`);
        return;
      }
    }
    const name = event.sender?.card || event.sender?.nickname || undefined;
    // In a group the agent needs to know who speaks (upstream's "name: text"); a command stays a command.
    const text =
      chat.kind === 'group' && read.text && !read.text.startsWith('/') ? `${name ?? userId}: ${read.text}` : read.text;
    const incoming: IncomingMessage = {
      id: event.message_id ?? `${event.time ?? Date.now()}-${userId}`,
      chatId: chatKey(chat),
      sender: { id: userId, ...(name ? { name } : {}) },
      chatType: chat.kind === 'private' ? 'direct' : 'group',
      text,
      mentioned,
      attachments: read.media.map((media) =>
        toAttachment(media, { origin: this.origin, call: (action, params) => socket.call(action, params) }),
      ),
      metadata: {
        ...(name ? { nickname: name } : {}),
        ...(read.replyTo ? { reply_to: read.replyTo } : {}),
        napcat: { user_id: userId, ...(chat.kind === 'group' ? { group_id: chat.id } : {}) },
      },
    };
    await link.receive(incoming);
  }

  /** A new group member: the agent hears of it (upstream's wording) and may greet them. */
  private async welcome(socket: OneBotSocket, event: OneBotEvent, chat: Chat, link: PlatformLink): Promise<void> {
    const userId = event.user_id;
    if (!this.options.settings().welcomeNewMembers || !userId || !/^\d+$/.test(userId) || userId === this.selfId) {
      return;
    }
    let name = userId;
    try {
      const member = memberSchema.parse(
        await socket.call('get_group_member_info', { group_id: asId(chat.id), user_id: asId(userId), no_cache: true }),
      );
      name = member?.card || member?.nickname || userId;
    } catch (err) {
      link.log.debug(`get_group_member_info failed: ${errorMessage(err)}`);
    }
    await link.receive({
      id: `join-${userId}-${event.time ?? Date.now()}`,
      chatId: chatKey(chat),
      sender: { id: userId },
      chatType: 'group',
      text: `[group event] new member ${name} joined group ${chat.id}`,
      mentioned: true,
      metadata: { event: 'group_increase' },
    });
  }

  /** After a reconnect: each known chat's recent messages, in order; the framework drops those already answered. */
  private catchUp(socket: OneBotSocket, link: PlatformLink): void {
    const since = Math.floor((this.lostAt ?? Date.now()) / 1000) - CATCH_UP_OVERLAP_S;
    this.lostAt = undefined;
    for (const chat of this.chats.values()) {
      const key = chatKey(chat);
      this.enqueue(
        key,
        async () => {
          const action = chat.kind === 'group' ? 'get_group_msg_history' : 'get_friend_msg_history';
          let history: z.infer<typeof historySchema>;
          try {
            history = historySchema.parse(await socket.call(action, { ...chatParams(chat), count: HISTORY_COUNT }));
          } catch (err) {
            link.log.info(`cannot catch up on ${key} (${action}): ${errorMessage(err)}`);
            return;
          }
          const events = (history?.messages ?? [])
            .map((raw) => eventSchema.safeParse(raw))
            .flatMap((parsed) => (parsed.success ? [parsed.data] : []))
            .filter((event) => (event.time ?? 0) >= since && event.user_id !== this.selfId)
            .filter((event) => event.self_id === undefined || event.self_id === this.selfId)
            .sort((a, b) => (a.time ?? 0) - (b.time ?? 0));
          for (const event of events) {
            const of = chatOfEvent({ ...event, post_type: 'message' });
            if (of && chatKey(of) === key) await this.deliver(socket, event, chat, link);
          }
        },
        link.log,
      );
    }
  }

  /** One queue per chat: a chat's messages reach the framework in order; chats do not wait for each other. */
  private enqueue(key: string, task: () => Promise<void>, log: Logger): void {
    const next = (this.queues.get(key) ?? Promise.resolve())
      .then(task)
      .catch((err: unknown) => log.warn(`handling a message in ${key} failed: ${errorMessage(err)}`));
    this.queues.set(key, next);
    void next.then(() => {
      if (this.queues.get(key) === next) this.queues.delete(key);
    });
  }
}

function chatOfEvent(event: OneBotEvent): Chat | undefined {
  const group = event.group_id;
  if (event.post_type === 'notice') return group && /^\d+$/.test(group) ? { kind: 'group', id: group } : undefined;
  if (event.message_type === 'group') return group && /^\d+$/.test(group) ? { kind: 'group', id: group } : undefined;
  if (event.message_type === 'private' && event.user_id && /^\d+$/.test(event.user_id)) {
    return { kind: 'private', id: event.user_id };
  }
  return undefined;
}

const chatKey = (chat: Chat) => `${chat.kind}:${chat.id}`;

/** `private:<qq>` / `group:<number>`, as upstream names chats. */
function chatOf(chatId: string): Chat {
  const match = /^(private|group):(\d+)$/.exec(chatId);
  if (!match?.[1] || !match[2]) {
    throw new Error(`napcat chat ids are private:<QQ number> or group:<group number>, not "${chatId}"`);
  }
  return { kind: match[1] as Chat['kind'], id: match[2] };
}

function chatParams(chat: Chat): Record<string, number | string> {
  return chat.kind === 'group' ? { group_id: asId(chat.id) } : { user_id: asId(chat.id) };
}

/** QQ numbers are numbers on the wire; one too long for a double stays a string rather than losing digits. */
function asId(id: string): number | string {
  const n = Number(id);
  return Number.isSafeInteger(n) ? n : id;
}

/** A URL for the log: a `?access_token=` some setups put in wsUrl stays out of it. */
function withoutQuery(url: string): string {
  const parsed = new URL(url);
  return `${parsed.protocol}//${parsed.host}${parsed.pathname}`;
}
