/**
 * Feishu / Lark through the Lark SDK: events over the long connection (WSClient + EventDispatcher for
 * im.message.receive_v1), replies as Markdown cards (plain text when refused) split under Feishu's limits,
 * streaming by updating the card (PATCH, at most every `streamEditInterval`), topics, and files both ways
 * (message resources in; image / file uploads out).
 *
 * A dropped long connection is reported to the ChannelManager, which reconnects with its backoff; Feishu
 * redelivers the events that were not acknowledged, and the framework drops the ones seen twice.
 */
import { readFile } from 'node:fs/promises';
import { extname } from 'node:path';
import type { Client, EventDispatcher, HttpInstance, WSClient } from '@larksuiteoapi/node-sdk';
import { errorMessage } from '../../util/errors.js';
import type { Logger } from '../../util/log.js';
import type { ChannelCapabilities } from '../channel.js';
import type { ChatPlatform, OutgoingFile, OutgoingPart, PlatformLink, ReplyTarget } from '../platform.js';
import { connectError, FeishuApiError, feishuCall, sdkLogger, TokenCache, withTimeout } from './api.js';
import {
  CARD_LIMIT_BYTES,
  fits,
  markdownCard,
  plainCard,
  plainText,
  receiveIdType,
  TEXT_LIMIT_BYTES,
  textContent,
} from './cards.js';
import { type MessageEvent, type ResourceType, toIncoming } from './events.js';
import { apiRoot, type FeishuSettings } from './index.js';

type Lark = typeof import('@larksuiteoapi/node-sdk');

const HTTP_TIMEOUT_MS = 60_000;
const CONNECT_TIMEOUT_MS = 30_000;
const HANDSHAKE_TIMEOUT_MS = 15_000;
/** Seconds without any frame after a ping before the long connection counts as dead. */
const PING_TIMEOUT_S = 30;
const IMAGE_LIMIT_BYTES = 10 * 1024 * 1024;
const FILE_LIMIT_BYTES = 30 * 1024 * 1024;
type FileType = 'opus' | 'mp4' | 'pdf' | 'doc' | 'xls' | 'ppt' | 'stream';
/** Feishu's upload `file_type`s; anything else is a generic `stream`. */
const FILE_TYPES: Record<string, FileType> = {
  '.opus': 'opus',
  '.mp4': 'mp4',
  '.pdf': 'pdf',
  '.doc': 'doc',
  '.docx': 'doc',
  '.xls': 'xls',
  '.xlsx': 'xls',
  '.ppt': 'ppt',
  '.pptx': 'ppt',
};

export interface FeishuPlatformOptions {
  lark: Lark;
  settings: () => FeishuSettings;
  log: Logger;
  /** The channel name, for per-topic session keys. */
  channel: string;
}

export class FeishuPlatform implements ChatPlatform {
  readonly capabilities: ChannelCapabilities = {
    // Characters of Markdown per card: with JSON escaping, a card stays well under Feishu's 30 KB.
    maxMessageLength: 4000,
    markup: 'markdown',
    editMessages: true,
    media: true,
    threads: true,
    buttons: false,
  };
  private client?: Client;
  private ws?: WSClient;
  private botOpenId = '';
  private readonly tokens = new TokenCache();
  /** Messages this bot sent: a reply to one addresses the bot. */
  private readonly sent = new BoundedSet(2000);
  /** Messages sent as plain text (a refused card): they are edited with a text update, not a card patch. */
  private readonly textMessages = new BoundedSet(500);
  /** Incoming messages, handed over in order without holding up the acknowledgement to Feishu. */
  private inbox: Promise<void> = Promise.resolve();
  /** Ends a `connect` still waiting for the long connection. */
  private abortConnect?: (error: Error) => void;

  constructor(private readonly options: FeishuPlatformOptions) {}

  async connect(link: PlatformLink): Promise<void> {
    const { lark } = this.options;
    const settings = this.options.settings();
    const domain = apiRoot(settings.domain);
    const common = {
      appId: settings.appId.trim(),
      appSecret: settings.appSecret,
      domain,
      logger: sdkLogger(link.log),
      loggerLevel: lark.LoggerLevel.info,
    };
    const client = new lark.Client({
      ...common,
      cache: this.tokens,
      // Typed as axios, but its interceptor already unwraps responses the way HttpInstance describes.
      httpInstance: withTimeout(lark.defaultHttpInstance as unknown as HttpInstance, HTTP_TIMEOUT_MS),
    });
    this.client = client;
    const bot = await this.fetchBotInfo(client);
    this.botOpenId = bot.openId;
    const dispatcher = new lark.EventDispatcher({
      encryptKey: settings.encryptKey,
      verificationToken: settings.verificationToken,
      logger: common.logger,
      loggerLevel: common.loggerLevel,
    }).register({
      // Returns at once: the SDK acknowledges the event when this returns, and Feishu redelivers slow ones.
      'im.message.receive_v1': (event: MessageEvent) => this.deliver(event, link),
    });
    await this.openLongConnection(common, dispatcher, link);
    link.log.info(`connected as ${bot.name || 'the bot'} (${domain})`);
  }

