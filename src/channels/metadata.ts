/**
 * Metadata keys on bus messages that the channel framework reads or writes. The `_`-prefixed ones are signals
 * between the gateway's TurnRelay and ChatChannel; the others describe the user's message (nanobot's names).
 */
export const META = {
  messageId: 'message_id',
  threadId: 'thread_id',
  wantsStream: '_wants_stream',
  progress: '_progress',
  toolHint: '_tool_hint',
  reasoning: '_reasoning',
  streamDelta: '_stream_delta',
  streamEnd: '_stream_end',
  streamId: '_stream_id',
} as const;
