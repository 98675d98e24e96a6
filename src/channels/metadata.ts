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
  /** On an empty marker before a turn runs, for clients that follow turns (`_wants_events`): it starts now. */
  turnStart: '_turn_start',
  /** On the last message of a turn (its reply, or an empty marker when it has none): the turn is over. */
  turnEnd: '_turn_end',
  /** On a reply that reports a failed turn: a TurnError (rich clients show it as an error, with its hint). */
  turnError: '_turn_error',
  /** On a user's message whose voice note / audio was transcribed (and on its replies): `tts.when: "voice-in"`. */
  voiceIn: '_voice_in',
  /** nanobot's key: `"text"` = preformatted plain text (command output), not Markdown to reflow. */
  renderAs: 'render_as',
} as const;

/** Why a turn failed, for clients that show errors apart from answers. `kind` is a ProviderErrorKind or `internal`. */
export interface TurnError {
  kind: string;
  message: string;
  hint?: string;
}
