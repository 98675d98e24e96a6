/**
 * The message bus: surfaces publish inbound messages and consume outbound ones; the agent does the reverse.
 * Neither side imports the other.
 */
import { AsyncQueue } from './queue.js';
import type { InboundMessage, OutboundMessage } from './types.js';

export class MessageBus {
  private readonly inbound = new AsyncQueue<InboundMessage>();
  private readonly outbound = new AsyncQueue<OutboundMessage>();

  publishInbound(message: InboundMessage): void {
    this.inbound.put(message);
  }

  consumeInbound(signal?: AbortSignal): Promise<InboundMessage> {
    return this.inbound.take(signal);
  }

  publishOutbound(message: OutboundMessage): void {
    this.outbound.put(message);
  }

  consumeOutbound(signal?: AbortSignal): Promise<OutboundMessage> {
    return this.outbound.take(signal);
  }
}
