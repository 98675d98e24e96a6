/**
 * QQ through the official bot API v2: C2C_MESSAGE_CREATE (a user's private chat) and GROUP_AT_MESSAGE_CREATE (an
 * @-message to the bot in a group) in, passive replies out. Ids are openids, not QQ numbers: a person's user_openid
 * (private chats) differs from their member_openid (groups). Chat ids: the user_openid for a private chat, as
 * upstream, and `group:<group_openid>` for a group (so a chat id alone says where it goes, after a restart too).
 *
 * Replies are passive: each carries the msg_id of the message it answers and a msg_seq that increases per msg_id
 * (QQ drops a repeated pair as a duplicate), while QQ's reply window is open (60 minutes in private chats, 5 in
 * groups, 5 replies per message); after that a message goes without msg_id, as an active message.
 */
import { z } from 'zod';
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
import { type MessageBody, QqApi } from './api.js';
import { INTENT_GROUP_AND_C2C, QqGateway, type Session, type WebSocketClass } from './gateway.js';
import { apiBaseOf, type QqSettings } from './index.js';
import { attachmentSchema, fileTypeOf, readUpload, toAttachment } from './media.js';

const authorSchema = z.looseObject({
  user_openid: z.string().min(1).optional(),
  member_openid: z.string().min(1).optional(),
  id: z.string().min(1).optional(),
});
const messageSchema = z.looseObject({
  id: z.string().min(1),
  content: z.string().default(''),
  author: authorSchema,
  group_openid: z.string().min(1).optional(),
  attachments: z.array(z.unknown()).default([]),
});

const WINDOW_MS = { c2c: 60 * 60_000, group: 5 * 60_000 };
const REPLIES_PER_MESSAGE = 5;
const GROUP_PREFIX = 'group:';

interface Passive {
  msgId: string;
  at: number;
  seq: number;
}

export interface QqPlatformOptions {
  WebSocket: WebSocketClass;
  settings: () => QqSettings;
  log: Logger;
  now?: () => number;
}

export class QqPlatform implements ChatPlatform {
  readonly capabilities: ChannelCapabilities;
  private readonly api: QqApi;
  private readonly now: () => number;
  /** Kept across connections: the next one resumes it. */
  private readonly session: Session = { seq: null };
  private gateway?: QqGateway;
  /** The connection still on its way to READY: a disconnect ends it too. */
  private opening?: QqGateway;
  private generation = 0;
  /** The last message in each chat: what replies there answer. */
  private readonly passive = new Map<string, Passive>();
  private readonly queues = new Map<string, Promise<void>>();

  constructor(private readonly options: QqPlatformOptions) {
    const settings = options.settings();
    this.now = options.now ?? Date.now;
    this.api = new QqApi({
      appId: settings.appId,
      secret: settings.secret,
      apiBase: apiBaseOf(settings),
      tokenUrl: settings.tokenUrl,
      now: this.now,
    });
    this.capabilities = {
      maxMessageLength: 3000,
      markup: settings.msgFormat === 'markdown' ? 'markdown' : 'plain',
      editMessages: false,
      media: true,
      threads: false,
      buttons: false,
    };
  }

  async connect(link: PlatformLink): Promise<void> {
    const generation = ++this.generation;
    const token = await this.api.accessToken();
    const url = await this.api.gatewayUrl();
    if (generation !== this.generation) throw new Error('qq was disconnected while connecting');
    const origin = new URL(apiBaseOf(this.options.settings())).origin;
    const gateway: QqGateway = new QqGateway({
      WebSocket: this.options.WebSocket,
      url,
      authorization: `QQBot ${token}`,
      intents: INTENT_GROUP_AND_C2C,
      session: this.session,
      onDispatch: (type, data) => {
        if (this.gateway === gateway || this.gateway === undefined) this.onDispatch(type, data, origin, link);
      },
      onClose: (error, retryAfterMs) => {
        if (this.gateway !== gateway) return;
        this.gateway = undefined;
        link.failed(error, retryAfterMs);
      },
    });
    const resuming = this.session.id !== undefined;
    this.opening = gateway;
    const ready = await gateway.open().finally(() => {
      if (this.opening === gateway) this.opening = undefined;
    });
    if (generation !== this.generation) {
      gateway.close();
      throw new Error('qq was disconnected while connecting');
    }
    this.gateway = gateway;
    link.log.info(
      ready.resumed
        ? 'resumed the QQ gateway session (missed events are replayed)'
        : `connected to the QQ gateway${ready.botName ? ` as ${ready.botName}` : ''}${resuming ? ' (a fresh session: the old one could not be resumed)' : ''}`,
    );
  }

