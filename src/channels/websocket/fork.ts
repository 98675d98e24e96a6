/**
 * nanobot's `fork_chat {source_chat_id, before_user_index, title?}`: a new chat holding the source chat's session
 * messages and WebUI transcript before its `before_user_index`-th user message (zero-based over the whole chat; the
 * user-message count copies all of it). The source is left as it is. The session is written whole and atomically,
 * the transcript too (ending in nanobot's `fork_marker` row, where the fork starts taking turns); on any failure
 * both are removed again. Refusals use nanobot's `error` details, which carry no chat id.
 */
import { randomUUID } from 'node:crypto';
import type { ChatMessage } from '../../providers/types.js';
import { publicContent, RUNTIME_CONTEXT_FIELD } from '../../session/runtime-context.js';
import type { Session, SessionStore } from '../../session/types.js';
import { CHAT_ID_PATTERN } from './frames.js';
import { sessionAsTranscript } from './thread.js';
import type { TranscriptRecord, WebuiTranscripts } from './transcript.js';

export const FORK_MARKER_EVENT = 'fork_marker';

/** Session metadata about the source's live state or name, which a fork does not inherit (nanobot's list). */
const VOLATILE_METADATA = [
  'goal_state',
  'pending_user_turn',
  'runtime_checkpoint',
  'session_handle',
  'thread_goal',
  'title',
  'title_user_edited',
];

const TITLE_MAX_CHARS = 60;

export interface ForkDeps {
  store: SessionStore;
  transcripts: WebuiTranscripts;
  /** The channel's name, the prefix of its session keys. */
  channel: string;
  newId?: () => string;
}

export type ForkOutcome = { ok: true; chatId: string; sessionKey: string } | { ok: false; detail: string };

const isUserRow = (row: Record<string, unknown>) => row.event === 'user' || row.role === 'user';

/** The items before the `index`-th one that `isUser` picks, or undefined when the chat has fewer than `index`. */
function before<T>(items: readonly T[], index: number, isUser: (item: T) => boolean): T[] | undefined {
  const out: T[] = [];
  let users = 0;
  for (const item of items) {
    if (isUser(item)) {
      if (users === index) return out;
      users += 1;
    }
    out.push(item);
  }
  return users === index ? out : undefined;
}

/** nanobot's `clean_generated_title`: no "Title:" prefix, quotes, think blocks or end punctuation; 60 characters. */
export function cleanTitle(raw: unknown): string {
  if (typeof raw !== 'string') return '';
  let text = raw.trim().replace(/^\s*(title|标题)\s*[:：]\s*/i, '');
  text = text.trim().replace(/^["'`“”‘’]+|["'`“”‘’]+$/g, '');
  text = text.replace(/<think>[\s\S]*?<\/think>/g, '').replace(/<think>[\s\S]*$/, '');
  text = text
    .replace(/\s+/g, ' ')
    .trim()
    .replace(/[。.!！?？,，;；:]+$/, '');
  return text.length > TITLE_MAX_CHARS ? `${text.slice(0, TITLE_MAX_CHARS - 1).trimEnd()}…` : text;
}

/** A message as its user sees it: the runtime context the turn added is left out (nanobot's public history). */
function publicMessage(message: ChatMessage): ChatMessage {
  const copy = structuredClone(message) as ChatMessage & Record<string, unknown>;
  copy.content = publicContent(message);
  delete copy[RUNTIME_CONTEXT_FIELD];
  return copy;
}

function forkedSession(source: Session, key: string, messages: ChatMessage[], title: string): Session {
  const metadata = structuredClone(source.metadata);
  for (const name of VOLATILE_METADATA) delete metadata[name];
  let lastConsolidated = Math.min(source.lastConsolidated, messages.length);
  if (source.lastConsolidated > messages.length) {
    // The summary covers messages the fork does not have.
    delete metadata._last_summary;
    lastConsolidated = 0;
  }
  if (title) metadata.title = title;
  const now = new Date().toISOString();
  return { key, createdAt: now, updatedAt: now, metadata, lastConsolidated, messages };
}

/** The fork's transcript: the source's rows before the point (else rows made from the session), then the marker. */
function forkedTranscript(
  deps: ForkDeps,
  sourceChatId: string,
  chatId: string,
  index: number,
  messages: ChatMessage[],
): TranscriptRecord[] {
  const source = (deps.transcripts.read(sourceChatId) ?? []).filter((row) => row.event !== FORK_MARKER_EVENT);
  const copied = source.length ? before(source, index, isUserRow) : undefined;
  const rows: TranscriptRecord[] = copied
    ? copied.map((row) => ({ ...structuredClone(row), event: String(row.event), chat_id: chatId }))
    : sessionAsTranscript(chatId, messages).map((row) => ({ ...row, event: String(row.event), chat_id: chatId }));
  rows.push({ event: FORK_MARKER_EVENT, chat_id: chatId });
  return rows;
}

export async function forkChat(deps: ForkDeps, frame: Record<string, unknown>): Promise<ForkOutcome> {
  const sourceChatId = frame.source_chat_id;
  const index = frame.before_user_index;
  if (typeof sourceChatId !== 'string' || !CHAT_ID_PATTERN.test(sourceChatId)) {
    return { ok: false, detail: 'invalid source_chat_id' };
  }
  if (typeof index !== 'number' || !Number.isSafeInteger(index) || index < 0) {
    return { ok: false, detail: 'invalid before_user_index' };
  }
  const source = await deps.store.load(`${deps.channel}:${sourceChatId}`);
  const messages = before(source.messages, index, (m) => m.role === 'user');
  // A chat with no stored messages is no source (the store hands out an empty session for any key).
  if (source.messages.length === 0 || messages === undefined) {
    return { ok: false, detail: 'invalid fork source or index' };
  }
  const chatId = (deps.newId ?? randomUUID)();
  const key = `${deps.channel}:${chatId}`;
  const copied = messages.map(publicMessage);
  try {
    await deps.transcripts.replace(chatId, forkedTranscript(deps, sourceChatId, chatId, index, copied));
    await deps.store.save(forkedSession(source, key, copied, cleanTitle(frame.title)));
  } catch {
    deps.transcripts.remove(chatId);
    await deps.store.delete(key).catch(() => undefined);
    return { ok: false, detail: 'fork_chat_failed' };
  }
  return { ok: true, chatId, sessionKey: key };
}
