/**
 * nanobot's replay of a WebUI transcript (`replay_transcript_to_ui_messages`): records in, `UIMessage` rows out —
 * user rows, assistant rows (streamed or whole answers, reasoning attached), tool trace rows whose `toolEvents`
 * merge start → end/error per call id, completion stamps (latency, usage) at `turn_end`. Message ids are derived
 * from each record's identity, so they are stable across pages and reloads.
 */
import { createHash } from 'node:crypto';

export type TranscriptLine = Record<string, unknown>;
export type UiMessage = Record<string, unknown> & { id: string; role: string; content: string };

const TRACE_KINDS = new Set(['tool_hint', 'progress']);
const IMAGE_EXT = /\.(png|jpe?g|gif|webp|svg|bmp|avif)$/i;
const VIDEO_EXT = /\.(mp4|webm|mov|m4v|ogv)$/i;
const PHASE_RANK: Record<string, number> = { start: 1, end: 2, error: 3 };

// ── the fold: records → UIMessage rows (nanobot's `replay_transcript_to_ui_messages`) ─────────────────────────

/** A signed `/api/media/…` URL for a file on this machine, or undefined when it is not served (media-urls.ts). */
export type MediaSign = (path: string) => { url: string } | undefined;

export function foldTranscript(records: { record: TranscriptLine; identity: string }[], sign?: MediaSign): UiMessage[] {
  const fold = new Fold(sign);
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

  constructor(private readonly sign: MediaSign | undefined) {}

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
        const media = mediaFromPaths(r.media_paths, this.sign);
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
    // Signed again from the paths (the URLs kept in the transcript expire); the kept URLs when a path is not served.
    const signed = mediaFromPaths(r.media, this.sign);
    const kept = mediaFromUrls(r.media_urls);
    const media = signed.length && (signed.every((m) => m.url) || !kept.length) ? signed : kept;
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

/** Paths on this machine: by name, with a signed URL when the file is served; the path itself is never shown. */
function mediaFromPaths(value: unknown, sign: MediaSign | undefined): { kind: string; url?: string; name: string }[] {
  if (!Array.isArray(value)) return [];
  return value
    .filter((p): p is string => typeof p === 'string' && p.length > 0)
    .map((p) => {
      const name = p.split(/[\\/]/).at(-1) ?? p;
      const url = sign?.(p)?.url;
      return { kind: mediaKind(name), ...(url ? { url } : {}), name };
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
