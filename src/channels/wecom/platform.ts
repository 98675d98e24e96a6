/**
 * WeCom's intelligent bot over its WebSocket long connection, through the official SDK's WSClient: it sends the
 * subscribe frame (bot_id + secret), pings, and queues replies per req_id, each waiting for its ack.
 *
 * Replies answer the latest callback of their chat: `aibot_respond_msg` carries that callback's req_id, and the text
 * goes as a `stream` message (Markdown; the plain `text` type is refused there, as upstream found). A streamed reply
 * is one open stream message that shows the whole text so far on each edit and is finished (`finish: true`) when the
 * reply is complete; any other text is finished at once. WeCom keeps a callback answerable for a few minutes; past
 * that, or when WeCom says the req_id has expired, a reply is pushed with `aibot_send_msg` instead (Markdown, to the
 * userid or group chatid), as upstream does for cron pushes.
 *
 * Reconnects are the framework's: the SDK's own retries are off, a lost connection is reported with `link.failed`,
 * and `connect` opens a new client. Being replaced by another connection of the same bot (`disconnected_event`)
 * asks for a long wait first, so two gateways do not take the bot from each other in a loop.
 */
import type { WSClient, WsFrame, WsFrameHeaders } from '@wecom/aibot-node-sdk';
import { errorMessage, UserError } from '../../util/errors.js';
import type { Logger } from '../../util/log.js';
import { isAllowed } from '../access.js';
import type { ChannelCapabilities } from '../channel.js';
import type { ChatPlatform, OutgoingFile, OutgoingPart, PlatformLink, ReplyTarget, SendOptions } from '../platform.js';
import { bodySchema, chatIdOf, toIncoming } from './inbound.js';
import { WECOM_WS_URL, type WecomSdk, type WecomSettings, wsUrlOf } from './index.js';
import { type DownloadOptions, mediaTypeOf, readUpload } from './media.js';

/** A stream message's content is at most 20480 bytes of UTF-8: 4000 UTF-16 units stay under it in any script. */
export const MAX_MESSAGE_LENGTH = 4000;
export const MAX_CONTENT_BYTES = 20480;
/** How long a callback's req_id is used for replies (WeCom ends a reply stream about six minutes after it). */
export const REPLY_WINDOW_MS = 5 * 60_000;
/** After another connection took the bot over: wait this long before taking it back. */
export const TAKEOVER_WAIT_MS = 5 * 60_000;
/** WeCom's errcodes for a req_id that can no longer be answered. */
const EXPIRED_REQ_ID = new Set([846605, 846608]);

export interface WecomPlatformOptions {
  sdk: WecomSdk;
  settings: () => WecomSettings;
  log: Logger;
  now?: () => number;
  /** The SDK's heartbeat interval (30 s by default; shorter in tests). */
  heartbeatIntervalMs?: number;
}

interface OpenStream {
  chatId: string;
  frame?: WsFrameHeaders;
  content: string;
  /** What the chat shows of it: the last content WeCom acked. */
  shown: string;
}

interface ReplyHandle {
  frame: WsFrameHeaders;
  at: number;
}

export class WecomPlatform implements ChatPlatform {
  readonly capabilities: ChannelCapabilities = {
    maxMessageLength: MAX_MESSAGE_LENGTH,
    markup: 'markdown',
    editMessages: true,
    media: true,
    threads: false,
    buttons: false,
  };
  private client?: WSClient;
  private readonly now: () => number;
  /** The latest callback of each chat: what replies there answer. Kept across reconnects. */
  private readonly replies = new Map<string, ReplyHandle>();
  private readonly directChats = new Set<string>();
  /** Streamed replies not finished yet, by stream id (pushed ones have no frame and go out when they finish). */
  private readonly streams = new Map<string, OpenStream>();
  private inbound: Promise<void> = Promise.resolve();
  /** Ends a connect still waiting for its subscription (a disconnect meanwhile). */
  private abandon?: () => void;

  constructor(private readonly options: WecomPlatformOptions) {
    this.now = options.now ?? Date.now;
  }

