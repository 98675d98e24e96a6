/** The pump that delivers the bus's outbound messages to channels, in order per chat, with retries. */
import type { MessageBus } from '../bus/message-bus.js';
import type { OutboundMessage } from '../bus/types.js';
import { errorMessage } from '../util/errors.js';
import { type Logger, logFailure, silentLogger } from '../util/log.js';
import type { Channel } from './channel.js';

export interface OutboundRouterOptions {
  bus: MessageBus;
  channels: readonly Channel[];
  log?: Logger;
  /** Retries after a failed send (`channels.sendMaxRetries`); read per message so a reload applies. */
  maxRetries?: () => number;
  /** First retry delay; doubles per attempt. */
  retryDelayMs?: number;
  /** Told when a message was sent (`true`) or given up on after its retries (`false`). */
  onSettled?: (message: OutboundMessage, sent: boolean) => void;
}

/**
 * Consumes the bus's outbound queue and hands each message to its channel. Deliveries to one chat stay in order;
 * different chats are delivered independently, so one slow chat does not hold up the rest.
 */
export class OutboundRouter {
  private readonly byName: Map<string, Channel>;
  private readonly log: Logger;
  private readonly chains = new Map<string, Promise<void>>();
  private readonly stopping = new AbortController();
  private pump?: Promise<void>;

  constructor(private readonly options: OutboundRouterOptions) {
    this.byName = new Map(options.channels.map((channel) => [channel.name, channel]));
    this.log = options.log ?? silentLogger;
  }

  start(): void {
    this.pump ??= this.consume();
  }

  /** Delivers to this channel from now on (a config reload started or replaced it). */
  addChannel(channel: Channel): void {
    this.byName.set(channel.name, channel);
  }

  removeChannel(name: string): void {
    this.byName.delete(name);
  }

  /** Stops taking messages and waits (up to `flushMs`) for deliveries already under way. */
  async stop(flushMs: number): Promise<void> {
    this.stopping.abort();
    await this.pump;
    const pending = Promise.allSettled([...this.chains.values()]);
    await Promise.race([pending, new Promise((resolve) => setTimeout(resolve, flushMs).unref())]);
  }

  private async consume(): Promise<void> {
    while (!this.stopping.signal.aborted) {
      let message: OutboundMessage;
      try {
        message = await this.options.bus.consumeOutbound(this.stopping.signal);
      } catch {
        return;
      }
      this.route(message);
    }
  }

  private route(message: OutboundMessage): void {
    const channel = this.byName.get(message.channel);
    if (!channel) {
      this.log.warn(`gateway: no channel "${message.channel}" is running; dropped a message for ${message.chatId}`);
      return;
    }
    const key = `${message.channel}:${message.chatId}`;
    const previous = this.chains.get(key) ?? Promise.resolve();
    // deliver() logs its own failures; the catch keeps a surprise (a throwing logger) from ending the process.
    const next = previous
      .then(() => this.deliver(channel, message))
      .catch(logFailure(this.log, `gateway: delivering to ${key} failed`));
    this.chains.set(key, next);
    void next.finally(() => {
      if (this.chains.get(key) === next) this.chains.delete(key);
    });
  }

  private async deliver(channel: Channel, message: OutboundMessage): Promise<void> {
    const retries = this.options.maxRetries?.() ?? 3;
    const baseDelay = this.options.retryDelayMs ?? 500;
    for (let attempt = 0; ; attempt += 1) {
      try {
        await channel.send(message);
        this.options.onSettled?.(message, true);
        return;
      } catch (err) {
        if (attempt >= retries) {
          this.log.error(`gateway: ${channel.name}: could not deliver to ${message.chatId}: ${errorMessage(err)}`);
          this.options.onSettled?.(message, false);
          return;
        }
        await new Promise((resolve) => setTimeout(resolve, baseDelay * 2 ** attempt));
      }
    }
  }
}
