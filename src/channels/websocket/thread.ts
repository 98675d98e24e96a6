/**
 * A chat's display thread for `GET /api/sessions/<key>/webui-thread`, in nanobot's `WebuiThreadPersistedPayload`
 * shape: the transcript's records (`user`, `message` with `kind`/`tool_events`, `stream_end`, `reasoning_end`,
 * `turn_end`, …) folded into the WebUI's `UIMessage` rows, a page of whole turns at a time (newest first, an opaque
 * `before` cursor for older ones). Records without a `user` event get it from the session (nanobot's backfill); a
 * chat with no transcript at all is shown from its session. Pure: the caller reads the files.
 */
import type { ChatMessage } from '../../providers/types.js';
import { publicContent, stripRuntimeContext } from '../../session/runtime-context.js';

import { foldTranscript, type MediaSign, type TranscriptLine, type UiMessage } from './thread-fold.js';

export type { TranscriptLine, UiMessage };

/** nanobot's `WEBUI_TRANSCRIPT_SCHEMA_VERSION`. */
export const THREAD_SCHEMA_VERSION = 3;
const DEFAULT_PAGE_LIMIT = 160;
const MAX_PAGE_LIMIT = 1000;
const TRACE_KINDS = new Set(['tool_hint', 'progress']);
const DISPLAY_EVENTS = new Set(['delta', 'stream_end', 'reasoning_delta', 'reasoning_end', 'message', 'file_edit']);

export interface ThreadQuery {
  limit?: number;
  before?: string;
  /** The page was asked for (`limit`, `direction` or `before` given). */
  paged: boolean;
}

export interface ThreadPage {
  before_cursor: string | null;
  has_more_before: boolean;
  loaded_message_count: number;
  user_message_offset: number;
}

export interface ThreadPayload {
  schemaVersion: number;
  sessionKey: string;
  messages: UiMessage[];
  completed_turn_ids: string[];
  has_pending_tool_calls: boolean;
  active_turn_id: string | null;
  page?: ThreadPage;
  /** In a forked chat: how many of its messages came from the source (nanobot draws the fork line there). */
  fork_boundary_message_count?: number;
}

/** Why a query is refused (400), or undefined. nanobot accepts `direction=latest` only. */
export function threadQueryError(params: URLSearchParams): string | undefined {
  const limit = params.get('limit');
  if (limit?.trim() && !/^-?\d+$/.test(limit.trim())) return 'invalid limit';
  const direction = params.get('direction');
  if (direction !== null && direction !== 'latest') return 'invalid direction';
  return undefined;
}

export function threadQuery(params: URLSearchParams): ThreadQuery {
  const limit = params.get('limit')?.trim();
  const before = params.get('before') ?? undefined;
  return {
    ...(limit ? { limit: Number.parseInt(limit, 10) } : {}),
    ...(before ? { before } : {}),
    paged: params.has('limit') || params.has('direction') || params.has('before'),
  };
}

/**
 * The payload, or undefined when there is nothing to show (nanobot answers 404 then). `lines`: the transcript
 * (undefined when the chat has none); `session`: the session's messages, for backfill and for chats without one.
 */
export function buildThread(
  sessionKey: string,
  lines: TranscriptLine[] | undefined,
  session: readonly ChatMessage[],
  query: ThreadQuery,
  running: boolean,
  /** Signs the files of the chat (uploads, files the agent sent) so an old chat shows them after a reload. */
  sign?: MediaSign,
  /** The turn running (or next) in the chat: the client resumes following it after a reload. */
  activeTurn?: string,
): ThreadPayload | undefined {
  const chatId = sessionKey.slice(sessionKey.indexOf(':') + 1);
  const source = lines?.length ? lines : sessionAsTranscript(chatId, session);
  if (source.length === 0 && !running) return undefined;
  let turns = splitTurns(source).map((records, ordinal) => ({ ordinal, records }));
  if (lines?.length) turns = backfillUsers(turns, sessionAsTranscript(chatId, session));
  const boundary = forkBoundary(turns, sign);
  let page: ThreadPage | undefined;
  if (query.paged) {
    const limit = Math.max(1, Math.min(MAX_PAGE_LIMIT, query.limit ?? DEFAULT_PAGE_LIMIT));
    const upper = Math.min(decodeCursor(query.before) ?? turns.length, turns.length);
    const picked: typeof turns = [];
    let count = 0;
    for (let i = upper - 1; i >= 0 && count < limit; i--) {
      const turn = turns[i];
      if (!turn) continue;
      picked.unshift(turn);
      count += foldTranscript(identify([turn]), sign).length;
    }
    const first = picked[0];
    const hasMore = first !== undefined && first.ordinal > 0;
    page = {
      before_cursor: hasMore && first ? encodeCursor(first.ordinal) : null,
      has_more_before: hasMore,
      loaded_message_count: 0,
      user_message_offset: first
        ? turns.slice(0, first.ordinal).reduce((n, t) => n + t.records.filter(isUserRecord).length, 0)
        : 0,
    };
    turns = picked;
  }
  const selected = turns.flatMap((t) => t.records);
  const messages = foldTranscript(identify(turns), sign);
  if (page) page.loaded_message_count = messages.length;
  return {
    schemaVersion: THREAD_SCHEMA_VERSION,
    sessionKey,
    messages,
    completed_turn_ids: completedTurnIds(selected),
    has_pending_tool_calls: running || pendingTail(selected),
    active_turn_id: running ? (activeTurn ?? null) : null,
    ...(page ? { page } : {}),
    ...(boundary !== undefined ? { fork_boundary_message_count: boundary } : {}),
  };
}

