/**
 * What the agent says → server frames (nanobot's protocol). Stream deltas become `delta`, a streamed segment's end
 * `stream_end`; the final reply completes its streamed segment (`stream_end` with the authoritative text) or is a
 * `message`, and is followed by `turn_end`. Turns that asked for detail (`_wants_events`) get reasoning and tool
 * frames, and the one-line tool hints and whole-reasoning notes that chat apps get are left out for them.
 */
import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import type { OutboundMessage } from '../../bus/types.js';
import { META } from '../metadata.js';
import type { MediaLink, ServerFrame } from './frames.js';
import { EVENT_META } from './turn-events.js';

export interface OutboundSwitches {
  sendProgress: boolean;
  sendToolHints: boolean;
  showReasoning: boolean;
}

const toolEventSchema = z.discriminatedUnion('phase', [
  z.object({ phase: z.literal('start'), id: z.string(), name: z.string(), arguments: z.string() }),
  z.object({
    phase: z.literal('end'),
    id: z.string(),
    name: z.string(),
    result: z.string(),
    isError: z.boolean(),
  }),
]);

export function framesFor(
  message: OutboundMessage,
  switches: OutboundSwitches,
  mediaLink: (path: string) => MediaLink,
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
  if (meta[EVENT_META.toolEvent] !== undefined) {
    const parsed = toolEventSchema.safeParse(meta[EVENT_META.toolEvent]);
    if (!parsed.success || !switches.sendToolHints) return [];
    const tool = parsed.data;
    return tool.phase === 'start'
      ? [{ event: 'tool_start', chat_id, tool_call_id: tool.id, name: tool.name, arguments: tool.arguments }]
      : [
          {
            event: 'tool_end',
            chat_id,
            tool_call_id: tool.id,
            name: tool.name,
            result: tool.result,
            is_error: tool.isError,
          },
        ];
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
  const media = message.media?.length ? message.media.map(mediaLink) : undefined;
  if (!text && !media && streamId === undefined) return end;
  const plain = meta[META.renderAs] === 'text' ? { render_as: 'text' as const } : {};
  const reply: ServerFrame =
    streamId !== undefined
      ? { event: 'stream_end', chat_id, stream_id: streamId, text, ...(media ? { media } : {}) }
      : {
          event: 'message',
          chat_id,
          text,
          ...plain,
          ...(media ? { media } : {}),
          ...(message.replyTo ? { reply_to: message.replyTo } : {}),
        };
  return [reply, ...end];
}

const turnErrorSchema = z.object({ kind: z.string(), message: z.string(), hint: z.string().optional() });

function stringOf(value: unknown): string | undefined {
  return typeof value === 'string' || typeof value === 'number' ? String(value) : undefined;
}
