/**
 * What the agent says → server frames (nanobot's protocol). Stream deltas become `delta`, a streamed segment's end
 * `stream_end`; the final reply completes its streamed segment (`stream_end` with the authoritative text) or is a
 * `message`, and is followed by `turn_end`. Turns that asked for detail (`_wants_events`) get reasoning frames and
 * tool calls as nanobot's tool events: a `message` of kind `tool_hint` with the call's start, one of kind
 * `progress` with its end or error (and, for edit tools, `file_edit` rows); the bare hints and whole-reasoning
 * notes that chat apps get are left out for them. Files go as `media` (paths) with `media_urls` (signed URLs a client can fetch without the token).
 */
import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import type { OutboundMessage } from '../../bus/types.js';
import { META } from '../metadata.js';
import type { MediaUrl, ServerFrame, ToolEventPayload } from './frames.js';
import { EVENT_META } from './turn-events.js';

export interface OutboundSwitches {
  sendProgress: boolean;
  sendToolHints: boolean;
  showReasoning: boolean;
}

const toolEventSchema = z.object({
  version: z.literal(1),
  phase: z.enum(['start', 'end', 'error']),
  call_id: z.string(),
  name: z.string().min(1),
  arguments: z.record(z.string(), z.unknown()),
  result: z.string().nullable(),
  error: z.string().nullable(),
  files: z.array(z.unknown()),
  embeds: z.array(z.unknown()),
});
const toolEventsSchema = z.array(toolEventSchema).min(1);
const fileEditsSchema = z
  .array(
    z.object({
      version: z.literal(1),
      call_id: z.string(),
      tool: z.string(),
      path: z.string(),
      phase: z.enum(['start', 'end', 'error']),
      added: z.int().min(0),
      deleted: z.int().min(0),
      approximate: z.boolean(),
      status: z.enum(['editing', 'done', 'error']),
      error: z.string().optional(),
    }),
  )
  .min(1);

export function framesFor(
  message: OutboundMessage,
  switches: OutboundSwitches,
  /** The signed URL of a file under the media directory; undefined for a file that is not served. */
  mediaUrl: (path: string) => MediaUrl | undefined,
): ServerFrame[] {
  const meta = message.metadata ?? {};
  const chat_id = message.chatId;
  const text = message.content;
  const streamId = stringOf(meta[META.streamId]);
  const detailed = meta[EVENT_META.wantsEvents] === true;

  if (meta[META.streamDelta]) return text ? [{ event: 'delta', chat_id, text, stream_id: streamId ?? 'stream' }] : [];
  if (meta[META.streamEnd]) return [{ event: 'stream_end', chat_id, stream_id: streamId ?? 'stream' }];
  if (meta[EVENT_META.reasoningDelta]) {
    return switches.showReasoning ? [{ event: 'reasoning_delta', chat_id, text, stream_id: streamId ?? 'r' }] : [];
  }
  if (meta[EVENT_META.reasoningEnd]) {
    return switches.showReasoning ? [{ event: 'reasoning_end', chat_id, stream_id: streamId ?? 'r' }] : [];
  }
  if (meta[EVENT_META.toolEvents] !== undefined) {
    const parsed = toolEventsSchema.safeParse(meta[EVENT_META.toolEvents]);
    if (!parsed.success || !switches.sendToolHints) return [];
    const tool_events: ToolEventPayload[] = parsed.data;
    const kind = tool_events.some((event) => event.phase === 'start') ? 'tool_hint' : 'progress';
    return [{ event: 'message', chat_id, text, kind, tool_events }];
  }
  if (meta[EVENT_META.fileEdits] !== undefined) {
    const parsed = fileEditsSchema.safeParse(meta[EVENT_META.fileEdits]);
    return parsed.success && switches.sendToolHints ? [{ event: 'file_edit', chat_id, edits: parsed.data }] : [];
  }
  if (meta[META.progress]) {
    if (meta[META.reasoning]) {
      if (detailed || !switches.showReasoning) return [];
      // A client without streamed reasoning still gets it as one closed reasoning block.
      const stream_id = `r-${randomBytes(4).toString('hex')}`;
      return [
        { event: 'reasoning_delta', chat_id, text, stream_id },
        { event: 'reasoning_end', chat_id, stream_id },
      ];
    }
    if (meta[META.toolHint]) {
      return detailed || !switches.sendToolHints ? [] : [{ event: 'message', chat_id, text, kind: 'tool_hint' }];
    }
    return switches.sendProgress ? [{ event: 'message', chat_id, text, kind: 'progress' }] : [];
  }

  // Only the turn's own last message ends it: a `message` tool send in the middle of a turn, a cron reminder or a
  // subagent's report does not (the WebUI would drop its stop button while the turn runs on).
  const end: ServerFrame[] = meta[META.turnEnd] === true ? [{ event: 'turn_end', chat_id }] : [];
  const failure = turnErrorSchema.safeParse(meta[META.turnError]);
  if (failure.success) {
    // A failed turn is an error, not an answer: what streamed before it stays as it streamed.
    const { kind, message: detail, hint } = failure.data;
    return [
      ...(streamId !== undefined ? [{ event: 'stream_end', chat_id, stream_id: streamId } as const] : []),
      { event: 'error', chat_id, detail, kind, ...(hint ? { hint } : {}) },
      ...end,
    ];
  }
  const files = message.media?.length ? mediaFields(message.media, mediaUrl) : undefined;
  if (!text && !files && streamId === undefined) return end;
  const plain = meta[META.renderAs] === 'text' ? { render_as: 'text' as const } : {};
  const replyTo = message.replyTo ? { reply_to: message.replyTo } : {};
  if (streamId !== undefined) {
    // nanobot's clients take files from a `message`, not from `stream_end`.
    const attached: ServerFrame[] = files ? [{ event: 'message', chat_id, text: '', ...files, ...replyTo }] : [];
    return [{ event: 'stream_end', chat_id, stream_id: streamId, text }, ...attached, ...end];
  }
  return [{ event: 'message', chat_id, text, ...plain, ...(files ?? {}), ...replyTo }, ...end];
}

function mediaFields(
  paths: string[],
  mediaUrl: (path: string) => MediaUrl | undefined,
): { media: string[]; media_urls?: MediaUrl[] } {
  const media_urls = paths.flatMap((path) => mediaUrl(path) ?? []);
  return { media: [...paths], ...(media_urls.length ? { media_urls } : {}) };
}

const turnErrorSchema = z.object({ kind: z.string(), message: z.string(), hint: z.string().optional() });

function stringOf(value: unknown): string | undefined {
  return typeof value === 'string' || typeof value === 'number' ? String(value) : undefined;
}
