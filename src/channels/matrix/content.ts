/**
 * Outgoing `m.room.message` contents: HTML in `formatted_body` (`org.matrix.custom.html`) with a plain-text `body`
 * for notifications and clients without HTML, thread and reply relations, and edits (`m.replace`) for streaming.
 * A Matrix event may not exceed 64 KiB including what the server adds, so contents are checked against a budget.
 */
import { renderMarkdown } from '../markup/render.js';
import type { AttachmentKind, OutgoingPart, ReplyTarget } from '../platform.js';

export const HTML_FORMAT = 'org.matrix.custom.html';
/** 64 KiB per event, minus room for the server's envelope (ids, hashes, signatures). */
export const MAX_CONTENT_BYTES = 60_000;

export type MessageContent = Record<string, unknown>;

const MSGTYPES: Record<AttachmentKind, string> = {
  image: 'm.image',
  audio: 'm.audio',
  video: 'm.video',
  file: 'm.file',
};

export function contentBytes(content: MessageContent): number {
  return Buffer.byteLength(JSON.stringify(content));
}

/** The plain-text twin of a rendered part (what notifications show). */
export function plainBody(part: OutgoingPart): string {
  return renderMarkdown(part.markdown, 'plain') || part.markdown;
}

/** A text message; the HTML is dropped (plain text only) in the unlikely case both would not fit one event. */
export function textContent(part: OutgoingPart, target: ReplyTarget): MessageContent {
  const body = plainBody(part);
  const content: MessageContent = {
    msgtype: 'm.text',
    body,
    format: HTML_FORMAT,
    formatted_body: part.text,
    // An empty m.mentions: names in the reply never ping anyone.
    'm.mentions': {},
    ...relationOf(target),
  };
  if (contentBytes(content) <= MAX_CONTENT_BYTES) return content;
  const { format: _format, formatted_body: _html, ...plain } = content;
  return ensureFits(plain);
}

/** An edit of `eventId` (clients without edit support show the `* …` fallback). */
export function editContent(part: OutgoingPart, eventId: string): MessageContent {
  const body = plainBody(part);
  const replacement: MessageContent = {
    msgtype: 'm.text',
    body,
    format: HTML_FORMAT,
    formatted_body: part.text,
    'm.mentions': {},
  };
  const relation = { 'm.relates_to': { rel_type: 'm.replace', event_id: eventId } };
  const full = {
    ...replacement,
    body: `* ${body}`,
    formatted_body: `* ${part.text}`,
    'm.new_content': replacement,
    ...relation,
  };
  if (contentBytes(full) <= MAX_CONTENT_BYTES) return full;
  // The fallback is a courtesy to old clients: shorten it before touching the replacement itself.
  return ensureFits({
    msgtype: 'm.text',
    body: '* (edited)',
    'm.new_content': replacement,
    'm.mentions': {},
    ...relation,
  });
}

export function fileContent(
  target: ReplyTarget,
  file: { name: string; kind: AttachmentKind; mimeType: string; size: number; url: string },
): MessageContent {
  return {
    msgtype: MSGTYPES[file.kind],
    body: file.name,
    filename: file.name,
    url: file.url,
    info: { mimetype: file.mimeType, size: file.size },
    'm.mentions': {},
    ...relationOf(target),
  };
}

/** A reply in a thread stays in it; a quote (replyToMessage) points at the user's message. */
function relationOf(target: ReplyTarget): MessageContent {
  if (target.threadId) {
    return {
      'm.relates_to': {
        rel_type: 'm.thread',
        event_id: target.threadId,
        is_falling_back: !target.replyTo,
        'm.in_reply_to': { event_id: target.replyTo ?? target.threadId },
      },
    };
  }
  return target.replyTo ? { 'm.relates_to': { 'm.in_reply_to': { event_id: target.replyTo } } } : {};
}

function ensureFits(content: MessageContent): MessageContent {
  const bytes = contentBytes(content);
  if (bytes > MAX_CONTENT_BYTES)
    throw new Error(`a Matrix event may hold 64 KiB; this message needs ${Math.ceil(bytes / 1024)} KiB`);
  return content;
}
