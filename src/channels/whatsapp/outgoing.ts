/** What the agent sends, as Baileys message content: the chat's JID and the right kind of media message. */
import { basename, extname } from 'node:path';
import type { AnyMessageContent } from 'baileys';
import { UserError } from '../../util/errors.js';
import type { AttachmentKind, OutgoingFile } from '../platform.js';
import { bareJid } from './messages.js';

const MIME: Record<string, string> = {
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.png': 'image/png',
  '.gif': 'image/gif',
  '.webp': 'image/webp',
  '.ogg': 'audio/ogg; codecs=opus',
  '.oga': 'audio/ogg; codecs=opus',
  '.opus': 'audio/ogg; codecs=opus',
  '.mp3': 'audio/mpeg',
  '.m4a': 'audio/mp4',
  '.aac': 'audio/aac',
  '.wav': 'audio/wav',
  '.mp4': 'video/mp4',
  '.3gp': 'video/3gpp',
  '.mov': 'video/quicktime',
  '.pdf': 'application/pdf',
  '.txt': 'text/plain',
  '.csv': 'text/csv',
  '.json': 'application/json',
  '.zip': 'application/zip',
};

export function mimeOf(path: string): string {
  return MIME[extname(path).toLowerCase()] ?? 'application/octet-stream';
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
