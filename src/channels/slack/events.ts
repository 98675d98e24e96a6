/**
 * Slack events → IncomingMessage: who wrote and where (DM, channel, thread), whether the bot is addressed
 * (`app_mention`, or `<@BOT>` in the text), the text in readable form (Slack's `<…>` links and mentions and its
 * `&amp;` escapes undone), and the shared files.
 */
import type { IncomingAttachment, IncomingMessage } from '../platform.js';

/** The fields of a Slack `message` / `app_mention` event this channel reads. */
export interface SlackMessageEvent {
  type: string;
  subtype?: string;
  channel?: string;
  channel_type?: string;
  user?: string;
  bot_id?: string;
  text?: string;
  ts?: string;
  thread_ts?: string;
  files?: SlackFile[];
}

export interface SlackFile {
  id?: string;
  name?: string;
  title?: string;
  mimetype?: string;
  size?: number;
  url_private?: string;
  url_private_download?: string;
}

export interface BotIdentity {
  userId: string;
  botId?: string;
}

/** A user's display facts (users.info), when the app may read them. */
export interface SlackUser {
  username?: string;
  name?: string;
}

/** Messages from people: plain, with files, or a thread reply also sent to the channel. Edits, joins, bots are not. */
const USER_SUBTYPES = new Set(['file_share', 'thread_broadcast']);

export interface ConvertOptions {
  bot: BotIdentity;
  replyInThread: boolean;
  user: SlackUser;
  openFile: (file: SlackFile, signal: AbortSignal) => Promise<AsyncIterable<Uint8Array>>;
}

/** True when the event is a person's message this channel should look at (not an edit, a join, or any bot's). */
export function isUserMessage(event: SlackMessageEvent, bot: BotIdentity): boolean {
  if (event.subtype && !USER_SUBTYPES.has(event.subtype)) return false;
  if (!event.user || !event.channel || !event.ts) return false;
  // Other apps' messages too: two bots answering each other in an open channel would never stop.
  if (event.user === bot.userId || event.bot_id) return false;
  return true;
}

export function isDirect(event: { channel_type?: string; channel?: string }): boolean {
  return event.channel_type ? event.channel_type === 'im' : (event.channel ?? '').startsWith('D');
}

export function mentionsBot(event: SlackMessageEvent, bot: BotIdentity): boolean {
  return event.type === 'app_mention' || (event.text ?? '').includes(`<@${bot.userId}>`);
}

/**
 * The thread a reply goes to: the user's thread, or (in channels, with `replyInThread`) a new one under their
 * message. A thread is its own conversation with the agent, so it gets its own session.
 */
export function threadOf(event: SlackMessageEvent, replyInThread: boolean): string | undefined {
  if (event.thread_ts) return event.thread_ts;
  return replyInThread && !isDirect(event) ? event.ts : undefined;
}

export function toIncoming(event: SlackMessageEvent, options: ConvertOptions): IncomingMessage {
  const channel = event.channel ?? '';
  const direct = isDirect(event);
  const threadId = threadOf(event, options.replyInThread);
  return {
    id: event.ts ?? '',
    chatId: channel,
    sender: {
      id: event.user ?? '',
      ...(options.user.username ? { username: options.user.username } : {}),
      ...(options.user.name ? { name: options.user.name } : {}),
    },
    chatType: direct ? 'direct' : 'group',
    text: readableText(event.text ?? '', options.bot.userId),
    mentioned: direct || mentionsBot(event, options.bot),
    ...(threadId ? { threadId, sessionKey: `slack:${channel}:${threadId}` } : {}),
    attachments: (event.files ?? []).map((file) => attachmentOf(file, options.openFile)),
    metadata: { channel_type: event.channel_type ?? (direct ? 'im' : 'channel'), ts: event.ts },
  };
}

/**
 * Slack's wire text → what a person reads: the bot's own mention removed, `<@U1|ann>` → `@ann`, `<#C1|general>` →
 * `#general`, `<!here>` → `@here`, `<https://x|label>` → `label (https://x)`, then `&lt; &gt; &amp;` decoded.
 */
export function readableText(text: string, botUserId: string): string {
  return text
    .replace(new RegExp(`<@${escapeRegExp(botUserId)}(?:\\|[^>]*)?>\\s*`, 'g'), '')
    .replace(/<([^<>]+)>/g, (_, inner: string) => readableSequence(inner))
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&')
    .replace(/ {2,}/g, ' ')
    .trim();
}

function readableSequence(inner: string): string {
  const bar = inner.indexOf('|');
  const target = bar === -1 ? inner : inner.slice(0, bar);
  const label = bar === -1 ? undefined : inner.slice(bar + 1);
  if (target.startsWith('@')) return label ? `@${label.replace(/^@/, '')}` : target;
  if (target.startsWith('#')) return label ? `#${label}` : target;
  if (target.startsWith('!')) {
    if (label) return label;
    const word = target.slice(1).split('^')[0] ?? '';
    return ['here', 'channel', 'everyone'].includes(word) ? `@${word}` : target;
  }
  if (target.startsWith('mailto:')) return label ?? target.slice('mailto:'.length);
  return label && label !== target ? `${label} (${target})` : target;
}

/** Which Slack thread context lines the agent gets: `- <who>: <text>`, the current message excluded. */
export function threadContextLines(
  messages: readonly { user?: string; bot_id?: string; text?: string; ts?: string; subtype?: string }[],
  bot: BotIdentity,
  currentTs: string | undefined,
): string[] {
  const lines: string[] = [];
  for (const message of messages) {
    if (message.ts === currentTs || (message.subtype && !USER_SUBTYPES.has(message.subtype))) continue;
    const text = readableText(message.text ?? '', bot.userId);
    if (!text) continue;
    const fromBot = message.user === bot.userId || (bot.botId !== undefined && message.bot_id === bot.botId);
    const who = fromBot ? 'you' : `@${message.user ?? message.bot_id ?? 'someone'}`;
    lines.push(`- ${who}: ${text.length > 500 ? `${text.slice(0, 500)}…` : text}`);
  }
  return lines;
}

function attachmentOf(file: SlackFile, openFile: ConvertOptions['openFile']): IncomingAttachment {
  const mime = file.mimetype ?? '';
  const kind = mime.startsWith('image/')
    ? 'image'
    : mime.startsWith('audio/')
      ? 'audio'
      : mime.startsWith('video/')
        ? 'video'
        : 'file';
  const name = file.name ?? file.title;
  return {
    kind,
    ...(name ? { name } : {}),
    ...(mime ? { mimeType: mime } : {}),
    ...(typeof file.size === 'number' ? { size: file.size } : {}),
    open: (signal) => openFile(file, signal),
  };
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