/** The number of messages before the first `fork_marker` row, or undefined when the chat is no fork. */
function forkBoundary(turns: Turn[], sign: MediaSign | undefined): number | undefined {
  const records = turns.flatMap((t) => t.records);
  const at = records.findIndex((r) => r.event === 'fork_marker');
  if (at === -1) return undefined;
  const prefix = splitTurns(records.slice(0, at)).map((rows, ordinal) => ({ ordinal, records: rows }));
  return foldTranscript(identify(prefix), sign).length;
}

// ── turns and identities ─────────────────────────────────────────────────────────────────────────────────────

interface Turn {
  ordinal: number;
  records: TranscriptLine[];
}

function splitTurns(lines: TranscriptLine[]): TranscriptLine[][] {
  const turns: TranscriptLine[][] = [];
  let current: TranscriptLine[] = [];
  for (const line of lines) {
    current.push(line);
    if (line.event === 'turn_end') {
      turns.push(current);
      current = [];
    }
  }
  if (current.length) turns.push(current);
  return turns;
}

/** Each record's stable identity (`turn:<n>:record:<i>`), so message ids stay the same across pages and reloads. */
function identify(turns: Turn[]): { record: TranscriptLine; identity: string }[] {
  return turns.flatMap((turn) =>
    turn.records.map((record, index) => ({ record, identity: `turn:${turn.ordinal}:record:${index}` })),
  );
}

function encodeCursor(beforeTurn: number): string {
  return Buffer.from(JSON.stringify({ before_turn: beforeTurn })).toString('base64url');
}

function decodeCursor(value: string | undefined): number | undefined {
  if (!value) return undefined;
  try {
    const data: unknown = JSON.parse(Buffer.from(value, 'base64url').toString('utf8'));
    const n = typeof data === 'object' && data !== null ? (data as { before_turn?: unknown }).before_turn : undefined;
    return typeof n === 'number' && Number.isInteger(n) && n >= 0 ? n : undefined;
  } catch {
    return undefined;
  }
}

const isUserRecord = (r: TranscriptLine) => r.event === 'user' || r.role === 'user';

function completedTurnIds(lines: TranscriptLine[]): string[] {
  const ids = new Set<string>();
  for (const r of lines) {
    if (r.event === 'turn_end' && r.transcript_incomplete !== true && typeof r.turn_id === 'string' && r.turn_id) {
      ids.add(r.turn_id);
    }
  }
  return [...ids];
}

/** The tail looks like an unfinished turn (nanobot's `has_pending_tool_calls` without a live turn). */
function pendingTail(lines: TranscriptLine[]): boolean {
  if (lines.some((r) => r.transcript_incomplete === true)) return true;
  for (let i = lines.length - 1; i >= 0; i--) {
    const r = lines[i];
    if (!r) continue;
    if (r.event === 'turn_end' || r.event === 'user') return false;
    if (r.event === 'message') return TRACE_KINDS.has(String(r.kind)) || r.kind === 'reasoning';
    if (DISPLAY_EVENTS.has(String(r.event))) return true;
  }
  return false;
}

// ── backfill from the session ────────────────────────────────────────────────────────────────────────────────

/**
 * A transcript turn without a `user` record gets the session's user message whose answers match it exactly. When
 * that message was sent while the turn before ran (its row was written then, mid-turn) and ran on its own after it,
 * the row moves down to the turn it started instead of showing twice.
 */
