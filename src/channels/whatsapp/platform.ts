/**
 * WhatsApp through Baileys, in the gateway's process: one socket on the linked device's keys. Messages come from
 * `messages.upsert` (live ones and, after a reconnect, the ones the server kept meanwhile), are handed over one at a
 * time in arrival order, and each id is remembered on disk once answered, so a redelivery is not answered twice.
 * Reconnecting is the ChannelManager's job (backoff, /health): a closed socket is reported, never retried here.
 * A session the phone logged out (401) is cleared; the next start then stops with how to link again.
 */
import { join } from 'node:path';
import type { WAMessage } from 'baileys';
import { errorMessage, UserError } from '../../util/errors.js';
import type { Logger } from '../../util/log.js';
import type { ChannelCapabilities } from '../channel.js';
import { kindOfPath } from '../media.js';
import type {
  ChatPlatform,
  IncomingAttachment,
  IncomingMessage,
  OutgoingFile,
  OutgoingPart,
  PlatformLink,
  ReplyTarget,
} from '../platform.js';
import { forgetSession, hasLinkedSession } from './auth-store.js';
import { authFolder, LOGIN_HINT, socketUrl, type WhatsAppSdk, type WhatsAppSettings } from './index.js';
import { describeClose, statusCode } from './login.js';
import {
  addressesBot,
  type BotIds,
  bareJid,
  contextOf,
  isGroupJid,
  isServedChat,
  keyOf,
  type MediaPart,
  mediaOf,
  mediaUrlAllowed,
  senderId,
  textOf,
  unwrap,
  withoutBotMention,
} from './messages.js';
import { outgoingContent, toChatJid } from './outgoing.js';
import { SeenIds } from './seen.js';
import { authStoreFor, openSocket, type WASocket } from './socket.js';

const CONNECT_TIMEOUT_MS = 60_000;
/** Inbound messages kept for quoting in replies. */
const QUOTABLE = 200;

export interface WhatsAppPlatformOptions {
  sdk: WhatsAppSdk;
  settings: () => WhatsAppSettings;
  dataDir: string;
  log: Logger;
}

export class WhatsAppPlatform implements ChatPlatform {
  readonly capabilities: ChannelCapabilities = {
    // WhatsApp accepts ~65,000 characters; parts of 4,000 read as messages on a phone.
    maxMessageLength: 4000,
    markup: 'whatsapp',
    editMessages: false,
    media: true,
    threads: false,
    buttons: false,
  };
  private socket: WASocket | undefined;
  private seen: SeenIds | undefined;
  private bot: BotIds = { jids: new Set() };
  private queue: Promise<void> = Promise.resolve();
  private readonly quotable = new Map<string, WAMessage>();
  private loggedOut = false;

  constructor(private readonly options: WhatsAppPlatformOptions) {}

  private get settings(): WhatsAppSettings {
    return this.options.settings();
  }

  async connect(link: PlatformLink): Promise<void> {
    const { sdk, dataDir, log } = this.options;
    const folder = authFolder(this.settings, dataDir);
    if (!(await hasLinkedSession(folder))) {
      const why = this.loggedOut ? 'WhatsApp logged this device out' : 'WhatsApp is not linked yet';
      throw new UserError(`${why} (no session in ${folder}).`, LOGIN_HINT);
    }
    this.seen ??= await SeenIds.open(join(dataDir, 'whatsapp', 'seen-ids.json'));
    const store = await authStoreFor(sdk, folder);
    const socket = openSocket(sdk, { url: socketUrl(this.settings), store, log });
    this.socket = socket;
    await new Promise<void>((resolve, reject) => {
      let opened = false;
      const timer = setTimeout(() => {
        if (!opened) reject(new Error('WhatsApp did not finish connecting in time'));
      }, CONNECT_TIMEOUT_MS);
      timer.unref?.();
      socket.ev.on('connection.update', (update) => {
        if (this.socket !== socket) return;
        if (update.connection === 'open') {
          opened = true;
          clearTimeout(timer);
          this.bot = { jids: new Set([socket.user?.id, socket.user?.lid].flatMap((id) => bareJid(id) ?? [])) };
          resolve();
        } else if (update.connection === 'close') {
          clearTimeout(timer);
          const error = update.lastDisconnect?.error;
          this.socket = undefined;
          const lost = this.closeError(error, folder);
          if (opened) link.failed(lost);
          else reject(lost);
        }
      });
    });
    socket.ev.on('messages.upsert', ({ messages, type }) => {
      if (type !== 'notify' && type !== 'append') return;
      for (const message of messages) this.enqueue(link, socket, message);
    });
  }

  /** What a close means: logged out (the keys are cleared: a new login is needed) or a connection to re-establish. */
  private closeError(error: unknown, folder: string): Error {
    if (statusCode(error) !== this.options.sdk.DisconnectReason.loggedOut) {
      return new Error(`WhatsApp connection closed: ${describeClose(error)}`);
    }
    this.loggedOut = true;
    forgetSession(folder).catch((err: unknown) => this.options.log.warn(`clearing ${folder} failed: ${err}`));
    return new UserError('WhatsApp logged this device out (unlinked on the phone).', LOGIN_HINT);
  }

