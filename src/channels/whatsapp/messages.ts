/**
 * What a WhatsApp message means to the framework: who sent it (a phone number, whatever id form the server used),
 * in which chat, its text with the bot's @mention removed, whether it addresses the bot, and its media. Pure
 * functions over Baileys' message objects, so they are tested without a connection.
 */
import type { proto, WAMessage } from 'baileys';
import type { AttachmentKind } from '../platform.js';

type Message = proto.IMessage;
type ContextInfo = proto.IContextInfo;

export interface BotIds {
  /** The bot's own ids without device suffix: its phone-number JID and its LID. */
  jids: ReadonlySet<string>;
}

/** `4915…:12@s.whatsapp.net` → `4915…@s.whatsapp.net`; anything not shaped `user@server` → undefined. */
export function bareJid(jid: string | null | undefined): string | undefined {
  const match = /^([^@:\s]+)(?::\d+)?@([a-z.]+)$/i.exec(jid ?? '');
  if (!match) return undefined;
  const [, user, server] = match as unknown as [string, string, string];
  return `${user}@${server.toLowerCase()}`;
}

const PN = '@s.whatsapp.net';
const LID = '@lid';
const GROUP = '@g.us';

export function isGroupJid(jid: string): boolean {
  return jid.endsWith(GROUP);
}

/** The chats answered: one-to-one (phone number or LID) and groups; never status, broadcast lists or channels. */
export function isServedChat(jid: string): boolean {
  return jid.endsWith(PN) || jid.endsWith(LID) || isGroupJid(jid);
}

/**
 * The sender as allowFrom names people: the phone number's digits. A LID (WhatsApp's privacy id) becomes the phone
 * number when the server gave it alongside (`…Alt`) or `lidMappings` names it; otherwise it stays `<lid>@lid`.
 */
export function senderId(
  jid: string,
  altJid: string | undefined,
  lidMappings: Readonly<Record<string, string>>,
): string {
  for (const candidate of [jid, altJid]) {
    const bare = bareJid(candidate);
    if (bare?.endsWith(PN)) return bare.slice(0, -PN.length);
  }
  const bare = bareJid(jid) ?? jid;
  const lid = bare.endsWith(LID) ? bare.slice(0, -LID.length) : bare;
  const mapped = lidMappings[lid] ?? lidMappings[bare];
  return mapped ? mapped.replace(/[^\d]/g, '') || mapped : bare;
}

/** The content inside the wrappers WhatsApp adds (disappearing, view-once, edited, document-with-caption). */
export function unwrap(message: Message | null | undefined): Message | undefined {
  let current = message ?? undefined;
  for (let depth = 0; current && depth < 5; depth++) {
    const inner =
      current.ephemeralMessage?.message ??
      current.viewOnceMessage?.message ??
      current.viewOnceMessageV2?.message ??
      current.viewOnceMessageV2Extension?.message ??
      current.documentWithCaptionMessage?.message;
    if (!inner) return current;
    current = inner;
  }
  return current;
}

export function textOf(message: Message): string {
  return (
    message.conversation ??
    message.extendedTextMessage?.text ??
    message.imageMessage?.caption ??
    message.videoMessage?.caption ??
    message.documentMessage?.caption ??
    ''
  );
}

export function contextOf(message: Message): ContextInfo | undefined {
  return (
    message.extendedTextMessage?.contextInfo ??
    message.imageMessage?.contextInfo ??
    message.videoMessage?.contextInfo ??
    message.audioMessage?.contextInfo ??
    message.documentMessage?.contextInfo ??
    undefined
  );
}

/** @mentioned (the JID in mentionedJid) or a reply quoting one of the bot's messages. */
export function addressesBot(context: ContextInfo | undefined, bot: BotIds): boolean {
  const ids = [...(context?.mentionedJid ?? []), context?.participant ?? ''].map(bareJid);
  return ids.some((id) => id !== undefined && bot.jids.has(id));
}

/** The text without the bot's `@<number>` tokens (WhatsApp writes a mention as @ plus the id's user part). */
export function withoutBotMention(text: string, bot: BotIds): string {
  let out = text;
  for (const jid of bot.jids) {
    const user = jid.split('@')[0];
    if (user) out = out.split(`@${user}`).join('');
  }
  return out.replace(/[ \t]{2,}/g, ' ').trim();
}

export interface MediaPart {
  kind: AttachmentKind;
  /** Baileys' media type for downloadContentFromMessage. */
  type: 'image' | 'audio' | 'video' | 'document' | 'sticker';
  content:
    | proto.Message.IImageMessage
    | proto.Message.IAudioMessage
    | proto.Message.IVideoMessage
    | proto.Message.IDocumentMessage
    | proto.Message.IStickerMessage;
  name?: string;
  mimeType?: string;
  size?: number;
  /** A voice note (push-to-talk), not a music file. */
  voice?: boolean;
}

export function mediaOf(message: Message): MediaPart | undefined {
  const size = (value: number | { toNumber(): number } | null | undefined) =>
    value === null || value === undefined ? undefined : typeof value === 'number' ? value : value.toNumber();
  const common = (content: MediaPart['content']) => ({
    content,
    ...(content.mimetype ? { mimeType: content.mimetype } : {}),
    ...(size(content.fileLength) !== undefined ? { size: size(content.fileLength) } : {}),
  });
  if (message.imageMessage) return { kind: 'image', type: 'image', ...common(message.imageMessage) };
  if (message.stickerMessage) return { kind: 'image', type: 'sticker', ...common(message.stickerMessage) };
  if (message.videoMessage) return { kind: 'video', type: 'video', ...common(message.videoMessage) };
  if (message.audioMessage) {
    return { kind: 'audio', type: 'audio', ...common(message.audioMessage), voice: message.audioMessage.ptt === true };
  }
  if (message.documentMessage) {
    const name = message.documentMessage.fileName ?? undefined;
    return { kind: 'file', type: 'document', ...common(message.documentMessage), ...(name ? { name } : {}) };
  }
  return undefined;
}

/**
 * Where media may be downloaded from: WhatsApp's media hosts over https (`mmg.whatsapp.net`, `*.whatsapp.net`), or,
 * when the socket is a loopback test server, that same server. A message naming any other URL is refused: the
 * sender chooses the URL, and the gateway must not fetch an address on its own network for them.
 */
export function mediaUrlAllowed(raw: string, socket: URL): boolean {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return false;
  }
  if (url.username || url.password) return false;
  if (url.protocol === 'https:' && (url.hostname === 'whatsapp.net' || url.hostname.endsWith('.whatsapp.net'))) {
    return url.port === '' || url.port === '443';
  }
  const testServer = socket.hostname !== 'web.whatsapp.com';
  return testServer && /^https?:$/.test(url.protocol) && url.host === socket.host;
}

/** The message's key facts, validated: everything else about a WAMessage is optional. */
export function keyOf(
  message: WAMessage,
): { chat: string; id: string; participant?: string; fromMe: boolean } | undefined {
  const chat = bareJid(message.key.remoteJid);
  const id = message.key.id;
  if (!chat || !id || !/^[\w.-]{1,128}$/.test(id)) return undefined;
  const participant = message.key.participant ? bareJid(message.key.participant) : undefined;
  return { chat, id, ...(participant ? { participant } : {}), fromMe: message.key.fromMe === true };
}