function backfillUsers(turns: Turn[], sessionLines: TranscriptLine[]): Turn[] {
  const sessionTurns = splitTurns(sessionLines).flatMap((records) => {
    const user = records.find(isUserRecord);
    return user ? [{ user, signature: answerSignature(records) }] : [];
  });
  let cursor = 0;
  const out: Turn[] = [];
  for (const turn of turns) {
    out.push(turn);
    if (turn.records.some(isUserRecord)) continue;
    const signature = answerSignature(turn.records);
    if (!signature) continue;
    const matches = sessionTurns.flatMap((t, i) => (i >= cursor && t.signature === signature ? [i] : []));
    const [match] = matches;
    const user = match === undefined ? undefined : sessionTurns[match]?.user;
    if (matches.length !== 1 || match === undefined || !user) continue;
    cursor = match + 1;
    const previous = out.at(-2);
    const sent = previous ? sentDuring(previous, user.text) : -1;
    const row = previous && sent >= 0 ? previous.records[sent] : { ...user };
    if (previous && sent >= 0) {
      out[out.length - 2] = { ...previous, records: previous.records.filter((_, i) => i !== sent) };
    }
    const at = turn.records.findIndex((r) => DISPLAY_EVENTS.has(String(r.event)));
    const records = [...turn.records];
    records.splice(at === -1 ? 0 : at, 0, row as TranscriptLine);
    out[out.length - 1] = { ...turn, records };
  }
  return out;
}

/** The index of a later `user` row of `turn` (not the one that started it) with this text, or -1. */
function sentDuring(turn: Turn, text: unknown): number {
  const first = turn.records.findIndex(isUserRecord);
  if (first < 0 || typeof text !== 'string') return -1;
  return turn.records.findIndex(
    (r, i) => i > first && isUserRecord(r) && typeof r.text === 'string' && r.text.trim() === text.trim(),
  );
}

function answerSignature(records: TranscriptLine[]): string {
  return foldTranscript(identify([{ ordinal: 0, records }]))
    .filter((m) => m.role === 'assistant' && m.kind !== 'trace' && m.content.trim())
    .map((m) => m.content.trim())
    .join('\u0000');
}

/** The session's messages as transcript records: user, reasoning, tool calls and results, answers, turn ends. */
export function sessionAsTranscript(chatId: string, messages: readonly ChatMessage[]): TranscriptLine[] {
  const out: TranscriptLine[] = [];
  const calls = new Map<string, { name: string; arguments: unknown }>();
  let open = false;
  const at = (m: ChatMessage) => {
    const ts = (m as { timestamp?: unknown }).timestamp;
    const ms = typeof ts === 'string' ? Date.parse(ts) : Number.NaN;
    return Number.isFinite(ms) ? { created_at_ms: ms } : {};
  };
  for (const message of messages) {
    if (message.role === 'user') {
      const text = stripRuntimeContext(plainText(publicContent(message))).trim();
      if (!text) continue;
      if (open) out.push({ event: 'turn_end', chat_id: chatId });
      out.push({ event: 'user', chat_id: chatId, text, ...at(message) });
      open = true;
    } else if (message.role === 'assistant') {
      if (message.reasoning_content) {
        out.push({ event: 'reasoning_end', chat_id: chatId, text: message.reasoning_content, ...at(message) });
      }
      const text = plainText(message.content);
      const toolCalls = message.tool_calls ?? [];
      if (text.trim() && toolCalls.length === 0) out.push({ event: 'message', chat_id: chatId, text, ...at(message) });
      else if (text.trim()) out.push({ event: 'message', chat_id: chatId, kind: 'progress', text, ...at(message) });
      if (toolCalls.length) {
        const events = toolCalls.map((call) => {
          const args = parseArguments(call.function.arguments);
          calls.set(call.id, { name: call.function.name, arguments: args });
          return toolEvent('start', call.id, call.function.name, args);
        });
        out.push({
          event: 'message',
          chat_id: chatId,
          kind: 'tool_hint',
          text: '',
          tool_events: events,
          ...at(message),
        });
      }
    } else if (message.role === 'tool' && message.tool_call_id) {
      const call = calls.get(message.tool_call_id);
      if (!call) continue;
      const result = plainText(message.content);
      const failed = /^error\b/i.test(result);
      out.push({
        event: 'message',
        chat_id: chatId,
        kind: 'progress',
        text: '',
        tool_events: [toolEvent(failed ? 'error' : 'end', message.tool_call_id, call.name, call.arguments, result)],
      });
    }
  }
  if (open) out.push({ event: 'turn_end', chat_id: chatId });
  return out;
}

/** nanobot's tool event (version 1): `result` on `end`, `error` on `error`. */
export function toolEvent(
  phase: 'start' | 'end' | 'error',
  callId: string,
  name: string,
  args: unknown,
  result?: string,
): Record<string, unknown> {
  return {
    version: 1,
    phase,
    call_id: callId,
    name,
    arguments: args,
    result: phase === 'end' ? (result ?? null) : null,
    error: phase === 'error' ? result || 'Tool execution failed' : null,
    files: [],
    embeds: [],
  };
}

export function parseArguments(raw: string): unknown {
  try {
    const value: unknown = JSON.parse(raw);
    return typeof value === 'object' && value !== null ? value : {};
  } catch {
    return raw.trim() ? raw : {};
  }
}

function plainText(content: ChatMessage['content']): string {
  if (content === null) return '';
  if (typeof content === 'string') return content;
  return content
    .filter((p) => p.type === 'text')
    .map((p) => p.text)
    .join('\n');
}
