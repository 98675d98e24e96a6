/**
 * The small part each chat platform implements. Everything else (access control, pairing, de-duplication,
 * Markdown conversion, splitting, streaming by edits, media download, retries, reconnects) lives once in the
 * framework: ChatChannel wraps a ChatPlatform into a Channel the ChannelManager runs.
 */
import type { Logger } from '../util/log.js';
import type { ChannelCapabilities } from './channel.js';

/** A message as the platform delivered it. */
export interface IncomingMessage {
  /** The platform's id of this message: duplicates (redeliveries) with the same chat and id are dropped. */
  id: string;
  chatId: string;
  sender: { id: string; username?: string; name?: string };
  /** One-to-one chats may pair strangers; group chats follow `groupPolicy` and never pair. */
  chatType: 'direct' | 'group';
  /** The text with the bot's own @mention removed. */
  text: string;
  /** The bot was @mentioned or the message replies to one of the bot's (for `groupPolicy: "mention"`). */
  mentioned?: boolean;
  threadId?: string;
  /** Overrides the session key (e.g. per forum topic); default `<channel>:<chatId>`. */
  sessionKey?: string;
  attachments?: IncomingAttachment[];
  /** Extra platform facts for the agent's metadata. */
  metadata?: Record<string, unknown>;
}

export type AttachmentKind = 'image' | 'audio' | 'video' | 'file';

export interface IncomingAttachment {
  kind: AttachmentKind;
  /** The file name as sent, if any (sanitised before it touches the disk). */
  name?: string;
  mimeType?: string;
  /** Declared size in bytes, when the platform says: checked before downloading. */
  size?: number;
  /** Opens the content; the framework stops reading past the size cap. */
  open(signal: AbortSignal): Promise<AsyncIterable<Uint8Array>>;
}

/** Where a message goes. */
export interface ReplyTarget {
  chatId: string;
  threadId?: string;
  /** Quote this message (`replyToMessage`); only on the first part of a reply. */
  replyTo?: string;
}

/** One message worth of text: rendered in the platform's markup, plus the Markdown it came from (for fallbacks). */
export interface OutgoingPart {
  text: string;
  markdown: string;
}

export interface SendOptions {
  /** Quick-reply buttons (rows of labels), when `capabilities.buttons`. */
  buttons?: string[][];
  /** The first text of a streamed reply: edits follow, then `finishStream` (a platform may keep it open till then). */
  streaming?: boolean;
}

export interface OutgoingFile {
  path: string;
  /** File name to show. */
  name: string;
  kind: AttachmentKind;
}

export interface CommandInfo {
  /** Without the slash: `new`, `dream-log`. */
  name: string;
  description: string;
}

/** What the framework gives a platform when it connects. */
export interface PlatformLink {
  /** Hand every incoming message here (await it: it keeps the order of a chat). */
  receive(message: IncomingMessage): Promise<void>;
  /** The connection is lost after `connect` resolved; the manager disconnects and connects again after a backoff. */
  failed(error: Error, retryAfterMs?: number): void;
  /** The agent's slash commands, for a platform's command menu. */
  commands(): readonly CommandInfo[];
  log: Logger;
}

export interface ChatPlatform {
  readonly capabilities: ChannelCapabilities;
  /** Connects and starts delivering messages to `link.receive`; resolves once connected, rejects when it cannot. */
  connect(link: PlatformLink): Promise<void>;
  /** Disconnects; idempotent; `connect` may be called again afterwards. */
  disconnect(): Promise<void>;
  /** Sends one part (already rendered and within `maxMessageLength`); resolves to the new message's id. */
  sendText(target: ReplyTarget, part: OutgoingPart, options?: SendOptions): Promise<string>;
  /** Replaces a sent message's text (required when `capabilities.editMessages`). */
  editText?(target: ReplyTarget, messageId: string, part: OutgoingPart, options?: SendOptions): Promise<void>;
  /**
   * A streamed reply is complete: its messages (the ids `sendText` returned, in order) hold their final text. For a
   * platform whose streamed messages stay open until closed (WeCom's stream messages); the others need not have it.
   */
  finishStream?(target: ReplyTarget, messageIds: readonly string[]): Promise<void>;
  /** Sends a local file (required when `capabilities.media`). */
  sendFile?(target: ReplyTarget, file: OutgoingFile): Promise<void>;
  /**
   * Sends a local audio file as a voice note (the reply spoken, `tts`), where the platform has voice notes. The file
   * is Ogg Opus unless `tts.format` asks for another; the framework deletes it afterwards.
   */
  sendVoice?(target: ReplyTarget, file: OutgoingFile): Promise<void>;
  /** Shows "typing…" for a few seconds, where the platform has it. */
  sendTyping?(target: ReplyTarget): Promise<void>;
  /**
   * Marks a message as received (a reaction such as 👀), where the platform has that; called once the message is
   * accepted for the agent, without waiting for it.
   */
  acknowledge?(message: IncomingMessage): Promise<void>;
  /**
   * The person a direct chat with this exact id is with, where the platform's chat ids name people (Telegram user
   * ids, email addresses): the `message` tool may write there when allowFrom admits them. undefined otherwise.
   */
  directChatWith?(chatId: string): { id: string; username?: string } | undefined;
  /** See `Channel.watchSetup`: a login saved outside the gateway, while the channel waits to reconnect. */
  watchSetup?(changed: () => void): () => void;
}
