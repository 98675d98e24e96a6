/**
 * MoChat's event shapes and the rules upstream applies to them, as pure functions: which target an id names, who
 * a message mentions, whether a panel needs a mention, how buffered messages read as one. Socket pushes, long-poll
 * answers and panel listings are all turned into one `message.add` event shape here.
 */
import { z } from 'zod';
import type { MochatSettings } from './index.js';

export type TargetKind = 'session' | 'panel';
export type Json = Record<string, unknown>;

export const isObject = (value: unknown): value is Json =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** The first of `keys` that holds a non-blank string, trimmed; '' when none does. */
export function stringField(source: unknown, ...keys: string[]): string {
  if (!isObject(source)) return '';
  for (const key of keys) {
    const value = source[key];
    if (typeof value === 'string' && value.trim()) return value.trim();
  }
  return '';
}

/** A message event: from `claw.session.events` / `claw.panel.events`, a long-poll, or made from a notify or listing. */
export interface MessageEvent {
  seq?: number;
  timestamp?: string;
  payload: Json;
}

const eventSchema = z.looseObject({
  type: z.string().optional(),
  seq: z.number().int().optional(),
  timestamp: z.unknown().optional(),
});

/** A watch payload: `{sessionId, cursor?, events: [...]}` (panels name their id in `sessionId` too). */
export interface WatchPayload {
  targetId: string;
  cursor?: number;
  /** undefined when the payload has no event list at all. */
  events?: { seq?: number; message?: MessageEvent }[];
}

export function parseWatchPayload(raw: unknown): WatchPayload | undefined {
  const targetId = stringField(raw, 'sessionId');
  if (!targetId || !isObject(raw)) return undefined;
  const cursor =
    typeof raw.cursor === 'number' && Number.isSafeInteger(raw.cursor) && raw.cursor >= 0 ? raw.cursor : undefined;
  const payload: WatchPayload = { targetId, ...(cursor !== undefined ? { cursor } : {}) };
  if (!Array.isArray(raw.events)) return payload;
  payload.events = raw.events.flatMap((item) => {
    const parsed = eventSchema.safeParse(item);
    if (!parsed.success || !isObject(item)) return [];
    const seq = parsed.data.seq;
    const message =
      parsed.data.type === 'message.add' && isObject(item.payload)
        ? {
            ...(seq !== undefined ? { seq } : {}),
            ...(typeof parsed.data.timestamp === 'string' ? { timestamp: parsed.data.timestamp } : {}),
            payload: item.payload,
          }
        : undefined;
    return [{ ...(seq !== undefined ? { seq } : {}), ...(message ? { message } : {}) }];
  });
  return payload;
}

/** A `message.add` event made from another shape (a notify push, a panel listing). */
export function syntheticEvent(fields: {
  messageId: string;
  author: string;
  content: unknown;
  meta?: unknown;
  groupId: string;
  converseId: string;
  timestamp?: unknown;
  authorInfo?: unknown;
}): MessageEvent {
  return {
    ...(typeof fields.timestamp === 'string' ? { timestamp: fields.timestamp } : {}),
    payload: {
      messageId: fields.messageId,
      author: fields.author,
      content: fields.content,
      meta: isObject(fields.meta) ? fields.meta : {},
      groupId: fields.groupId,
      converseId: fields.converseId,
      ...(fields.authorInfo !== undefined ? { authorInfo: isObject(fields.authorInfo) ? fields.authorInfo : {} } : {}),
    },
  };
}

/** A message's content as text: strings trimmed, anything else as JSON. */
export function contentText(content: unknown): string {
  if (typeof content === 'string') return content.trim();
  if (content === null || content === undefined) return '';
  try {
    return JSON.stringify(content) ?? '';
  } catch {
    return String(content);
  }
}

export interface Target {
  id: string;
  isPanel: boolean;
}

/** A chat id as written by a user or the agent: `mochat:`, `group:`, `channel:` or `panel:` prefixes are accepted. */
export function resolveTarget(raw: string): Target {
  const trimmed = (raw ?? '').trim();
  const prefix = ['mochat:', 'group:', 'channel:', 'panel:'].find((p) => trimmed.toLowerCase().startsWith(p));
  const cleaned = prefix ? trimmed.slice(prefix.length).trim() : trimmed;
  if (!cleaned) return { id: '', isPanel: false };
  // A `group:`-style prefix asks for a panel, but a session_ id is always sent as a session (as upstream does).
  return { id: cleaned, isPanel: !cleaned.startsWith('session_') };
}

/** Ids in a mention list: strings, or objects with `id`, `userId` or `_id`. */
export function mentionIds(value: unknown): string[] {
  if (!Array.isArray(value)) return [];
  return value.flatMap((item) => {
    if (typeof item === 'string') return item.trim() ? [item.trim()] : [];
    const id = stringField(item, 'id', 'userId', '_id');
    return id ? [id] : [];
  });
}

/** The message mentions the agent: its meta says so or lists the agent, or the text has `<@id>` / `@id`. */
export function wasMentioned(payload: Json, agentUserId: string): boolean {
  const meta = payload.meta;
  if (isObject(meta)) {
    if (meta.mentioned === true || meta.wasMentioned === true) return true;
    for (const key of ['mentions', 'mentionIds', 'mentionedUserIds', 'mentionedUsers']) {
      if (agentUserId && mentionIds(meta[key]).includes(agentUserId)) return true;
    }
  }
  if (!agentUserId) return false;
  const content = payload.content;
  return typeof content === 'string' && (content.includes(`<@${agentUserId}>`) || content.includes(`@${agentUserId}`));
}

/** The text without the agent's own `<@id>` / `@id` mention. */
export function withoutMention(text: string, agentUserId: string): string {
  if (!agentUserId) return text;
  return text.split(`<@${agentUserId}>`).join(' ').split(`@${agentUserId}`).join(' ').replace(/ {2,}/g, ' ').trim();
}

/** Whether a panel message must mention the agent: `groups[groupId]`, then `groups[panelId]`, `groups["*"]`, then `mention`. */
export function requiresMention(settings: MochatSettings, panelId: string, groupId: string): boolean {
  for (const key of [groupId, panelId, '*']) {
    const rule = key ? settings.groups[key] : undefined;
    if (rule) return rule.requireMention;
  }
  return settings.mention.requireInGroups;
}

export interface BufferedEntry {
  body: string;
  author: string;
  senderName: string;
  senderUsername: string;
  timestamp?: number;
  messageId: string;
  groupId: string;
}

/** One entry's body as it is; several as lines, in a group each prefixed with who wrote it. */
export function bufferedBody(entries: readonly BufferedEntry[], isGroup: boolean): string {
  if (entries.length === 0) return '';
  if (entries.length === 1) return entries[0]?.body ?? '';
  const lines = entries.flatMap((entry) => {
    if (!entry.body) return [];
    const label = entry.senderName || entry.senderUsername || entry.author;
    return [isGroup && label ? `${label}: ${entry.body}` : entry.body];
  });
  return lines.join('\n').trim();
}

/** An ISO timestamp as epoch milliseconds. */
export function epochMs(value: unknown): number | undefined {
  if (typeof value !== 'string' || !value.trim()) return undefined;
  const ms = Date.parse(value);
  return Number.isNaN(ms) ? undefined : ms;
}
