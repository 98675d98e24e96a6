/**
 * A chat's display thread for `GET /api/sessions/<key>/webui-thread`, in nanobot's `WebuiThreadPersistedPayload`
 * shape: the transcript's records (`user`, `message` with `kind`/`tool_events`, `stream_end`, `reasoning_end`,
 * `turn_end`, …) folded into the WebUI's `UIMessage` rows, a page of whole turns at a time (newest first, an opaque
 * `before` cursor for older ones). Records without a `user` event get it from the session (nanobot's backfill); a
 * chat with no transcript at all is shown from its session. Pure: the caller reads the files.
 */
import { createHash } from 'node:crypto';
import type { ChatMessage } from '../../providers/types.js';
import { publicContent, stripRuntimeContext } from '../../session/runtime-context.js';

export type TranscriptLine = Record<string, unknown>;
export type UiMessage = Record<string, unknown> & { id: string; role: string; content: string };

/** nanobot's `WEBUI_TRANSCRIPT_SCHEMA_VERSION`. */
export const THREAD_SCHEMA_VERSION = 3;
const DEFAULT_PAGE_LIMIT = 160;
const MAX_PAGE_LIMIT = 1000;
const TRACE_KINDS = new Set(['tool_hint', 'progress']);
const DISPLAY_EVENTS = new Set(['delta', 'stream_end', 'reasoning_delta', 'reasoning_end', 'message', 'file_edit']);
const IMAGE_EXT = /\.(png|jpe?g|gif|webp|svg|bmp|avif)$/i;
const VIDEO_EXT = /\.(mp4|webm|mov|m4v|ogv)$/i;
const PHASE_RANK: Record<string, number> = { start: 1, end: 2, error: 3 };

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
): ThreadPayload | undefined {
  const chatId = sessionKey.slice(sessionKey.indexOf(':') + 1);
  const source = lines?.length ? lines : sessionAsTranscript(chatId, session);
  if (source.length === 0 && !running) return undefined;
  let turns = splitTurns(source).map((records, ordinal) => ({ ordinal, records }));
  if (lines?.length) turns = backfillUsers(turns, sessionAsTranscript(chatId, session));
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
      count += foldTranscript(identify([turn])).length;
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
  const messages = foldTranscript(identify(turns));
  if (page) page.loaded_message_count = messages.length;
  return {
    schemaVersion: THREAD_SCHEMA_VERSION,
    sessionKey,
    messages,
    completed_turn_ids: completedTurnIds(selected),
    has_pending_tool_calls: running || pendingTail(selected),
    active_turn_id: null,
    ...(page ? { page } : {}),
  };
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

/** A transcript turn without a `user` record gets the session's user message whose answers match it exactly. */
function backfillUsers(turns: Turn[], sessionLines: TranscriptLine[]): Turn[] {
  const sessionTurns = splitTurns(sessionLines).flatMap((records) => {
    const user = records.find(isUserRecord);
    return user ? [{ user, signature: answerSignature(records) }] : [];
  });
  let cursor = 0;
  return turns.map((turn) => {
    if (turn.records.some(isUserRecord)) return turn;
    const signature = answerSignature(turn.records);
    if (!signature) return turn;
    const matches = sessionTurns.flatMap((t, i) => (i >= cursor && t.signature === signature ? [i] : []));
    const [match] = matches;
    if (matches.length !== 1 || match === undefined) return turn;
    cursor = match + 1;
    const at = turn.records.findIndex((r) => DISPLAY_EVENTS.has(String(r.event)));
    const records = [...turn.records];
    records.splice(at === -1 ? 0 : at, 0, { ...sessionTurns[match]?.user });
    return { ...turn, records };
  });
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

// ── the fold: records → UIMessage rows (nanobot's `replay_transcript_to_ui_messages`) ─────────────────────────

export function foldTranscript(records: { record: TranscriptLine; identity: string }[]): UiMessage[] {
  const fold = new Fold();
  for (const { record, identity } of records) fold.apply(record, identity);
  return fold.finish();
}

class Fold {
  messages: UiMessage[] = [];
  private buffer: string | undefined;
  private segment: string | undefined;
  private segments = 0;
  private suppress = false;
  private readonly ids = new Map<string, number>();

  apply(r: TranscriptLine, identity: string): void {
    const created = typeof r.created_at_ms === 'number' && r.created_at_ms >= 0 ? Math.trunc(r.created_at_ms) : 0;
    const turn = turnFields(r);
    const text = typeof r.text === 'string' ? r.text : '';
    switch (r.event) {
      case 'user': {
        this.buffer = undefined;
        this.closeReasoning();
        this.segment = undefined;
        const row: UiMessage = { id: this.id('u', identity), role: 'user', content: text, ...turn('user') };
        const media = mediaFromPaths(r.media_paths);
        if (media.length) {
          row.media = media;
          if (media.every((m) => m.kind === 'image')) row.images = media.map(({ url, name }) => ({ url, name }));
        }
        this.push({ ...row, createdAt: created });
        return;
      }
      case 'delta':
      case 'stream_end': {
        if (this.suppress) {
          if (r.event === 'stream_end') this.buffer = undefined;
          return;
        }
        if (r.event === 'delta' && !text) return;
        this.segment = undefined;
        const target = this.bufferMessage(identity, created, turn('answer'));
        if (r.event === 'delta') target.content += text;
        else if (typeof r.text === 'string') target.content = text;
        if (r.event === 'stream_end') this.buffer = undefined;
        return;
      }
      case 'reasoning_delta':
      case 'reasoning_end':
        if (this.suppress) return;
        if (text) this.attachReasoning(text, identity, created, turn('reasoning'));
        if (r.event === 'reasoning_end') this.closeReasoning();
        return;
      case 'message':
        this.message(r, text, identity, created, turn);
        return;
      case 'turn_end':
        this.suppress = false;
        this.segment = undefined;
        this.buffer = undefined;
        for (const m of this.messages) m.isStreaming = false;
        this.closeReasoning();
        this.messages = this.messages.filter((m, i) => !reasoningOnly(m) || this.messages[i + 1]?.kind === 'trace');
        this.stampCompletion(r);
        return;
    }
  }

  private message(
    r: TranscriptLine,
    text: string,
    identity: string,
    created: number,
    turn: (phase: string) => Record<string, unknown>,
  ): void {
    const kind = String(r.kind ?? '');
    if (this.suppress && (TRACE_KINDS.has(kind) || kind === 'reasoning')) return;
    if (kind === 'reasoning') {
      if (text) this.attachReasoning(text, identity, created, turn('reasoning'));
      this.closeReasoning();
      return;
    }
    if (TRACE_KINDS.has(kind)) {
      const events = toolEvents(r.tool_events);
      const structured = traceLines(events);
      const lines = structured.length ? structured : events.length ? [] : text ? [text] : [];
      if (lines.length === 0) return;
      this.segment ??= `activity-${++this.segments}`;
      const last = this.messages.at(-1);
      if (last && last.kind === 'trace' && [undefined, this.segment].includes(last.activitySegmentId as string)) {
        const previous = Array.isArray(last.traces) ? (last.traces as string[]) : [last.content];
        const traces = structured.length
          ? [...previous, ...structured.filter((l) => !previous.includes(l))]
          : [...previous, ...lines];
        if (structured.length && traces.length === previous.length && events.length === 0) return;
        Object.assign(last, {
          traces,
          content: traces.at(-1) ?? '',
          ...(events.length ? { toolEvents: mergeToolEvents(last.toolEvents, events) } : {}),
          activitySegmentId: last.activitySegmentId ?? this.segment,
          ...turn('activity'),
        });
        return;
      }
      this.push({
        id: this.id('tr', identity),
        role: 'tool',
        kind: 'trace',
        content: lines.at(-1) ?? '',
        traces: lines,
        ...(events.length ? { toolEvents: events } : {}),
        activitySegmentId: this.segment,
        ...turn('activity'),
        createdAt: created,
      });
      return;
    }
    // A whole answer (or a message the agent sent mid-turn): a finished assistant row.
    this.buffer = undefined;
    const media = mediaFromPaths(r.media).length ? mediaFromPaths(r.media) : mediaFromUrls(r.media_urls);
    const extra: Record<string, unknown> = { content: text, ...turn('answer') };
    if (media.length) extra.media = media;
    if (typeof r.latency_ms === 'number' && r.latency_ms >= 0) extra.latencyMs = Math.trunc(r.latency_ms);
    const last = this.messages.at(-1);
    if (last && reasoningOnly(last)) Object.assign(last, extra, { isStreaming: false });
    else this.push({ id: this.id('as', identity), role: 'assistant', createdAt: created, ...extra, content: text });
    this.segment = undefined;
    if (media.length) this.suppress = true;
  }

  private bufferMessage(identity: string, created: number, turn: Record<string, unknown>): UiMessage {
    const existing = this.buffer ? this.messages.find((m) => m.id === this.buffer) : undefined;
    if (existing) return Object.assign(existing, turn);
    const last = this.messages.at(-1);
    if (last && last.role === 'assistant' && last.kind !== 'trace' && !last.content && last.isStreaming) {
      this.buffer = last.id;
      return Object.assign(last, turn);
    }
    const row: UiMessage = {
      id: this.id('buf', identity),
      role: 'assistant',
      content: '',
      isStreaming: true,
      ...turn,
      createdAt: created,
    };
    this.buffer = row.id;
    this.push(row);
    return row;
  }

  private attachReasoning(chunk: string, identity: string, created: number, turn: Record<string, unknown>): void {
    for (let i = this.messages.length - 1; i >= 0; i--) {
      const m = this.messages[i];
      if (!m || m.role === 'user' || m.kind === 'trace') break;
      if (m.role !== 'assistant') continue;
      if (m.reasoningStreaming || m.reasoning !== undefined || m.content || m.isStreaming) {
        Object.assign(m, {
          reasoning: `${typeof m.reasoning === 'string' ? m.reasoning : ''}${chunk}`,
          reasoningStreaming: true,
          activitySegmentId: m.activitySegmentId ?? this.activeSegment(),
          ...turn,
        });
        return;
      }
      break;
    }
    this.push({
      id: this.id('as', identity),
      role: 'assistant',
      content: '',
      isStreaming: true,
      reasoning: chunk,
      reasoningStreaming: true,
      activitySegmentId: this.activeSegment(),
      ...turn,
      createdAt: created,
    });
  }

  private activeSegment(): string {
    this.segment ??= `activity-${++this.segments}`;
    return this.segment;
  }

  private closeReasoning(): void {
    for (let i = this.messages.length - 1; i >= 0; i--) {
      const m = this.messages[i];
      if (m?.reasoningStreaming) {
        m.reasoningStreaming = false;
        return;
      }
    }
  }

  private stampCompletion(r: TranscriptLine): void {
    for (let i = this.messages.length - 1; i >= 0; i--) {
      const m = this.messages[i];
      if (m?.role !== 'assistant' || m.kind === 'trace') continue;
      m.isStreaming = false;
      if (typeof r.latency_ms === 'number' && r.latency_ms >= 0) m.latencyMs = Math.trunc(r.latency_ms);
      const usage = cleanUsage(r.usage);
      if (usage) m.usage = usage;
      if (typeof r.context_window_tokens === 'number' && r.context_window_tokens >= 0) {
        m.contextWindowTokens = Math.trunc(r.context_window_tokens);
      }
      return;
    }
  }

  private id(prefix: string, identity: string): string {
    const base = `${prefix}-${createHash('sha256').update(`${prefix}\0${identity}`).digest('hex').slice(0, 16)}`;
    const seen = this.ids.get(base) ?? 0;
    this.ids.set(base, seen + 1);
    return seen === 0 ? base : `${base}-${seen}`;
  }

  private push(row: UiMessage): void {
    this.messages.push(row);
  }

  finish(): UiMessage[] {
    return this.messages.map(({ isStreaming: _s, reasoningStreaming: _r, ...rest }) => rest as UiMessage);
  }
}

function turnFields(r: TranscriptLine): (fallbackPhase: string) => Record<string, unknown> {
  return (fallbackPhase) => ({
    ...(typeof r.turn_id === 'string' && r.turn_id ? { turnId: r.turn_id } : {}),
    turnPhase: typeof r.turn_phase === 'string' && r.turn_phase ? r.turn_phase : fallbackPhase,
    ...(typeof r.turn_seq === 'number' ? { turnSeq: Math.trunc(r.turn_seq) } : {}),
  });
}

function reasoningOnly(m: UiMessage): boolean {
  return (
    m.role === 'assistant' &&
    m.kind !== 'trace' &&
    !m.content.trim() &&
    Boolean(m.reasoning) &&
    !m.reasoningStreaming &&
    !m.media
  );
}

function toolEvents(value: unknown): Record<string, unknown>[] {
  if (!Array.isArray(value)) return [];
  return value.filter(
    (e): e is Record<string, unknown> =>
      typeof e === 'object' &&
      e !== null &&
      ['start', 'end', 'error'].includes(String(e.phase)) &&
      typeof e.name === 'string',
  );
}

/** `name(arguments)` once per call id: the trace line nanobot shows for a tool call. */
function traceLines(events: Record<string, unknown>[]): string[] {
  const seen = new Set<string>();
  const lines: string[] = [];
  for (const e of events) {
    const callId = typeof e.call_id === 'string' ? e.call_id : '';
    if (callId && seen.has(callId)) continue;
    if (callId) seen.add(callId);
    const name = String(e.name);
    if (!name) continue;
    const args = e.arguments;
    if (typeof args === 'string' && args.trim()) lines.push(`${name}(${args})`);
    else if (args && typeof args === 'object' && Object.keys(args).length)
      lines.push(`${name}(${JSON.stringify(args)})`);
    else lines.push(`${name}()`);
  }
  return lines;
}

function mergeToolEvents(previous: unknown, incoming: Record<string, unknown>[]): Record<string, unknown>[] {
  const merged = toolEvents(previous);
  const key = (e: Record<string, unknown>) =>
    typeof e.call_id === 'string' && e.call_id ? `call:${e.call_id}` : JSON.stringify(e);
  for (const event of incoming) {
    const at = merged.findIndex((e) => key(e) === key(event));
    const existing = merged[at];
    if (at === -1 || !existing) merged.push(event);
    else if ((PHASE_RANK[String(event.phase)] ?? 0) >= (PHASE_RANK[String(existing.phase)] ?? 0)) {
      merged[at] = { ...existing, ...event };
    }
  }
  return merged;
}

function mediaKind(name: string): 'image' | 'video' | 'file' {
  if (IMAGE_EXT.test(name)) return 'image';
  if (VIDEO_EXT.test(name)) return 'video';
  return 'file';
}

/** Paths on this machine: shown by name (a signed URL needs the media helper; until then, a placeholder chip). */
function mediaFromPaths(value: unknown): { kind: string; url?: string; name: string }[] {
  if (!Array.isArray(value)) return [];
  return value
    .filter((p): p is string => typeof p === 'string' && p.length > 0)
    .map((p) => {
      const name = p.split(/[\\/]/).at(-1) ?? p;
      return { kind: mediaKind(name), name };
    });
}

function mediaFromUrls(value: unknown): { kind: string; url?: string; name: string }[] {
  if (!Array.isArray(value)) return [];
  return value.flatMap((m) => {
    if (typeof m !== 'object' || m === null || typeof m.url !== 'string' || !m.url) return [];
    const name = typeof m.name === 'string' ? m.name : '';
    return [{ kind: mediaKind(name), url: m.url as string, name }];
  });
}

function cleanUsage(value: unknown): Record<string, number> | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const out: Record<string, number> = {};
  for (const [k, v] of Object.entries(value)) if (Number.isInteger(v) && (v as number) >= 0) out[k] = v as number;
  return Object.keys(out).length ? out : undefined;
}
