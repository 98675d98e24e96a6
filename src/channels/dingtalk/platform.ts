/**
 * DingTalk through an enterprise internal app's robot: messages arrive over Stream Mode (stream.ts), one frame per
 * robot message, handled in order per chat and ACKed once the framework has taken it; replies and proactive
 * messages go out through the robot API as sampleMarkdown messages (no cards: upstream sends none either), to a
 * person with oToMessages/batchSend and to a group with groupMessages/send. Messages cannot be edited, so replies
 * arrive whole, split under DingTalk's length limit.
 */
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
import { DingtalkApi, type RobotChat } from './api.js';
import type { DingtalkSdk, DingtalkSettings } from './index.js';
import { openDownload, prepareUpload } from './media.js';
import { GROUP_PREFIX, readRobotMessage } from './messages.js';
import { type CallbackFrame, StreamConnection } from './stream.js';

/** Under DingTalk's ~4,000 characters for a markdown message, with room for the @name line in groups. */
const MAX_MESSAGE_LENGTH = 3_800;
/** Upstream's notice for a direct message while disablePrivateChat is on. */
const PRIVATE_CHAT_DISABLED = '该机器人未开启私聊，请在群聊中与我对话。';
const SENDER_NAME_MAX = 80;

export interface DingtalkPlatformOptions {
  sdk: DingtalkSdk;
  settings: () => DingtalkSettings;
  log: Logger;
}

export class DingtalkPlatform implements ChatPlatform {
  readonly capabilities: ChannelCapabilities = {
    maxMessageLength: MAX_MESSAGE_LENGTH,
    markup: 'markdown',
    editMessages: false,
    media: true,
    threads: false,
    buttons: false,
  };
  private client?: { key: string; api: DingtalkApi };
  private connection?: StreamConnection;
  /** The connection still on its way to open: a disconnect ends it too. */
  private opening?: StreamConnection;
  private generation = 0;
  private readonly queues = new Map<string, Promise<void>>();
  /** Who wrote each recent message in a group (for the @name line of a reply that quotes it). */
  private readonly senders = new Map<string, string>();

  constructor(private readonly options: DingtalkPlatformOptions) {}

  /** The API client for the current credentials and addresses (a config reload that changes them gets a new one). */
  private get api(): DingtalkApi {
    const { clientId, clientSecret, apiBase, oapiBase } = this.options.settings();
    const key = JSON.stringify([clientId, clientSecret, apiBase, oapiBase]);
    if (this.client?.key !== key)
      this.client = { key, api: new DingtalkApi({ clientId, clientSecret, apiBase, oapiBase }) };
    return this.client.api;
  }

  async connect(link: PlatformLink): Promise<void> {
    const generation = ++this.generation;
    const settings = this.options.settings();
    const connection: StreamConnection = new StreamConnection({
      sdk: this.options.sdk,
      api: this.api,
      clientId: settings.clientId,
      clientSecret: settings.clientSecret,
      log: link.log,
      onCallback: (frame, from) => this.onCallback(frame, from, link),
      onLost: (error) => {
        if (this.connection !== connection) return;
        this.connection = undefined;
        link.failed(error);
      },
    });
    this.opening = connection;
    try {
      await connection.open();
    } finally {
      if (this.opening === connection) this.opening = undefined;
    }
    if (generation !== this.generation || connection.ended) {
      connection.close();
      throw new Error(
        connection.ended
          ? 'the DingTalk Stream connection ended as it opened'
          : 'dingtalk was disconnected while connecting',
      );
    }
    this.connection = connection;
    link.log.info(`connected to DingTalk Stream Mode as robot ${settings.clientId}`);
  }

  async disconnect(): Promise<void> {
    this.generation += 1;
    const connection = this.connection;
    this.connection = undefined;
    connection?.close();
    this.opening?.close();
  }

  async sendText(target: ReplyTarget, part: OutgoingPart): Promise<string> {
    const chat = chatOf(target.chatId);
    const sender = chat.kind === 'group' && target.replyTo ? this.senders.get(target.replyTo) : undefined;
    // A markdown message cannot @mention anyone: a quoted reply in a group names its addressee on a line of its own.
    const text = sender ? `# @${escapeSenderName(sender)}\n\n${part.text}` : part.text;
    return this.api.sendRobotMessage(chat, 'sampleMarkdown', { title: titleOf(part.markdown), text });
  }

