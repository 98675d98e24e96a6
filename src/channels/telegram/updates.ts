/**
 * Telegram message → IncomingMessage: who wrote, whether the bot is addressed (@botname, a reply to the bot, a
 * /command@botname), the text without the bot's handle, forum topics, and the attachments (fetched via getFile).
 */
import type { Message, MessageEntity } from '@grammyjs/types';
import type { CommandInfo, IncomingAttachment, IncomingMessage } from '../platform.js';

export interface BotIdentity {
  id: number;
  username: string;
}

/** Downloads a file by its file_id (getFile + the file URL). */
export type OpenFile = (fileId: string, signal: AbortSignal) => Promise<AsyncIterable<Uint8Array>>;

const REPLY_CONTEXT_MAX = 500;

export function toIncoming(
  message: Message,
  bot: BotIdentity,
  openFile: OpenFile,
  commands: readonly CommandInfo[],
): IncomingMessage | undefined {
  const from = message.from;
  if (!from || from.id === bot.id) return undefined;
  const chatId = String(message.chat.id);
  const direct = message.chat.type === 'private';
  const raw = message.text ?? message.caption ?? '';
  const entities = message.entities ?? message.caption_entities ?? [];
  const threadId =
    message.is_topic_message && message.message_thread_id ? String(message.message_thread_id) : undefined;
  const text = normalizeCommand(stripHandle(raw, bot.username), commands);
  const reply = replyContext(message, bot);
  return {
    id: String(message.message_id),
    chatId,
    sender: {
      id: String(from.id),
      ...(from.username ? { username: from.username } : {}),
      name: [from.first_name, from.last_name].filter(Boolean).join(' '),
    },
    chatType: direct ? 'direct' : 'group',
    // A command stays first so it is still recognised as one.
    text: reply && !text.startsWith('/') ? `${reply}\n${text}` : text,
    mentioned: direct || addressesBot(raw, entities, message, bot),
    ...(threadId ? { threadId, sessionKey: `telegram:${chatId}:topic:${threadId}` } : {}),
    attachments: attachmentsOf(message, openFile),
    metadata: {
      ...(message.chat.type !== 'private' && 'title' in message.chat ? { chat_title: message.chat.title } : {}),
      first_name: from.first_name,
    },
  };
}

/** @botname anywhere (entity or plain text), a text_mention of the bot, /cmd@botname, or a reply to the bot. */
export function addressesBot(text: string, entities: readonly MessageEntity[], message: Message, bot: BotIdentity) {
  const handle = `@${bot.username}`.toLowerCase();
  for (const entity of entities) {
    if (entity.type === 'text_mention' && entity.user.id === bot.id) return true;
    const slice = text.slice(entity.offset, entity.offset + entity.length).toLowerCase();
    if (entity.type === 'mention' && slice === handle) return true;
    if (entity.type === 'bot_command' && slice.endsWith(handle)) return true;
  }
  if (text.toLowerCase().includes(handle)) return true;
  return message.reply_to_message?.from?.id === bot.id;
}

function stripHandle(text: string, username: string): string {
  const handle = new RegExp(`@${username.replace(/[^\w]/g, '')}\\b`, 'gi');
  return text.replace(handle, '').replace(/^\s+/, '').replace(/ {2,}/g, ' ');
}

/**
 * Telegram command names allow only [a-z0-9_]: the menu shows `/dream_log` for `/dream-log`, so it is mapped back.
 * `/start` (sent when someone opens the bot) shows the help.
 */
export function normalizeCommand(text: string, commands: readonly CommandInfo[]): string {
  const match = /^\/([a-z0-9_]+)(?=\s|$)/i.exec(text);
  if (!match?.[1]) return text;
  const word = match[1].toLowerCase();
  if (word === 'start') return `/help${text.slice(match[0].length)}`;
  const known = commands.find((c) => c.name.replace(/-/g, '_') === word);
  return known ? `/${known.name}${text.slice(match[0].length)}` : text;
}

/** The message being replied to, as a line of context (the agent sees what "this" refers to). */
function replyContext(message: Message, bot: BotIdentity): string | undefined {
  const quoted = message.reply_to_message;
  if (!quoted) return undefined;
  const text = (quoted.text ?? quoted.caption ?? '').trim();
  if (!text) return undefined;
  const who =
    quoted.from?.id === bot.id ? 'you' : quoted.from?.username ? `@${quoted.from.username}` : quoted.from?.first_name;
  const shown = text.length > REPLY_CONTEXT_MAX ? `${text.slice(0, REPLY_CONTEXT_MAX)}…` : text;
  return `[Reply to ${who ?? 'a message'}: ${shown}]`;
}

function attachmentsOf(message: Message, openFile: OpenFile): IncomingAttachment[] {
  const file = (
    kind: IncomingAttachment['kind'],
    fileId: string,
    extra: { name?: string | undefined; mimeType?: string | undefined; size?: number | undefined },
  ): IncomingAttachment => ({
    kind,
    ...(extra.name ? { name: extra.name } : {}),
    ...(extra.mimeType ? { mimeType: extra.mimeType } : {}),
    ...(extra.size !== undefined ? { size: extra.size } : {}),
    open: (signal) => openFile(fileId, signal),
  });
  const found: IncomingAttachment[] = [];
  // Telegram sends every resolution of a photo; the last is the largest.
  const photo = message.photo?.at(-1);
  if (photo)
    found.push(file('image', photo.file_id, { name: 'photo.jpg', mimeType: 'image/jpeg', size: photo.file_size }));
  const { document, audio, voice, video } = message;
  if (document) {
    const kind = document.mime_type?.startsWith('image/') ? 'image' : 'file';
    found.push(
      file(kind, document.file_id, {
        name: document.file_name,
        mimeType: document.mime_type,
        size: document.file_size,
      }),
    );
  }
  if (audio)
    found.push(
      file('audio', audio.file_id, { name: audio.file_name, mimeType: audio.mime_type, size: audio.file_size }),
    );
  if (voice)
    found.push(file('audio', voice.file_id, { name: 'voice.ogg', mimeType: voice.mime_type, size: voice.file_size }));
  if (video)
    found.push(
      file('video', video.file_id, { name: video.file_name, mimeType: video.mime_type, size: video.file_size }),
    );
  return found;
}
