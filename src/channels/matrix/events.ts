/**
 * A Matrix room message → the framework's IncomingMessage: who wrote it (full Matrix ID; the localpart doubles as
 * the username for people on the bot's own homeserver, so `@alice` in allowFrom means "alice on my server"), whether
 * the room is a direct chat, whether the bot was mentioned (m.mentions, a pill, its ID, or a reply to the bot),
 * the thread, and attachments (mxc:// media, downloaded on demand).
 */
import type { MatrixEvent, Room } from 'matrix-js-sdk';
import type { AttachmentKind, IncomingAttachment, IncomingMessage } from '../platform.js';

export interface MatrixIdentity {
  userId: string;
  /** How other members see the bot's name (Element writes it into the body when you click the bot's name). */
  displayName?: string;
}

export interface ConversionContext {
  me: MatrixIdentity;
  direct: boolean;
  allowRoomMentions: boolean;
  /** Opens an mxc:// URI for reading. */
  download(mxc: string, signal: AbortSignal): Promise<AsyncIterable<Uint8Array>>;
}

const MEDIA_KINDS: Record<string, AttachmentKind> = {
  'm.image': 'image',
  'm.audio': 'audio',
  'm.video': 'video',
  'm.file': 'file',
};

interface Relation {
  rel_type?: string;
  event_id?: string;
  'm.in_reply_to'?: { event_id?: string };
}

/** The server part of a Matrix ID (`example.org` of `@alice:example.org`). */
export function serverOf(userId: string): string {
  return userId.slice(userId.indexOf(':') + 1);
}

export function senderOf(userId: string, me: MatrixIdentity, name: string | undefined) {
  const sameServer = serverOf(userId) === serverOf(me.userId);
  const localpart = userId.slice(1, userId.indexOf(':'));
  return {
    id: userId,
    ...(sameServer && localpart ? { username: localpart } : {}),
    ...(name && name !== userId ? { name } : {}),
  };
}

/** The framework's message for an `m.room.message` event, or undefined for what the agent should not see. */
export function toIncoming(event: MatrixEvent, room: Room, context: ConversionContext): IncomingMessage | undefined {
  const content = event.getContent();
  const sender = event.getSender();
  const id = event.getId();
  if (!sender || !id) return undefined;
  const relation = (content['m.relates_to'] ?? {}) as Relation;
  // An edit of an earlier message is not a new question; m.notice is what bots send (answering them loops).
  if (relation.rel_type === 'm.replace' || content.msgtype === 'm.notice') return undefined;
  const msgtype = typeof content.msgtype === 'string' ? content.msgtype : '';
  const body = typeof content.body === 'string' ? content.body : '';
  const attachments = attachmentsOf(content, msgtype, context);
  // For media the body is the file name, unless a separate `filename` makes it a caption.
  const caption = typeof content.filename === 'string' && content.filename !== body ? body : '';
  let text = attachments.length > 0 ? caption : stripReplyFallback(body, relation);
  if (msgtype === 'm.emote') text = `* ${room.getMember(sender)?.name ?? sender} ${text}`;
  if (!text.trim() && attachments.length === 0) return undefined;
  const mentioned = isMentioned(content, relation, room, context);
  const threadId = relation.rel_type === 'm.thread' ? relation.event_id : undefined;
  return {
    id,
    chatId: room.roomId,
    sender: senderOf(sender, context.me, room.getMember(sender)?.name),
    chatType: context.direct ? 'direct' : 'group',
    text: mentioned ? withoutMention(text, context.me) : text,
    mentioned,
    ...(threadId ? { threadId } : {}),
    ...(attachments.length ? { attachments } : {}),
    metadata: { room_name: room.name, event_id: id },
  };
}

function isMentioned(content: Record<string, unknown>, relation: Relation, room: Room, context: ConversionContext) {
  const me = context.me.userId;
  const mentions = content['m.mentions'] as { user_ids?: unknown; room?: unknown } | undefined;
  if (Array.isArray(mentions?.user_ids) && mentions.user_ids.includes(me)) return true;
  if (context.allowRoomMentions && mentions?.room === true) return true;
  const html = typeof content.formatted_body === 'string' ? content.formatted_body : '';
  if (html.includes(`matrix.to/#/${me}`) || html.includes(`matrix.to/#/${encodeURIComponent(me)}`)) return true;
  const body = typeof content.body === 'string' ? content.body : '';
  if (body.includes(me)) return true;
  // Clients without m.mentions write the pill as the display name at the start ("Nano: hi").
  const name = context.me.displayName;
  if (name && new RegExp(`^${escapeRegExp(name)}[:,]`, 'i').test(body)) return true;
  const repliedTo = relation['m.in_reply_to']?.event_id;
  return (
    repliedTo !== undefined && relation.rel_type !== 'm.thread' && room.findEventById(repliedTo)?.getSender() === me
  );
}

function withoutMention(text: string, me: MatrixIdentity): string {
  let result = text.split(me.userId).join(' ');
  if (me.displayName) result = result.replace(new RegExp(`^\\s*${escapeRegExp(me.displayName)}[:,]?`, 'i'), '');
  return result
    .replace(/^[\s:,]+/, '')
    .replace(/ {2,}/g, ' ')
    .trim();
}

/** Older clients quote the message they reply to as `> <@user> text` lines before the answer. */
function stripReplyFallback(body: string, relation: Relation): string {
  if (!relation['m.in_reply_to']) return body;
  const lines = body.split('\n');
  let i = 0;
  while (i < lines.length && lines[i]?.startsWith('>')) i++;
  if (i === 0 || lines[i]?.trim() !== '') return body;
  return lines.slice(i + 1).join('\n');
}

function attachmentsOf(content: Record<string, unknown>, msgtype: string, context: ConversionContext) {
  const kind = MEDIA_KINDS[msgtype];
  const url = content.url;
  // Encrypted media (`file` instead of `url`) only occurs in encrypted rooms, which are not supported.
  if (!kind || typeof url !== 'string' || !url.startsWith('mxc://')) return [];
  const info = (content.info ?? {}) as { size?: unknown; mimetype?: unknown };
  const name = typeof content.filename === 'string' ? content.filename : content.body;
  const attachment: IncomingAttachment = {
    kind,
    ...(typeof name === 'string' && name ? { name } : {}),
    ...(typeof info.mimetype === 'string' ? { mimeType: info.mimetype } : {}),
    ...(typeof info.size === 'number' ? { size: info.size } : {}),
    open: (signal) => context.download(url, signal),
  };
  return [attachment];
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