  async disconnect(): Promise<void> {
    this.generation += 1;
    const gateway = this.gateway;
    this.gateway = undefined;
    gateway?.close();
    this.opening?.close();
  }

  async sendText(target: ReplyTarget, part: OutgoingPart): Promise<string> {
    const markdown = this.capabilities.markup === 'markdown';
    const body: MessageBody = markdown
      ? { msg_type: 2, markdown: { content: part.text } }
      : { msg_type: 0, content: part.text };
    return this.post(target.chatId, body);
  }

  async sendFile(target: ReplyTarget, file: OutgoingFile): Promise<void> {
    const { kind, openid } = chatOf(target.chatId);
    const fileType = fileTypeOf(file.kind);
    const data = await readUpload(file);
    // A file name makes QQ show an image as a file attachment: only files get one.
    const uploaded = await this.api.upload(kind, openid, fileType, data, fileType === 4 ? file.name : undefined);
    await this.post(target.chatId, { msg_type: 7, content: ' ', media: { file_info: uploaded.file_info } });
  }

  /** Upstream's ackMessage ("⏳ Processing..."), sent once a message is accepted for the agent. */
  async acknowledge(message: IncomingMessage): Promise<void> {
    const text = this.options.settings().ackMessage.trim();
    if (text) await this.post(message.chatId, { msg_type: 0, content: text });
  }

  directChatWith(chatId: string): { id: string } | undefined {
    return chatId.startsWith(GROUP_PREFIX) ? undefined : { id: chatId };
  }

  private async post(chatId: string, body: MessageBody): Promise<string> {
    const { kind, openid } = chatOf(chatId);
    const passive = this.passive.get(chatId);
    if (passive && this.now() - passive.at < WINDOW_MS[kind] && passive.seq < REPLIES_PER_MESSAGE) {
      passive.seq += 1;
      return this.api.send(kind, openid, { ...body, msg_id: passive.msgId, msg_seq: passive.seq });
    }
    return this.api.send(kind, openid, body);
  }

  private onDispatch(type: string, data: unknown, origin: string, link: PlatformLink): void {
    if (type !== 'C2C_MESSAGE_CREATE' && type !== 'GROUP_AT_MESSAGE_CREATE') return;
    const parsed = messageSchema.safeParse(data);
    if (!parsed.success) {
      link.log.debug(`ignored a ${type} event QQ sent without the expected fields`);
      return;
    }
    const event = parsed.data;
    const group = type === 'GROUP_AT_MESSAGE_CREATE';
    const senderId = group ? event.author.member_openid : event.author.user_openid;
    if (!senderId || (group && !event.group_openid)) {
      link.log.debug(`ignored a ${type} event without the sender's openid`);
      return;
    }
    const chatId = group ? `${GROUP_PREFIX}${event.group_openid}` : senderId;
    // A replayed message keeps its count: QQ refuses a msg_seq used before.
    if (this.passive.get(chatId)?.msgId !== event.id)
      this.passive.set(chatId, { msgId: event.id, at: this.now(), seq: 0 });
    const attachments = event.attachments
      .map((raw) => attachmentSchema.safeParse(raw))
      .flatMap((att) => (att.success ? [toAttachment(att.data, origin)] : []));
    const incoming: IncomingMessage = {
      id: event.id,
      chatId,
      sender: { id: senderId },
      chatType: group ? 'group' : 'direct',
      text: event.content.trim(),
      // Only @-messages to the bot reach it in groups.
      mentioned: group,
      ...(attachments.length ? { attachments } : {}),
      metadata: {
        qq: group ? { group_openid: event.group_openid, member_openid: senderId } : { user_openid: senderId },
      },
    };
    this.enqueue(chatId, () => link.receive(incoming), link.log);
  }

  /** One queue per chat: a chat's messages reach the framework in order; chats do not wait for each other. */
  private enqueue(key: string, task: () => Promise<void>, log: Logger): void {
    const next = (this.queues.get(key) ?? Promise.resolve())
      .then(task)
      .catch((err: unknown) => log.warn(`handling a QQ message in ${key} failed: ${String(err)}`));
    this.queues.set(key, next);
    void next.then(() => {
      if (this.queues.get(key) === next) this.queues.delete(key);
    });
  }
}

function chatOf(chatId: string): { kind: 'c2c' | 'group'; openid: string } {
  const group = chatId.startsWith(GROUP_PREFIX);
  const openid = group ? chatId.slice(GROUP_PREFIX.length) : chatId;
  if (!/^[A-Za-z0-9_-]{1,128}$/.test(openid)) {
    throw new Error(`qq chat ids are a user openid or group:<group_openid>, not "${chatId}"`);
  }
  return { kind: group ? 'group' : 'c2c', openid };
}
