/**
 * What getupdates delivers (a WeixinMessage: sender, context token, items of text / image / voice / file / video,
 * maybe quoting an earlier message), checked with zod and turned into the framework's IncomingMessage.
 */
import { z } from 'zod';
import type { AttachmentKind, IncomingAttachment, IncomingMessage } from '../platform.js';
import { ITEM } from './media.js';

const id = z.union([z.string(), z.number()]).transform(String);

const cdnMedia = z.looseObject({
  encrypt_query_param: z.string().optional().catch(undefined),
  aes_key: z.string().optional().catch(undefined),
  full_url: z.string().optional().catch(undefined),
});

const mediaItem = z.looseObject({
  media: cdnMedia.optional().catch(undefined),
  aeskey: z.string().optional().catch(undefined),
  text: z.string().optional().catch(undefined),
  file_name: z.string().optional().catch(undefined),
  len: id.optional().catch(undefined),
});

const itemFields = {
  type: z.coerce.number().catch(0),
  text_item: z
    .looseObject({ text: z.string().catch('') })
    .optional()
    .catch(undefined),
  image_item: mediaItem.optional().catch(undefined),
  voice_item: mediaItem.optional().catch(undefined),
  file_item: mediaItem.optional().catch(undefined),
  video_item: mediaItem.optional().catch(undefined),
};

const messageItem = z.looseObject({
  ...itemFields,
  ref_msg: z
    .looseObject({
      title: z.string().optional().catch(undefined),
      message_item: z.looseObject(itemFields).optional().catch(undefined),
    })
    .optional()
    .catch(undefined),
});

export const weixinMessage = z.looseObject({
  message_id: id.optional().catch(undefined),
  seq: id.optional().catch(undefined),
  from_user_id: z.string().catch(''),
  create_time_ms: id.optional().catch(undefined),
  message_type: z.coerce.number().optional().catch(undefined),
  context_token: z.string().optional().catch(undefined),
  item_list: z.array(z.unknown()).catch([]),
});

export type WeixinMessage = z.infer<typeof weixinMessage>;
type Item = z.infer<typeof messageItem>;
export type MediaItem = z.infer<typeof mediaItem>;

const DEFAULT_NAMES: Record<AttachmentKind, string> = {
  image: 'image.jpg',
  audio: 'voice.silk',
  video: 'video.mp4',
  file: 'file',
};

/** Messages the bot itself sent come back in the stream too. */
const FROM_BOT = 2;

export function messageId(message: WeixinMessage): string {
  return message.message_id || message.seq || `${message.from_user_id}_${message.create_time_ms ?? ''}`;
}

/** Opens one CDN item as an attachment (platform.ts knows the CDN and keys). */
export type Opener = (item: MediaItem, kind: AttachmentKind) => IncomingAttachment['open'] | undefined;

/** The IncomingMessage for one WeixinMessage, or undefined for the bot's own and sender-less ones. */
export function toIncoming(message: WeixinMessage, open: Opener): IncomingMessage | undefined {
  if (message.message_type === FROM_BOT || !message.from_user_id) return undefined;
  const from = message.from_user_id;
  const lines: string[] = [];
  const attachments: IncomingAttachment[] = [];
  const items = message.item_list.flatMap((raw) => {
    const parsed = messageItem.safeParse(raw);
    return parsed.success ? [parsed.data] : [];
  });
  const attach = (item: Item): boolean => {
    const media = mediaOf(item);
    if (!media) return false;
    const opened = open(media.item, media.kind);
    if (opened) {
      attachments.push({
        kind: media.kind,
        // WeChat sends photos as JPEG and voice as SILK; only files carry a name of their own.
        name: media.item.file_name || DEFAULT_NAMES[media.kind],
        ...(media.kind === 'file' && Number(media.item.len) > 0 ? { size: Number(media.item.len) } : {}),
        open: opened,
      });
    }
    return opened !== undefined;
  };
  for (const item of items) {
    if (item.type === ITEM.text) {
      const text = item.text_item?.text ?? '';
      const quoted = item.ref_msg ? quoteOf(item.ref_msg.title, item.ref_msg.message_item) : '';
      if (text) lines.push(quoted ? `${quoted}\n${text}` : text);
      continue;
    }
    if (item.type === ITEM.voice && item.voice_item?.text) {
      // WeChat's own transcript of the voice message.
      lines.push(`[voice] ${item.voice_item.text}`);
      continue;
    }
    const media = mediaOf(item);
    if (!media) continue;
    if (!attach(item)) lines.push(`[${media.label} not received: no download key]`);
  }
  // A text that quotes a picture or file: the quoted media is what the person means.
  if (attachments.length === 0) {
    const quotedMedia = items.find((item) => item.type === ITEM.text && item.ref_msg?.message_item)?.ref_msg
      ?.message_item;
    if (quotedMedia && mediaOf(quotedMedia)) attach(quotedMedia);
  }
  const isGroup = from.endsWith('@chatroom');
  return {
    id: messageId(message),
    chatId: from,
    // Ids look like `o9cq80…@im.wechat`: the part before @ is what `@name` in allowFrom matches.
    sender: { id: from, username: from.split('@')[0] ?? from },
    chatType: isGroup ? 'group' : 'direct',
    text: lines.join('\n'),
    mentioned: false,
    ...(attachments.length ? { attachments } : {}),
  };
}

function mediaOf(
  item: z.infer<z.ZodObject<typeof itemFields>>,
): { item: MediaItem; kind: AttachmentKind; label: string } | undefined {
  if (item.type === ITEM.image && item.image_item) return { item: item.image_item, kind: 'image', label: 'image' };
  if (item.type === ITEM.voice && item.voice_item) return { item: item.voice_item, kind: 'audio', label: 'voice' };
  if (item.type === ITEM.file && item.file_item) return { item: item.file_item, kind: 'file', label: 'file' };
  if (item.type === ITEM.video && item.video_item) return { item: item.video_item, kind: 'video', label: 'video' };
  return undefined;
}

function quoteOf(title: string | undefined, quoted: z.infer<z.ZodObject<typeof itemFields>> | undefined): string {
  if (quoted && mediaOf(quoted)) return '';
  const parts = [title, quoted?.text_item?.text].filter((part): part is string => Boolean(part));
  return parts.length ? `[quoting: ${parts.join(' | ')}]` : '';
}
