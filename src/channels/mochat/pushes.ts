/**
 * The shapes other than watch payloads that bring MoChat messages, each turned into a `message.add` event:
 * `notify:chat.message.*` pushes (panel messages), `notify:chat.inbox.append` (a session message, named by its
 * conversation id), and the listing `/api/claw/groups/panels/messages` answers (newest first).
 */
import { isObject, type Json, type MessageEvent, stringField, syntheticEvent } from './events.js';

/** A panel message push: its panel and group, and the event; undefined when it names no panel or group. */
export function chatMessageEvent(raw: unknown): { panelId: string; groupId: string; event: MessageEvent } | undefined {
  const groupId = stringField(raw, 'groupId');
  const panelId = stringField(raw, 'converseId', 'panelId');
  if (!groupId || !panelId || !isObject(raw)) return undefined;
  const event = syntheticEvent({
    messageId: stringField(raw, '_id', 'messageId'),
    author: stringField(raw, 'author'),
    content: raw.content,
    meta: raw.meta,
    groupId,
    converseId: panelId,
    timestamp: raw.createdAt,
    authorInfo: raw.authorInfo,
  });
  return { panelId, groupId, event };
}

/** An inbox push about a session message: its conversation id and a maker of the event. */
export function inboxMessage(raw: unknown): { converseId: string; event: MessageEvent } | undefined {
  if (!isObject(raw) || raw.type !== 'message' || !isObject(raw.payload)) return undefined;
  const detail = raw.payload;
  // A group message in the inbox: panels bring it themselves.
  if (stringField(detail, 'groupId')) return undefined;
  const converseId = stringField(detail, 'converseId');
  if (!converseId) return undefined;
  const event = syntheticEvent({
    messageId: stringField(detail, 'messageId') || stringField(raw, '_id'),
    author: stringField(detail, 'messageAuthor'),
    content: stringField(detail, 'messagePlainContent') || stringField(detail, 'messageSnippet'),
    meta: { source: 'notify:chat.inbox.append', converseId },
    groupId: '',
    converseId,
    timestamp: raw.createdAt,
  });
  return { converseId, event };
}

/** A panel listing's messages as events, oldest first, with the group id it names ('' when none). */
export function panelListing(answer: Json, panelId: string): { groupId: string; events: MessageEvent[] } | undefined {
  if (!Array.isArray(answer.messages)) return undefined;
  const groupId = stringField(answer, 'groupId');
  const events = [...answer.messages].reverse().flatMap((message: unknown) =>
    isObject(message)
      ? [
          syntheticEvent({
            messageId: stringField(message, 'messageId'),
            author: stringField(message, 'author'),
            content: message.content,
            meta: message.meta,
            groupId,
            converseId: panelId,
            timestamp: message.createdAt,
            authorInfo: message.authorInfo,
          }),
        ]
      : [],
  );
  return { groupId, events };
}
