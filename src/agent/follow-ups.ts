/**
 * Follow-up turns: messages the agent produces for one of its own sessions (a subagent's report). They reach the
 * session the way a user message would, in one of two ways:
 * - `bus` (the gateway): published as inbound messages; the dispatcher runs them like any chat message, so its
 *   concurrency limit, mid-turn joining and reply routing apply, and the answer goes to the chat of the session.
 * - `loop` (`nanobot agent`, where nobody consumes the bus's inbound side): the loop runs the turn directly (joining
 *   the session's running turn if there is one) and the answer is published outbound, where the CLI prints it.
 */
import type { MessageBus } from '../bus/message-bus.js';
import type { InboundMessage } from '../bus/types.js';
import { type Logger, silentLogger } from '../util/log.js';
import type { AgentLoop } from './loop.js';

export type FollowUpMode = 'bus' | 'loop';

export function followUpSink(
  mode: FollowUpMode,
  bus: MessageBus,
  loop: () => Pick<AgentLoop, 'processMessage'>,
  log: Logger = silentLogger,
): (message: InboundMessage) => Promise<void> {
  if (mode === 'bus') return async (message) => bus.publishInbound(message);
  return async (message) => {
    const output = await loop().processMessage({
      channel: message.channel,
      chatId: message.chatId,
      content: message.content,
      ...(message.sessionKey ? { sessionKey: message.sessionKey } : {}),
    });
    // Folded into a running turn (its answer covers this) or cancelled: nothing more to say.
    if (output.injected || output.stopReason === 'aborted') return;
    if (output.error && output.stopReason === 'error') {
      log.warn(`follow-up for ${output.sessionKey}: the model request failed: ${output.error.message}`);
      return;
    }
    if (!output.content.trim()) return;
    bus.publishOutbound({
      channel: message.channel,
      chatId: message.chatId,
      content: output.content,
      ...(message.metadata ? { metadata: { ...message.metadata } } : {}),
    });
  };
}
