/**
 * discord.js Message → IncomingMessage: direct message or guild channel, whether the bot is addressed (an @mention
 * of the bot or of its role, or a reply to one of its messages), the text without the bot's mention and with other
 * mentions readable, the message replied to as context, threads as their own sessions, and attachments.
 */
import type { Attachment, Message } from 'discord.js';
import type { AttachmentKind, IncomingAttachment, IncomingMessage } from '../platform.js';

const REPLY_CONTEXT_MAX = 500;

export function toIncoming(message: Message, botId: string): IncomingMessage {
  const direct = message.guildId === null;
  const author = message.author;
  const text = readableText(message, botId);
  const reply = replyContext(message, botId);
  const parentId = threadParentId(message);
  return {
    id: message.id,
    chatId: message.channelId,
    sender: {
      id: author.id,
      username: author.username,
      name: author.globalName ?? author.username,
    },
    chatType: direct ? 'direct' : 'group',
    // A command stays first so it is still recognised as one.
    text: reply && !text.startsWith('/') ? `${reply}\n${text}` : text,
    mentioned: direct || addressesBot(message, botId),
    ...(parentId ? { threadId: message.channelId, sessionKey: `discord:${parentId}:thread:${message.channelId}` } : {}),
    attachments: [...message.attachments.values()].map(toAttachment),
    metadata: {
      ...(message.guildId ? { guild_id: message.guildId } : {}),
      ...(message.reference?.messageId ? { reply_to: message.reference.messageId } : {}),
      ...(parentId ? { parent_channel_id: parentId } : {}),
    },
  };
}

/** The bot's @mention (`<@id>` or the legacy `<@!id>`), its managed role's mention, or a reply to the bot. */
export function addressesBot(message: Message, botId: string): boolean {
  if (message.mentions.users.has(botId)) return true;
  if (message.content.includes(`<@${botId}>`) || message.content.includes(`<@!${botId}>`)) return true;
  if (message.mentions.roles.some((role) => role.tags?.botId === botId)) return true;
  return message.mentions.repliedUser?.id === botId;
}

/** Guild channels listed in `allowChannels` (a thread by its own id or its parent's); direct messages always pass. */
export function channelAllowed(message: Message, allowChannels: readonly string[]): boolean {
  if (allowChannels.length === 0 || message.guildId === null) return true;
  const parentId = threadParentId(message);
  return allowChannels.includes(message.channelId) || (parentId !== undefined && allowChannels.includes(parentId));
}

function threadParentId(message: Message): string | undefined {
  const channel = message.channel;
  return channel?.isThread() ? (channel.parentId ?? undefined) : undefined;
}

/** Without the bot's own mention; other user mentions as `@name` (the model cannot read `<@123>`). */
function readableText(message: Message, botId: string): string {
  const withoutBot = message.content.replace(new RegExp(`<@!?${botId}>`, 'g'), '');
  return withoutBot
    .replace(/<@!?(\d+)>/g, (raw, id: string) => {
      const user = message.mentions.users.get(id);
      return user ? `@${user.username}` : raw;
    })
    .replace(/^\s+/, '')
    .replace(/ {2,}/g, ' ');
}

/** The message being replied to, as a line of context (the agent sees what "this" refers to). */
function replyContext(message: Message, botId: string): string | undefined {
  const id = message.reference?.messageId;
  if (!id) return undefined;
  const quoted = message.channel?.messages.cache.get(id);
  const text = quoted?.content.trim();
  if (!quoted || !text) return undefined;
  const who = quoted.author.id === botId ? 'you' : `@${quoted.author.username}`;
  const shown = text.length > REPLY_CONTEXT_MAX ? `${text.slice(0, REPLY_CONTEXT_MAX)}…` : text;
  return `[Reply to ${who}: ${shown}]`;
}

function toAttachment(attachment: Attachment): IncomingAttachment {
  const mimeType = attachment.contentType?.split(';')[0]?.trim();
  return {
    kind: kindOf(mimeType),
    name: attachment.name,
    ...(mimeType ? { mimeType } : {}),
    size: attachment.size,
    open: (signal) => download(attachment.url, signal),
  };
}

function kindOf(mimeType: string | undefined): AttachmentKind {
  if (mimeType?.startsWith('image/')) return 'image';
  if (mimeType?.startsWith('audio/')) return 'audio';
  if (mimeType?.startsWith('video/')) return 'video';
  return 'file';
}

/** Attachments live on Discord's CDN as plain https URLs (signed, no token needed). */
async function download(url: string, signal: AbortSignal): Promise<AsyncIterable<Uint8Array>> {
  if (!/^https?:\/\//i.test(url)) throw new Error(`refusing to download from ${url}`);
  const response = await fetch(url, { signal });
  if (!response.ok || !response.body) throw new Error(`attachment download answered HTTP ${response.status}`);
  return response.body as AsyncIterable<Uint8Array>;
}
