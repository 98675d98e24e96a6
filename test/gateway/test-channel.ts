/** An in-memory channel for gateway tests: `receive` plays a user writing in a chat; `sent` records the replies. */
import type { MessageBus } from '../../src/bus/message-bus.js';
import type { OutboundMessage } from '../../src/bus/types.js';
import { BASIC_CAPABILITIES, type Channel, type ChannelStatus } from '../../src/channels/channel.js';

interface Waiter {
  match: (message: OutboundMessage) => boolean;
  resolve: (message: OutboundMessage) => void;
}

export class TestChannel implements Channel {
  readonly sent: OutboundMessage[] = [];
  readonly capabilities = BASIC_CAPABILITIES;
  private bus?: MessageBus;
  private state: ChannelStatus = 'stopped';
  private waiters: Waiter[] = [];

  constructor(readonly name = 'test') {}

  async start(bus: MessageBus): Promise<void> {
    this.bus = bus;
    this.state = 'running';
  }

  async stop(): Promise<void> {
    this.state = 'stopped';
  }

  async send(message: OutboundMessage): Promise<void> {
    this.sent.push(message);
    this.waiters = this.waiters.filter((waiter) => {
      if (!waiter.match(message)) return true;
      waiter.resolve(message);
      return false;
    });
  }

  status(): ChannelStatus {
    return this.state;
  }

  receive(chatId: string, content: string, senderId = 'user'): void {
    if (!this.bus) throw new Error('TestChannel.receive before start');
    this.bus.publishInbound({ channel: this.name, senderId, chatId, content });
  }

  /** Replies (not tool hints) sent to one chat, in order. */
  repliesTo(chatId: string): string[] {
    return this.sent.filter((m) => m.chatId === chatId && !m.metadata?._progress).map((m) => m.content);
  }

  /** The first sent message (past or future) matching `match`; rejects after `timeoutMs`. */
  waitFor(match: (message: OutboundMessage) => boolean, timeoutMs = 5_000): Promise<OutboundMessage> {
    const found = this.sent.find(match);
    if (found) return Promise.resolve(found);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`TestChannel: no matching message in ${timeoutMs} ms`)),
        timeoutMs,
      );
      this.waiters.push({
        match,
        resolve: (message) => {
          clearTimeout(timer);
          resolve(message);
        },
      });
    });
  }

  /** Waits until `count` replies reached `chatId`. */
  async waitForReplies(chatId: string, count: number, timeoutMs = 5_000): Promise<string[]> {
    const deadline = Date.now() + timeoutMs;
    while (this.repliesTo(chatId).length < count) {
      if (Date.now() > deadline)
        throw new Error(`TestChannel: ${chatId} got ${this.repliesTo(chatId).length}/${count}`);
      await new Promise((r) => setTimeout(r, 10));
    }
    return this.repliesTo(chatId);
  }
}