  connect(link: PlatformLink): Promise<void> {
    const settings = this.options.settings();
    const url = wsUrlOf(settings);
    const client = new this.options.sdk.WSClient({
      botId: settings.botId,
      secret: settings.secret,
      wsUrl: url.href,
      maxReconnectAttempts: 0,
      maxAuthFailureAttempts: 0,
      ...(this.options.heartbeatIntervalMs ? { heartbeatInterval: this.options.heartbeatIntervalMs } : {}),
      logger: sdkLogger(link.log),
    });
    this.client = client;
    const download: DownloadOptions = {
      // Files at the owner's own endpoint (a custom wsUrl) are fetched as they are; any other address is guarded.
      trustedOrigin:
        url.href === new URL(WECOM_WS_URL).href
          ? undefined
          : `${url.protocol === 'wss:' ? 'https:' : 'http:'}//${url.host}`,
      maxBytes: () => this.options.settings().maxMediaMb * 1024 * 1024,
      decrypt: (data, key) => this.options.sdk.decryptFile(data, key),
    };
    return new Promise<void>((resolve, reject) => {
      let authenticated = false;
      this.abandon = () => {
        if (!authenticated) reject(new Error('disconnected while connecting to WeCom'));
      };
      client.on('authenticated', () => {
        if (!authenticated) link.log.info(`connected to WeCom as bot ${settings.botId}`);
        authenticated = true;
        resolve();
      });
      client.on('error', (err) => {
        if (authenticated || this.client !== client) return link.log.debug(`connection error: ${errorMessage(err)}`);
        reject(
          /Authentication failed/.test(err.message)
            ? new UserError(
                `WeCom refused the bot's credentials: ${err.message}`,
                'Check channels.wecom.botId and channels.wecom.secret (智能机器人 → API 模式 → 长连接).',
              )
            : new Error(`could not connect to WeCom: ${errorMessage(err)}`),
        );
      });
      client.on('disconnected', (reason) => {
        if (this.client !== client) return;
        if (!authenticated) reject(new Error(`WeCom closed the connection before it was authenticated: ${reason}`));
        else link.failed(new Error(`WeCom connection lost: ${reason}`));
      });
      client.on('event.disconnected_event', () => {
        if (this.client !== client) return;
        link.log.warn('another connection of this bot took over; trying again in a few minutes');
        link.failed(new Error('another connection of this bot took over'), TAKEOVER_WAIT_MS);
      });
      client.on('message', (frame) => {
        if (this.client !== client) return;
        this.inbound = this.inbound
          .then(() => this.onMessage(frame, link, download))
          .catch((err: unknown) => link.log.warn(`a message could not be handled: ${errorMessage(err)}`));
      });
      client.on('event.enter_chat', (frame) => {
        this.welcome(frame).catch((err: unknown) => link.log.warn(`the welcome message failed: ${errorMessage(err)}`));
      });
      client.connect();
    });
  }

  async disconnect(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    this.abandon?.();
    this.abandon = undefined;
    if (!client) return;
    client.removeAllListeners();
    client.disconnect();
  }

  private async onMessage(frame: WsFrame, link: PlatformLink, download: DownloadOptions): Promise<void> {
    const parsed = bodySchema.safeParse(frame.body);
    if (!parsed.success) {
      link.log.debug(`ignored a callback without a sender or type (${parsed.error.issues[0]?.message ?? ''})`);
      return;
    }
    const chatId = chatIdOf(parsed.data);
    const reqId = frame.headers?.req_id;
    if (reqId) this.replies.set(chatId, { frame: { headers: { req_id: reqId } }, at: this.now() });
    if (parsed.data.chattype !== 'group') this.directChats.add(chatId);
    const incoming = toIncoming(parsed.data, download);
    if (incoming) await link.receive(incoming);
  }

  /** enter_chat: the welcome message, to someone allowFrom names (as upstream), within WeCom's 5 seconds. */
  private async welcome(frame: WsFrame): Promise<void> {
    const welcome = this.options.settings().welcomeMessage.trim();
    const parsed = bodySchema.safeParse(frame.body);
    if (!welcome || !parsed.success || !this.client) return;
    if (!isAllowed(this.options.settings(), { id: parsed.data.from.userid }, () => false)) return;
    await this.client.replyWelcome(frame, { msgtype: 'text', text: { content: welcome } }).catch((err: unknown) => {
      throw asError(err);
    });
  }

  async sendText(target: ReplyTarget, part: OutgoingPart, options?: SendOptions): Promise<string> {
    const client = this.connected();
    const content = checked(part.text);
    const handle = this.replyHandle(target.chatId);
    if (handle) {
      const streamId = this.options.sdk.generateReqId('stream');
      try {
        // A streamed reply stays open (WeCom shows it growing) until finishStream; anything else is finished at once.
        await client.replyStream(handle.frame, streamId, content, !options?.streaming);
        if (options?.streaming) {
          this.streams.set(streamId, { chatId: target.chatId, frame: handle.frame, content, shown: content });
        }
        return streamId;
      } catch (err) {
        if (!expired(err)) throw asError(err);
        this.replies.delete(target.chatId);
      }
    }
    if (options?.streaming) {
      // No callback to answer: the reply is pushed once, when it is complete.
      const id = this.options.sdk.generateReqId('push');
      this.streams.set(id, { chatId: target.chatId, content, shown: '' });
      return id;
    }
    return this.push(client, target.chatId, content);
  }

