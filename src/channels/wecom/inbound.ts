/**
 * A message callback (`aibot_msg_callback`) → an IncomingMessage. The body names the sender (`from.userid`), the chat
 * type (`single` / `group`) and, in groups only, the chat (`chatid`); a private chat's id is the sender's userid, as
 * upstream. WeCom pushes a group message only when it @-mentions the bot, so group messages count as mentioned.
 * Text, voice (WeCom's own transcript), image, file, video and mixed (text + images) are understood; anything else
 * is named in brackets, as upstream does.
 */
import { z } from 'zod';
import type { IncomingAttachment, IncomingMessage } from '../platform.js';
import { type DownloadOptions, type EncryptedMedia, toAttachment } from './media.js';

const mediaSchema = z.looseObject({
  url: z.string().min(1),
  aeskey: z.string().optional(),
  name: z.string().optional(),
  filename: z.string().optional(),
});

const itemSchema = z.looseObject({
  msgtype: z.string(),
  text: z.looseObject({ content: z.string().default('') }).optional(),
  image: mediaSchema.optional(),
});

export const bodySchema = z.looseObject({
  msgid: z.string().min(1).optional(),
  chatid: z.string().min(1).optional(),
  chattype: z.string().default('single'),
  from: z.looseObject({ userid: z.string().min(1) }),
  msgtype: z.string().min(1),
  create_time: z.number().optional(),
  text: z.looseObject({ content: z.string().default('') }).optional(),
  voice: z.looseObject({ content: z.string().default('') }).optional(),
  image: mediaSchema.optional(),
  file: mediaSchema.optional(),
  video: mediaSchema.optional(),
  mixed: z.looseObject({ msg_item: z.array(z.unknown()).default([]) }).optional(),
  quote: z.unknown().optional(),
});
export type CallbackBody = z.infer<typeof bodySchema>;

/** The chat a callback belongs to: the group's chatid, or the sender's userid for a private chat. */
export function chatIdOf(body: Pick<CallbackBody, 'chatid' | 'chattype' | 'from'>): string {
  return body.chattype === 'group' && body.chatid ? body.chatid : body.from.userid;
}

const asMedia = (raw: z.infer<typeof mediaSchema>): EncryptedMedia => ({
  url: raw.url,
  ...(raw.aeskey ? { aeskey: raw.aeskey } : {}),
  ...((raw.name ?? raw.filename) ? { name: raw.name ?? raw.filename } : {}),
});

/** A leading @mention of the bot in a group ("@助手 hello" → "hello"): WeCom keeps it in the text. */
const stripMention = (text: string) => text.replace(/^\s*@\S+\s*/u, '');

export function toIncoming(body: CallbackBody, download: DownloadOptions): IncomingMessage | undefined {
  const group = body.chattype === 'group';
  const texts: string[] = [];
  const attachments: IncomingAttachment[] = [];
  switch (body.msgtype) {
    case 'text':
      texts.push(body.text?.content ?? '');
      break;
    case 'voice':
      texts.push(body.voice?.content ? `[voice] ${body.voice.content}` : '[voice]');
      break;
    case 'image':
    case 'file':
    case 'video': {
      const media = body[body.msgtype];
      if (media)
        attachments.push(toAttachment(body.msgtype === 'video' ? 'video' : body.msgtype, asMedia(media), download));
      else texts.push(`[${body.msgtype}]`);
      break;
    }
    case 'mixed':
      for (const raw of body.mixed?.msg_item ?? []) {
        const item = itemSchema.safeParse(raw);
        if (!item.success) continue;
        if (item.data.msgtype === 'text' && item.data.text?.content) texts.push(item.data.text.content);
        else if (item.data.msgtype === 'image' && item.data.image)
          attachments.push(toAttachment('image', asMedia(item.data.image), download));
        else texts.push(`[${item.data.msgtype}]`);
      }
      break;
    default:
      texts.push(`[${body.msgtype}]`);
  }
  let text = texts.join('\n');
  if (group) text = stripMention(text);
  if (!text.trim() && attachments.length === 0) return undefined;
  const chatId = chatIdOf(body);
  return {
    // Upstream's fallback when a callback has no msgid: chat and time.
    id: body.msgid ?? `${chatId}_${body.create_time ?? ''}`,
    chatId,
    sender: { id: body.from.userid },
    chatType: group ? 'group' : 'direct',
    text,
    mentioned: group,
    ...(attachments.length ? { attachments } : {}),
    metadata: { msg_type: body.msgtype, chat_type: body.chattype },
  };
}
