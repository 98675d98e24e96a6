/** What the agent sends, as Baileys message content: the chat's JID and the right kind of media message. */
import { basename } from 'node:path';
import type { AnyMessageContent } from 'baileys';
import { UserError } from '../../util/errors.js';
import { mimeTypeOf } from '../media.js';
import type { AttachmentKind, OutgoingFile } from '../platform.js';
import { bareJid } from './messages.js';

/** WhatsApp plays a voice note only when its type names the Opus codec. */
export function mimeOf(path: string): string {
  const mime = mimeTypeOf(path);
  return mime === 'audio/ogg' ? 'audio/ogg; codecs=opus' : mime;
}

/** A chat id as the agent may name it: a JID, or a phone number (`+49 151…`) for a one-to-one chat. */
export function toChatJid(chatId: string): string {
  const jid = bareJid(chatId);
  if (jid) return jid;
  const digits = chatId.replace(/[\s().+-]/g, '');
  if (/^\d{1,20}$/.test(digits)) return `${digits}@s.whatsapp.net`;
  throw new UserError(`Not a WhatsApp chat: ${chatId}`, 'Use a phone number with country code or a chat JID.');
}

/**
 * Images and videos show inline, Opus audio as a voice note (what WhatsApp records), other audio as a music file,
 * anything else as a document under its name.
 */
export function outgoingContent(file: OutgoingFile, byExtension: AttachmentKind): AnyMessageContent {
  const mimetype = mimeOf(file.path);
  const source = { url: file.path };
  const kind = file.kind === 'file' ? byExtension : file.kind;
  if (kind === 'image' && mimetype.startsWith('image/')) return { image: source, mimetype };
  if (kind === 'video' && mimetype.startsWith('video/')) return { video: source, mimetype };
  if (kind === 'audio' && mimetype.startsWith('audio/')) {
    return { audio: source, mimetype, ptt: mimetype.startsWith('audio/ogg') };
  }
  return { document: source, mimetype, fileName: basename(file.name || file.path) };
}