  private enqueue(link: PlatformLink, socket: WASocket, message: WAMessage): void {
    this.queue = this.queue
      .then(() => this.handle(link, socket, message))
      .catch((err: unknown) => link.log.warn(`handling a WhatsApp message failed: ${errorMessage(err)}`));
  }

  private async handle(link: PlatformLink, socket: WASocket, message: WAMessage): Promise<void> {
    const key = keyOf(message);
    if (!key || key.fromMe || !isServedChat(key.chat) || !this.seen) return;
    const seenKey = `${key.chat}/${key.id}`;
    if (this.seen.has(seenKey)) return;
    const incoming = this.toIncoming(message, key);
    if (!incoming) return;
    this.remember(key.id, message);
    await link.receive(incoming);
    await this.seen.add(seenKey);
    if (this.settings.sendReadReceipts && this.socket === socket) {
      await socket.readMessages([message.key]).catch((err: unknown) => link.log.debug(`read receipt: ${err}`));
    }
  }

  private toIncoming(message: WAMessage, key: NonNullable<ReturnType<typeof keyOf>>): IncomingMessage | undefined {
    const content = unwrap(message.message);
    if (!content) return undefined;
    const group = isGroupJid(key.chat);
    // In a one-to-one chat the sender is the chat; a participant naming someone else is not believed.
    const from = group ? key.participant : key.chat;
    if (!from || (!group && key.participant && key.participant !== key.chat)) return undefined;
    const alt = group ? message.key.participantAlt : message.key.remoteJidAlt;
    const sender = senderId(from, alt ?? undefined, this.settings.lidMappings);
    const media = mediaOf(content);
    const text = withoutBotMention(textOf(content), this.bot);
    if (!text && !media) return undefined;
    return {
      id: key.id,
      chatId: key.chat,
      sender: { id: sender, ...(message.pushName ? { name: message.pushName } : {}) },
      chatType: group ? 'group' : 'direct',
      text,
      mentioned: addressesBot(contextOf(content), this.bot),
      ...(media ? { attachments: [this.attachment(media)] } : {}),
      ...(media?.voice ? { metadata: { voiceNote: true } } : {}),
    };
  }

  private attachment(media: MediaPart): IncomingAttachment {
    return {
      kind: media.kind,
      ...(media.name ? { name: media.name } : {}),
      ...(media.mimeType ? { mimeType: media.mimeType } : {}),
      ...(media.size !== undefined ? { size: media.size } : {}),
      open: async (signal) => {
        const { sdk } = this.options;
        const url = this.mediaUrl(media);
        if (!media.content.mediaKey) throw new Error('the media message has no key');
        const keys = await sdk.getMediaKeys(media.content.mediaKey, media.type);
        return sdk.downloadEncryptedContent(url, keys, { options: { signal, redirect: 'error' } });
      },
    };
  }

  /** The download address, only ever on WhatsApp's media hosts (or the loopback test server the socket is on). */
  private mediaUrl(media: MediaPart): string {
    const socket = socketUrl(this.settings);
    const directPath = media.content.directPath ?? '';
    const base = socket.hostname === 'web.whatsapp.com' ? 'https://mmg.whatsapp.net' : `http://${socket.host}`;
    const url =
      /^\/[\w\-./%=?&]+$/.test(directPath) && !directPath.includes('..') ? `${base}${directPath}` : media.content.url;
    if (!url || !mediaUrlAllowed(url, socket)) throw new Error('the media is not on a WhatsApp media host: refused');
    return url;
  }

  private remember(id: string, message: WAMessage): void {
    this.quotable.set(id, message);
    if (this.quotable.size > QUOTABLE) {
      const oldest = this.quotable.keys().next().value;
      if (oldest !== undefined) this.quotable.delete(oldest);
    }
  }

  private connected(): WASocket {
    if (!this.socket) throw new Error('WhatsApp is not connected');
    return this.socket;
  }

  async disconnect(): Promise<void> {
    const socket = this.socket;
    this.socket = undefined;
    socket?.ev.removeAllListeners('messages.upsert');
    socket?.end(undefined);
  }

  async sendText(target: ReplyTarget, part: OutgoingPart): Promise<string> {
    const quoted = target.replyTo ? this.quotable.get(target.replyTo) : undefined;
    const sent = await this.connected().sendMessage(
      toChatJid(target.chatId),
      { text: part.text },
      quoted ? { quoted } : {},
    );
    return sent?.key.id ?? '';
  }

  async sendFile(target: ReplyTarget, file: OutgoingFile): Promise<void> {
    await this.connected().sendMessage(toChatJid(target.chatId), outgoingContent(file, kindOfPath(file.path)));
  }

  async sendTyping(target: ReplyTarget): Promise<void> {
    await this.connected().sendPresenceUpdate('composing', toChatJid(target.chatId));
  }

  directChatWith(chatId: string): { id: string } | undefined {
    const jid = bareJid(chatId);
    return jid?.endsWith('@s.whatsapp.net') ? { id: jid.split('@')[0] ?? '' } : undefined;
  }
}
