/**
 * What a reply looks like on Feishu: an interactive card (JSON 2.0) with one Markdown element, shared
 * (`update_multi`) so it can be updated in place while the answer streams; plain text when a card is refused.
 * Feishu takes at most 30 KB per card or rich-text request and 150 KB per text request.
 */
import { renderMarkdown } from '../markup/render.js';
import type { OutgoingPart } from '../platform.js';

export const CARD_LIMIT_BYTES = 30 * 1024;
export const TEXT_LIMIT_BYTES = 150 * 1024;
/** Room for the rest of the request body (receive_id, msg_type, uuid). */
const REQUEST_OVERHEAD_BYTES = 512;
const SUMMARY_LENGTH = 60;

/** The `content` of an interactive message showing `markdown` (already in the markdown flavour). */
export function markdownCard(markdown: string, summarySource = markdown): string {
  return card({ tag: 'markdown', content: cardMarkdown(markdown) }, summarySource);
}

/** A card with plain text only: for an update whose Markdown Feishu refused. */
export function plainCard(text: string): string {
  return card({ tag: 'div', text: { tag: 'plain_text', content: text } }, text);
}

export function textContent(text: string): string {
  return JSON.stringify({ text });
}

/** True when a message with this `content` stays under Feishu's request size limit for its type. */
export function fits(content: string, limitBytes: number): boolean {
  // The content travels as a JSON string inside the JSON body: escapes count twice.
  return Buffer.byteLength(JSON.stringify(content), 'utf8') + REQUEST_OVERHEAD_BYTES <= limitBytes;
}

/** The part as plain text, for a text message. */
export function plainText(part: OutgoingPart): string {
  return renderMarkdown(part.markdown, 'plain') || part.text;
}

/** Which id `chatId` is when sending: chats are `oc_…`, users `ou_…` (open id) or `on_…` (union id). */
export function receiveIdType(chatId: string): 'chat_id' | 'open_id' | 'union_id' | 'email' {
  if (chatId.startsWith('ou_')) return 'open_id';
  if (chatId.startsWith('on_')) return 'union_id';
  if (chatId.includes('@')) return 'email';
  return 'chat_id';
}

function card(element: Record<string, unknown>, summarySource: string): string {
  const summary = renderMarkdown(summarySource, 'plain').replace(/\s+/g, ' ').trim().slice(0, SUMMARY_LENGTH);
  return JSON.stringify({
    schema: '2.0',
    config: { update_multi: true, ...(summary ? { summary: { content: summary } } : {}) },
    body: { elements: [element] },
  });
}

const ANGLE_LINK = /\]\(<((?:https?|mailto|tg):[^<>\n]*)>\)/g;

/**
 * The framework's Markdown writes links as `[text](<url>)`; Feishu cards expect `[text](url)`. Code blocks are
 * left as they are.
 */
export function cardMarkdown(markdown: string): string {
  let fence: string | undefined;
  return markdown
    .split('\n')
    .map((line) => {
      const marker = /^\s*(`{3,}|~{3,})/.exec(line)?.[1];
      if (marker) {
        if (!fence) fence = marker;
        else if (marker[0] === fence[0] && marker.length >= fence.length && line.trim() === marker) fence = undefined;
        return line;
      }
      if (fence) return line;
      return line.replace(ANGLE_LINK, (_match, href: string) => `](${href.replace(/[ ()]/g, percentEncode)})`);
    })
    .join('\n');
}

/** `encodeURIComponent` leaves parentheses alone, but they would end the link early. */
function percentEncode(char: string): string {
  return `%${char.charCodeAt(0).toString(16).toUpperCase()}`;
}