  async disconnect(): Promise<void> {
    const ws = this.ws;
    this.ws = undefined;
    ws?.close({ force: true });
    this.abortConnect?.(new Error('disconnected while connecting'));
    await this.inbox;
  }

  async sendText(target: ReplyTarget, part: OutgoingPart): Promise<string> {
    const card = markdownCard(part.text, part.markdown);
    if (fits(card, CARD_LIMIT_BYTES)) {
      try {
        return await this.post(target, 'interactive', card);
      } catch (err) {
        if (!(err instanceof FeishuApiError && err.refused)) throw err;
        this.options.log.warn(`Feishu refused a card (${err.message}); sending plain text`);
      }
    }
    const text = textContent(plainText(part));
    if (!fits(text, TEXT_LIMIT_BYTES)) throw new Error('the message is over Feishu’s 150 KB limit');
    const id = await this.post(target, 'text', text);
    this.textMessages.add(id);
    return id;
  }

  async editText(_target: ReplyTarget, messageId: string, part: OutgoingPart): Promise<void> {
    const client = this.requireClient();
    const path = { message_id: messageId };
    if (this.textMessages.has(messageId)) {
      const content = textContent(plainText(part));
      await this.call(() => client.im.message.update({ path, data: { msg_type: 'text', content } }));
      return;
    }
    const card = markdownCard(part.text, part.markdown);
    if (!fits(card, CARD_LIMIT_BYTES)) throw new Error('the updated card is over Feishu’s 30 KB limit');
    try {
      await this.call(() => client.im.message.patch({ path, data: { content: card } }));
    } catch (err) {
      if (!(err instanceof FeishuApiError && err.refused)) throw err;
      this.options.log.warn(`Feishu refused a card update (${err.message}); showing plain text`);
      await this.call(() => client.im.message.patch({ path, data: { content: plainCard(plainText(part)) } }));
    }
  }

  async sendFile(target: ReplyTarget, file: OutgoingFile): Promise<void> {
    const client = this.requireClient();
    const data = await readFile(file.path);
    if (data.length === 0) throw new Error(`${file.name} is empty (Feishu refuses empty files)`);
    if (file.kind === 'image' && data.length <= IMAGE_LIMIT_BYTES) {
      try {
        const uploaded = await this.call(() =>
          client.im.image.create({ data: { image_type: 'message', image: data } }),
        );
        if (!uploaded?.image_key) throw new Error('Feishu returned no image_key');
        await this.post(target, 'image', JSON.stringify({ image_key: uploaded.image_key }));
        return;
      } catch (err) {
        // Formats or sizes the image API refuses still go through as a file.
        if (!(err instanceof FeishuApiError && err.refused)) throw err;
      }
    }
    if (data.length > FILE_LIMIT_BYTES) throw new Error(`${file.name} is over Feishu’s 30 MB file limit`);
    const fileType = FILE_TYPES[extname(file.name).toLowerCase()] ?? 'stream';
    const uploaded = await this.call(() =>
      client.im.file.create({
        data: { file_type: fileType, file_name: file.name, file: data },
      }),
    );
    if (!uploaded?.file_key) throw new Error('Feishu returned no file_key');
    // Opus plays as a voice message and MP4 as a video; the rest are file cards.
    const messageType = fileType === 'opus' ? 'audio' : fileType === 'mp4' ? 'media' : 'file';
    await this.post(target, messageType, JSON.stringify({ file_key: uploaded.file_key }));
  }

  private requireClient(): Client {
    if (!this.client) throw new Error('feishu is not connected');
    return this.client;
  }

  private call<T>(run: () => Promise<T>): Promise<T> {
    return feishuCall(run, { resetToken: () => this.tokens.clear() });
  }

  /** The bot's open_id (to recognise its @mentions) and name; this also proves the credentials work. */
  private async fetchBotInfo(client: Client): Promise<{ openId: string; name: string }> {
    let body: { bot?: { open_id?: string; app_name?: string } };
    try {
      body = await this.call(() => client.request({ method: 'GET', url: '/open-apis/bot/v3/info' }));
    } catch (err) {
      throw connectError(err);
    }
    const openId = body.bot?.open_id;
    if (!openId) throw new Error('Feishu’s bot info has no open_id');
    return { openId, name: body.bot?.app_name ?? '' };
  }

