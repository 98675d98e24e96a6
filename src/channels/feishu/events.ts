/**
 * An `im.message.receive_v1` event → the framework's IncomingMessage: text (and rich-text posts) with the bot's
 * @mention removed and other mentions as `@Name`, images / files / voice / video as attachments fetched through
 * the message resources API, and the facts access control needs (p2p or group, @mentioned or replying to the bot).
 */
import type { AttachmentKind, IncomingAttachment, IncomingMessage } from '../platform.js';

/** The part of the SDK's event data this channel reads. */
export interface MessageEvent {
  sender: { sender_id?: { open_id?: string; user_id?: string; union_id?: string }; sender_type: string };
  message: {
    message_id: string;
    root_id?: string;
    parent_id?: string;
    thread_id?: string;
    chat_id: string;
    chat_type: string;
    message_type: string;
    content: string;
    mentions?: { key: string; id: { open_id?: string; user_id?: string }; name: string }[];
  };
}

export type ResourceType = 'image' | 'file';

export interface EventContext {
  /** The channel name (for per-topic session keys). */
  channel: string;
  botOpenId: string;
  topicIsolation: boolean;
  /** True for a message this bot sent (a reply to it counts as addressing the bot). */
  sentByBot(messageId: string): boolean;
  openResource(
    messageId: string,
    key: string,
    type: ResourceType,
    signal: AbortSignal,
  ): Promise<AsyncIterable<Uint8Array>>;
}

interface Parsed {
  text: string;
  attachments: IncomingAttachment[];
}

export function toIncoming(event: MessageEvent, context: EventContext): IncomingMessage | undefined {
  const { sender, message } = event;
  const senderId = sender.sender_id?.open_id;
  // Messages of other bots and apps are not conversations with this one.
  if (sender.sender_type !== 'user' || !senderId || !message.message_id || !message.chat_id) return undefined;
  const mentions = message.mentions ?? [];
  const botKeys = new Set(mentions.filter((m) => m.id.open_id === context.botOpenId).map((m) => m.key));
  const parsed = parseContent(message, context);
  const text = resolveMentions(parsed.text, mentions, botKeys);
  const mentioned =
    botKeys.size > 0 ||
    message.content.includes('@_all') ||
    (message.parent_id !== undefined && context.sentByBot(message.parent_id));
  // In a topic, replies go to the topic's root message (and with topicIsolation, each topic is its own session).
  const threadId = message.thread_id ? message.root_id || message.message_id : undefined;
  const userId = sender.sender_id?.user_id;
  return {
    id: message.message_id,
    chatId: message.chat_id,
    sender: { id: senderId, ...(userId ? { username: userId } : {}) },
    chatType: message.chat_type === 'p2p' ? 'direct' : 'group',
    text,
    mentioned,
    ...(threadId ? { threadId } : {}),
    ...(threadId && context.topicIsolation
      ? { sessionKey: `${context.channel}:${message.chat_id}:topic:${threadId}` }
      : {}),
    ...(parsed.attachments.length ? { attachments: parsed.attachments } : {}),
    metadata: {
      chat_type: message.chat_type,
      message_type: message.message_type,
      ...(message.parent_id ? { parent_id: message.parent_id } : {}),
    },
  };
}