  /** A streamed reply grew: the stream message shows the whole text so far. */
  async editText(_target: ReplyTarget, messageId: string, part: OutgoingPart): Promise<void> {
    const stream = this.streams.get(messageId);
    if (!stream) throw new Error('only an open stream message can be edited on WeCom');
    stream.content = checked(part.text);
    if (!stream.frame) return;
    try {
      await this.connected().replyStream(stream.frame, messageId, stream.content, false);
      stream.shown = stream.content;
    } catch (err) {
      if (!expired(err)) throw asError(err);
      // The stream outlived WeCom's window: the final text is pushed instead.
      delete stream.frame;
    }
  }

  async finishStream(_target: ReplyTarget, messageIds: readonly string[]): Promise<void> {
    const client = this.connected();
    for (const id of messageIds) {
      const stream = this.streams.get(id);
      if (!stream) continue;
      if (stream.frame) {
        try {
          await client.replyStream(stream.frame, id, stream.content, true);
          this.streams.delete(id);
          continue;
        } catch (err) {
          if (!expired(err)) throw asError(err);
          delete stream.frame;
        }
      }
      // A stream that already shows its final text stays as it is (WeCom ends it); otherwise the text is pushed.
      const unseen = stream.content !== stream.shown && stream.content.trim() !== '' && stream.content !== '…';
      if (unseen) await this.push(client, stream.chatId, stream.content);
      this.streams.delete(id);
    }
  }

  private async push(client: WSClient, chatId: string, content: string): Promise<string> {
    const ack = await client
      .sendMessage(chatId, { msgtype: 'markdown', markdown: { content } })
      .catch((err: unknown) => {
        throw asError(err);
      });
    return ack.headers?.req_id ?? '';
  }

  async sendFile(target: ReplyTarget, file: OutgoingFile): Promise<void> {
    const client = this.connected();
    const type = mediaTypeOf(file);
    const data = await readUpload(file);
    const uploaded = await client.uploadMedia(data, { type, filename: file.name }).catch((err: unknown) => {
      throw asError(err);
    });
    const handle = this.replyHandle(target.chatId);
    if (handle) {
      try {
        await client.replyMedia(handle.frame, type, uploaded.media_id);
        return;
      } catch (err) {
        if (!expired(err)) throw asError(err);
        this.replies.delete(target.chatId);
      }
    }
    await client.sendMediaMessage(target.chatId, type, uploaded.media_id).catch((err: unknown) => {
      throw asError(err);
    });
  }

  directChatWith(chatId: string): { id: string } | undefined {
    return this.directChats.has(chatId) ? { id: chatId } : undefined;
  }

  private replyHandle(chatId: string): ReplyHandle | undefined {
    const handle = this.replies.get(chatId);
    if (handle && this.now() - handle.at < REPLY_WINDOW_MS) return handle;
    return undefined;
  }

  private connected(): WSClient {
    if (!this.client?.isConnected) throw new Error('WeCom is not connected');
    return this.client;
  }
}

/** The SDK rejects a refused reply with the ack frame itself ({ errcode, errmsg }), not an Error. */
function asError(err: unknown): Error {
  if (err instanceof Error) return err;
  const frame = err as { errcode?: unknown; errmsg?: unknown } | null;
  if (frame && typeof frame === 'object' && 'errcode' in frame) {
    return new Error(`WeCom refused it: errcode ${String(frame.errcode)} ${String(frame.errmsg ?? '')}`.trim());
  }
  return new Error(errorMessage(err));
}

function checked(content: string): string {
  if (Buffer.byteLength(content) > MAX_CONTENT_BYTES) throw new Error('a message over WeCom’s 20480 bytes');
  return content;
}

function expired(err: unknown): boolean {
  const code = (err as { errcode?: unknown } | null)?.errcode;
  return typeof code === 'number' && EXPIRED_REQ_ID.has(code);
}

/** The SDK logs every connect, frame and ack: all of it at debug, under our logger (never the secret: it logs none). */
function sdkLogger(log: Logger) {
  const line =
    (level: string) =>
    (message: string, ...args: unknown[]) =>
      log.debug(`sdk ${level}: ${[message, ...args.map((a) => errorMessage(a))].join(' ').slice(0, 500)}`);
  return { debug: line('debug'), info: line('info'), warn: line('warn'), error: line('error') };
}
