/**
 * A robot message as DingTalk delivers it on the robot topic (the CALLBACK frame's `data`, JSON), read into the
 * framework's IncomingMessage. Types: text, picture, file, audio (with DingTalk's speech recognition as its text),
 * video and richText (text runs with their bold/italic/code styles, and pictures). Files come as a downloadCode
 * that the robot API turns into a short-lived address.
 *
 * Who sent it is senderStaffId (the user id inside the organisation: what allowFrom names and what replies go to),
 * else senderId, as upstream. Chat ids, as upstream's: the sender's id for a one-to-one chat (conversationType "1"),
 * `group:<openConversationId>` for a group ("2").
 */
import { z } from 'zod';
import type { AttachmentKind, IncomingAttachment, IncomingMessage } from '../platform.js';

export const GROUP_PREFIX = 'group:';

const downloadable = z.looseObject({
  downloadCode: z.string().min(1).optional(),
  pictureDownloadCode: z.string().min(1).optional(),
  fileName: z.string().optional(),
  recognition: z.string().optional(),
  richText: z.array(z.unknown()).optional(),
});

export const robotMessageSchema = z.looseObject({
  msgId: z.string().min(1),
  msgtype: z.string().default('text'),
  conversationType: z.string().optional(),
  conversationId: z.string().min(1).optional(),
  senderStaffId: z.string().optional(),
  senderId: z.string().optional(),
  senderNick: z.string().optional(),
  isInAtList: z.boolean().optional(),
  text: z.looseObject({ content: z.string().default('') }).optional(),
  content: z.union([downloadable, z.string()]).optional(),
});
export type RobotMessage = z.infer<typeof robotMessageSchema>;

const richItem = z.looseObject({
  text: z.string().optional(),
  type: z.string().optional(),
  downloadCode: z.string().min(1).optional(),
  fileName: z.string().optional(),
});

/** Opens a file a user sent, by its downloadCode. */
export type OpenDownload = (downloadCode: string, signal: AbortSignal) => Promise<AsyncIterable<Uint8Array>>;

export interface ReadOptions {
  open: OpenDownload;
  /** Upstream's groupUserIsolation: each member of a group gets a session of their own. */
  groupUserIsolation: boolean;
}

/** The message, or why it is not one the agent can take. */
export function readRobotMessage(data: unknown, options: ReadOptions): IncomingMessage | { skip: string } {
  const parsed = robotMessageSchema.safeParse(data);
  if (!parsed.success) return { skip: 'a robot message without the expected fields' };
  const message = parsed.data;
  const senderId = message.senderStaffId?.trim() || message.senderId?.trim();
  if (!senderId) return { skip: 'a robot message without a sender id' };
  const group = message.conversationType === '2';
  if (group && !message.conversationId) return { skip: 'a group message without its conversationId' };
  const chatId = group ? `${GROUP_PREFIX}${message.conversationId}` : senderId;
  const { text, attachments } = contentOf(message, options.open);
  return {
    id: message.msgId,
    chatId,
    sender: { id: senderId, ...(message.senderNick ? { name: message.senderNick } : {}) },
    chatType: group ? 'group' : 'direct',
    text,
    // A robot in a group only hears the messages that @mention it.
    mentioned: group ? message.isInAtList !== false : false,
    ...(group && options.groupUserIsolation
      ? { sessionKey: `dingtalk:group:${message.conversationId}:${senderId}` }
      : {}),
    ...(attachments.length ? { attachments } : {}),
    metadata: {
      ...(message.senderNick ? { sender_name: message.senderNick } : {}),
      conversation_type: message.conversationType,
    },
  };
}

function contentOf(message: RobotMessage, open: OpenDownload): { text: string; attachments: IncomingAttachment[] } {
  const content = typeof message.content === 'object' ? message.content : {};
  const code = content.downloadCode ?? content.pictureDownloadCode;
  const file = (kind: AttachmentKind, name: string | undefined): IncomingAttachment[] =>
    code ? [attachment(kind, name, code, open)] : [];
  switch (message.msgtype) {
    case 'text':
      return { text: (message.text?.content ?? '').trim(), attachments: [] };
    case 'picture':
      return { text: '', attachments: file('image', 'image.jpg') };
    case 'file':
      return { text: '', attachments: file('file', content.fileName ?? 'file') };
    case 'audio':
      return { text: (content.recognition ?? '').trim(), attachments: file('audio', 'voice.amr') };
    case 'video':
      return { text: '', attachments: file('video', 'video.mp4') };
    case 'richText':
      return richText(content.richText ?? [], open);
    default:
      return { text: (message.text?.content ?? '').trim(), attachments: [] };
  }
}

/** Rich text: styled runs become Markdown, pictures and files attachments, in their order. */
function richText(items: unknown[], open: OpenDownload): { text: string; attachments: IncomingAttachment[] } {
  const runs: string[] = [];
  const attachments: IncomingAttachment[] = [];
  for (const raw of items) {
    const parsed = richItem.safeParse(raw);
    if (!parsed.success) continue;
    const item = parsed.data;
    const text = item.text?.trim();
    if (text) runs.push(styled(text, item.type));
    if (item.downloadCode) {
      const kind: AttachmentKind = item.type === 'picture' || !item.fileName ? 'image' : 'file';
      attachments.push(attachment(kind, item.fileName ?? 'image.jpg', item.downloadCode, open));
    }
  }
  return { text: runs.join(' '), attachments };
}

function styled(text: string, type: string | undefined): string {
  if (type === 'bold') return `**${text}**`;
  if (type === 'italic') return `*${text}*`;
  if (type === 'inlineCode') return `\`${text}\``;
  if (type === 'pre') return `\`\`\`\n${text}\n\`\`\``;
  return text;
}

function attachment(kind: AttachmentKind, name: string | undefined, code: string, open: OpenDownload) {
  return { kind, ...(name ? { name } : {}), open: (signal: AbortSignal) => open(code, signal) };
}