function parseContent(message: MessageEvent['message'], context: EventContext): Parsed {
  let content: Record<string, unknown>;
  try {
    const value: unknown = JSON.parse(message.content || '{}');
    content = value && typeof value === 'object' ? (value as Record<string, unknown>) : {};
  } catch {
    return { text: message.content, attachments: [] };
  }
  const attach = (kind: AttachmentKind, key: unknown, name?: unknown, mimeType?: string): IncomingAttachment[] => {
    if (typeof key !== 'string' || !key) return [];
    const type: ResourceType = kind === 'image' ? 'image' : 'file';
    return [
      {
        kind,
        ...(typeof name === 'string' && name ? { name } : {}),
        ...(mimeType ? { mimeType } : {}),
        open: (signal) => context.openResource(message.message_id, key, type, signal),
      },
    ];
  };
  switch (message.message_type) {
    case 'text':
      return { text: stringOf(content.text), attachments: [] };
    case 'post':
      return parsePost(content, attach);
    case 'image':
      return { text: '', attachments: attach('image', content.image_key, undefined, 'image/png') };
    case 'file':
      return { text: '', attachments: attach('file', content.file_key, content.file_name) };
    case 'audio':
      // Voice messages are Opus in an Ogg container.
      return { text: '', attachments: attach('audio', content.file_key, 'voice.ogg', 'audio/ogg') };
    case 'media':
      return { text: '', attachments: attach('video', content.file_key, content.file_name ?? 'video.mp4') };
    case 'sticker':
      return { text: '[sticker]', attachments: [] };
    default:
      return { text: `[${message.message_type} message]`, attachments: [] };
  }
}

type Attach = (kind: AttachmentKind, key: unknown, name?: unknown, mimeType?: string) => IncomingAttachment[];

/** A rich-text post: `{title, content: [[element…]…]}`, possibly under a locale key (`zh_cn`) or `post`. */
function parsePost(content: Record<string, unknown>, attach: Attach): Parsed {
  const root = record(content.post) ?? content;
  const body = Array.isArray(root.content)
    ? root
    : (['zh_cn', 'en_us', 'ja_jp', ...Object.keys(root)].map((key) => record(root[key])).find((b) => b?.content) ?? {});
  const lines: string[] = [];
  const attachments: IncomingAttachment[] = [];
  if (typeof body.title === 'string' && body.title) lines.push(body.title);
  for (const row of Array.isArray(body.content) ? body.content : []) {
    if (!Array.isArray(row)) continue;
    let line = '';
    for (const raw of row) {
      const element = record(raw);
      if (!element) continue;
      switch (element.tag) {
        case 'text':
        case 'md':
          line += stringOf(element.text);
          break;
        case 'a':
          line += linkText(stringOf(element.text), stringOf(element.href));
          break;
        case 'at':
          // `user_id` holds the mention key (`@_user_1`): resolved with the message's mentions afterwards.
          line += stringOf(element.user_id) || `@${stringOf(element.user_name)}`;
          break;
        case 'emotion':
          line += `:${stringOf(element.emoji_type)}:`;
          break;
        case 'code_block':
          line += `\n\`\`\`${stringOf(element.language).toLowerCase()}\n${stringOf(element.text)}\n\`\`\`\n`;
          break;
        case 'hr':
          line += '---';
          break;
        case 'img':
          attachments.push(...attach('image', element.image_key, undefined, 'image/png'));
          break;
        case 'media':
          attachments.push(...attach('video', element.file_key, 'video.mp4'));
          break;
      }
    }
    lines.push(line);
  }
  return { text: lines.join('\n').trim(), attachments };
}

/** `@_user_1` placeholders → `@Name`; the bot's own mention is removed. */
function resolveMentions(
  text: string,
  mentions: NonNullable<MessageEvent['message']['mentions']>,
  botKeys: Set<string>,
) {
  let result = text;
  for (const mention of mentions) {
    if (!mention.key) continue;
    // `@_user_1` must not also match inside `@_user_10`.
    const pattern = new RegExp(`${escapeRegExp(mention.key)}(?![A-Za-z0-9_])\\s?`, 'g');
    result = result.replace(pattern, botKeys.has(mention.key) ? '' : `@${mention.name} `);
  }
  return result.replace(/@_all(?![A-Za-z0-9_])\s?/g, '').trim();
}

function linkText(text: string, href: string): string {
  if (!href || text === href) return text || href;
  return text ? `${text} (${href})` : href;
}

function record(value: unknown): Record<string, unknown> | undefined {
  return value && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
}

function stringOf(value: unknown): string {
  return typeof value === 'string' ? value : '';
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