  /** Starts the WSClient; resolves when its first handshake succeeds. A later drop is reported to `link`. */
  private openLongConnection(
    common: ConstructorParameters<Lark['WSClient']>[0],
    dispatcher: EventDispatcher,
    link: PlatformLink,
  ): Promise<void> {
    const { lark } = this.options;
    return new Promise<void>((resolve, reject) => {
      let state: 'connecting' | 'ready' | 'failed' = 'connecting';
      const fail = (error: Error) => {
        if (state === 'ready') link.failed(error);
        if (state !== 'connecting') return;
        state = 'failed';
        clearTimeout(timer);
        this.abortConnect = undefined;
        ws.close({ force: true });
        if (this.ws === ws) this.ws = undefined;
        reject(error);
      };
      this.abortConnect = fail;
      const timer = setTimeout(
        () => fail(new Error(`the Feishu long connection did not open within ${CONNECT_TIMEOUT_MS / 1000} s`)),
        CONNECT_TIMEOUT_MS,
      );
      const ws: WSClient = new lark.WSClient({
        ...common,
        autoReconnect: true,
        handshakeTimeoutMs: HANDSHAKE_TIMEOUT_MS,
        wsConfig: { pingTimeout: PING_TIMEOUT_S },
        onReady: () => {
          if (state !== 'connecting') return;
          state = 'ready';
          clearTimeout(timer);
          this.abortConnect = undefined;
          resolve();
        },
        // The manager reconnects with its backoff (and shows the channel as reconnecting meanwhile).
        onReconnecting: () => link.failed(new Error('the Feishu long connection was closed')),
        onError: (err) => fail(new Error(`the Feishu long connection failed: ${errorMessage(err)}`)),
      });
      this.ws = ws;
      ws.start({ eventDispatcher: dispatcher }).catch((err: unknown) => fail(connectError(err)));
    });
  }

  private deliver(event: MessageEvent, link: PlatformLink): void {
    const incoming = toIncoming(event, {
      channel: this.options.channel,
      botOpenId: this.botOpenId,
      topicIsolation: this.options.settings().topicIsolation,
      sentByBot: (messageId) => this.sent.has(messageId),
      openResource: (messageId, key, type, signal) => this.openResource(messageId, key, type, signal),
    });
    if (!incoming) return;
    this.inbox = this.inbox
      .then(() => link.receive(incoming))
      .catch((err: unknown) => link.log.warn(`handling message ${incoming.id} failed: ${errorMessage(err)}`));
  }

  private async openResource(
    messageId: string,
    key: string,
    type: ResourceType,
    signal: AbortSignal,
  ): Promise<AsyncIterable<Uint8Array>> {
    const client = this.requireClient();
    const resource = await this.call(() =>
      client.im.messageResource.get({ path: { message_id: messageId, file_key: key }, params: { type } }),
    );
    const stream = resource.getReadableStream();
    signal.addEventListener('abort', () => stream.destroy(), { once: true });
    return stream as AsyncIterable<Uint8Array>;
  }

  /** Sends one message: as a reply when quoting or inside a topic, else to the chat; returns its id. */
  private async post(target: ReplyTarget, msgType: string, content: string): Promise<string> {
    const client = this.requireClient();
    const parent = target.replyTo ?? target.threadId;
    let id: string | undefined;
    if (parent) {
      try {
        const reply = await this.call(() =>
          client.im.message.reply({
            path: { message_id: parent },
            data: { msg_type: msgType, content, ...(target.threadId ? { reply_in_thread: true } : {}) },
          }),
        );
        id = reply.data?.message_id;
      } catch (err) {
        // The quoted message may be gone (withdrawn): the answer still goes to the chat.
        if (!(err instanceof FeishuApiError && err.refused)) throw err;
      }
    }
    if (!id) {
      const created = await this.call(() =>
        client.im.message.create({
          params: { receive_id_type: receiveIdType(target.chatId) },
          data: { receive_id: target.chatId, msg_type: msgType, content },
        }),
      );
      id = created.data?.message_id;
    }
    if (!id) throw new Error('Feishu returned no message_id');
    this.sent.add(id);
    return id;
  }
}

/** A set that forgets its oldest entries beyond `capacity`. */
class BoundedSet {
  private readonly items = new Set<string>();

  constructor(private readonly capacity: number) {}

  add(item: string): void {
    this.items.add(item);
    if (this.items.size <= this.capacity) return;
    const oldest = this.items.values().next().value;
    if (oldest !== undefined) this.items.delete(oldest);
  }

  has(item: string): boolean {
    return this.items.has(item);
  }
}