  async sendFile(target: ReplyTarget, file: OutgoingFile): Promise<void> {
    const chat = chatOf(target.chatId);
    const upload = await prepareUpload(file);
    const mediaId = await this.api.upload(upload.type, upload.data, upload.name, upload.mimeType);
    if (upload.type === 'image') {
      await this.api.sendRobotMessage(chat, 'sampleImageMsg', { photoURL: mediaId });
      return;
    }
    await this.api.sendRobotMessage(chat, 'sampleFile', {
      mediaId,
      fileName: upload.name,
      fileType: upload.fileType,
    });
  }

  directChatWith(chatId: string): { id: string } | undefined {
    return chatId.startsWith(GROUP_PREFIX) ? undefined : { id: chatId };
  }

  private onCallback(frame: CallbackFrame, from: StreamConnection, link: PlatformLink): void {
    const messageId = frame.headers.messageId;
    let data: unknown;
    try {
      data = JSON.parse(frame.data);
    } catch {
      data = undefined;
    }
    const settings = this.options.settings();
    const read = readRobotMessage(data, {
      groupUserIsolation: settings.groupUserIsolation,
      open: async (code, signal) =>
        openDownload(await this.api.downloadUrl(code), new URL(settings.apiBase).origin, signal),
    });
    const ack = () => {
      if (messageId) from.ack(messageId);
    };
    if ('skip' in read) {
      link.log.debug(`ignored ${read.skip}`);
      ack();
      return;
    }
    if (read.chatType === 'group' && read.sender.name) this.remember(read.id, read.sender.name);
    this.enqueue(read.chatId, link.log, async () => {
      try {
        if (read.chatType === 'direct' && settings.disablePrivateChat) await this.notifyPrivateChatDisabled(read, link);
        else await link.receive(read);
      } finally {
        // Even when handling failed: a redelivery would be dropped as a duplicate, so DingTalk can stop sending it.
        ack();
      }
    });
  }

  /** Upstream's group-only switch: a direct message gets a notice (whoever sent it) and never reaches the agent. */
  private async notifyPrivateChatDisabled(message: IncomingMessage, link: PlatformLink): Promise<void> {
    link.log.info(`a direct message from ${message.sender.id} got the "private chat disabled" notice`);
    await this.api.sendRobotMessage(chatOf(message.chatId), 'sampleText', { content: PRIVATE_CHAT_DISABLED });
  }

  private remember(messageId: string, name: string): void {
    this.senders.set(messageId, name);
    if (this.senders.size > 500) this.senders.delete(this.senders.keys().next().value ?? '');
  }

  /** One queue per chat: a chat's messages reach the framework in order; chats do not wait for each other. */
  private enqueue(key: string, log: Logger, task: () => Promise<void>): void {
    const next = (this.queues.get(key) ?? Promise.resolve())
      .then(task)
      .catch((err: unknown) => log.warn(`handling a DingTalk message in ${key} failed: ${String(err)}`));
    this.queues.set(key, next);
    void next.then(() => {
      if (this.queues.get(key) === next) this.queues.delete(key);
    });
  }
}

/** A chat id as the robot API names it; anything else (path tricks, empty ids) is refused before a request. */
export function chatOf(chatId: string): RobotChat {
  const group = chatId.startsWith(GROUP_PREFIX);
  const id = group ? chatId.slice(GROUP_PREFIX.length) : chatId;
  if (!/^[\w$:+=/.@-]{1,128}$/.test(id) || id.includes('..')) {
    throw new Error(`dingtalk chat ids are a user id or group:<openConversationId>, not "${chatId}"`);
  }
  return group ? { kind: 'group', conversationId: id } : { kind: 'user', userId: id };
}

/** The message's title (shown in notifications and the chat list): its first line, without Markdown. */
function titleOf(markdown: string): string {
  const first = markdown.split('\n').find((line) => line.trim() !== '' && !/^\s*(`{3,}|~{3,})/.test(line)) ?? '';
  const plain = first
    .replace(/[`*_#>[\]()!~|]/g, '')
    .trim()
    .slice(0, 40);
  return plain || 'nanobot';
}

/** An untrusted display name as one bounded line that Markdown shows as written. */
function escapeSenderName(name: string): string {
  return name
    .split(/\s+/)
    .filter(Boolean)
    .join(' ')
    .slice(0, SENDER_NAME_MAX)
    .replace(/[\\`*_{}[\]()<>#+\-.!|~]/g, '\\$&');
}
