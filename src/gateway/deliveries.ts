/**
 * Answers survive a crash between being saved and being sent: the dispatcher saves each answer marked "to be
 * delivered" and hands the outbound message to this tracker; the router reports when the channel took it, and the
 * answer is recorded as delivered. At start, the answers a killed gateway saved but never delivered are sent again
 * (at least once: a crash after the platform took a message but before its record was written sends it twice).
 */
import type { MessageBus } from '../bus/message-bus.js';
import type { OutboundMessage } from '../bus/types.js';
import type { DeliveryLog, DeliveryRef } from '../session/delivery.js';
import type { SessionStore } from '../session/types.js';
import { errorMessage } from '../util/errors.js';
import { type Logger, silentLogger } from '../util/log.js';

interface Tracked {
  ref: DeliveryRef;
  /** A redelivery is tried once: given up or not, it is not tried again at the next start. */
  once: boolean;
}

export class DeliveryTracker {
  private readonly tracked = new WeakMap<OutboundMessage, Tracked>();
  private readonly writes = new Set<Promise<void>>();

  constructor(
    private readonly deliveries: DeliveryLog,
    private readonly log: Logger = silentLogger,
  ) {}

  track(message: OutboundMessage, ref: DeliveryRef, once = false): void {
    this.tracked.set(message, { ref, once });
  }

  /** For the router's `onSettled`. */
  readonly settled = (message: OutboundMessage, sent: boolean): void => {
    const entry = this.tracked.get(message);
    if (!entry || (!sent && !entry.once)) return; // an answer never sent is tried again after a restart
    this.tracked.delete(message);
    const write = this.deliveries.markDelivered(entry.ref).catch((err: unknown) => {
      this.log.warn(
        `gateway: could not record the delivery of an answer in ${entry.ref.sessionKey}: ${errorMessage(err)}`,
      );
    });
    this.writes.add(write);
    // `write` never rejects (its catch logs); the second handler only says so to the floating-promise check.
    void write.then(
      () => this.writes.delete(write),
      () => undefined,
    );
  };

  /**
   * Publishes the answers saved but never delivered, and a notice for each turn cut off before it answered, to the
   * channels that run now; returns how many.
   */
  async redeliver(sessions: SessionStore, bus: MessageBus, channels: ReadonlySet<string>): Promise<number> {
    let count = 0;
    for (const pending of await this.deliveries.undelivered(sessions)) {
      if (!channels.has(pending.channel)) continue;
      const message: OutboundMessage = { channel: pending.channel, chatId: pending.chatId, content: pending.content };
      this.track(message, pending, true);
      this.log.warn(
        pending.kind === 'answer'
          ? `gateway: ${pending.sessionKey}: delivering an answer saved before the last stop but never sent`
          : `gateway: ${pending.sessionKey}: telling the chat its last turn was interrupted by the last stop`,
      );
      bus.publishOutbound(message);
      count++;
    }
    return count;
  }

  /** Waits for delivery records still being written (before exit). */
  async flush(): Promise<void> {
    await Promise.allSettled([...this.writes]);
  }
}
