/**
 * The contract between the gateway and a chat channel. A channel publishes what users send with
 * `bus.publishInbound` and delivers what the agent says in `send`. Most channels are a `ChatChannel`
 * (chat-channel.ts) around a small `ChatPlatform` adapter; anything that implements this interface can be run by the
 * ChannelManager.
 */
import type { MessageBus } from '../bus/message-bus.js';
import type { OutboundMessage } from '../bus/types.js';
import type { ChatAdmission } from './access.js';
import type { MarkupFlavour } from './markup/flavours.js';

export type ChannelStatus = 'starting' | 'running' | 'reconnecting' | 'stopped' | 'error';

/** What a platform can do; the framework renders, splits and streams accordingly. */
export interface ChannelCapabilities {
  /** Longest message the platform accepts, measured on the rendered text (Telegram: 4096). */
  maxMessageLength: number;
  /** How replies are formatted (Markdown from the model is converted to this). */
  markup: MarkupFlavour;
  /** A sent message can be edited: replies stream into one message as they are written. */
  editMessages: boolean;
  /** Files and images can be sent. */
  media: boolean;
  /** Replies can go to a thread/topic of a chat. */
  threads: boolean;
  /** Quick-reply buttons can be attached (otherwise their labels are appended as text). */
  buttons: boolean;
}

/** How a running channel tells the manager it lost its connection (the manager stops it and starts it again). */
export interface ChannelEvents {
  /** `retryAfterMs`: the platform asked to wait at least this long (a rate limit, a 409 conflict). */
  failed(error: Error, retryAfterMs?: number): void;
}

export interface Channel {
  /** Matches `OutboundMessage.channel` / `InboundMessage.channel` (e.g. "telegram"). */
  readonly name: string;
  readonly capabilities: ChannelCapabilities;
  /**
   * Connects; resolves once messages flow. Rejects when it could not connect (a UserError for a setup mistake,
   * which is not retried). Called again after `stop` when the manager reconnects.
   */
  start(bus: MessageBus, events?: ChannelEvents): Promise<void>;
  /** Disconnects; idempotent. */
  stop(): Promise<void>;
  /** Delivers one message; rejects when it could not (the router retries). */
  send(message: OutboundMessage): Promise<void>;
  status(): ChannelStatus;
  /**
   * Whether the channel's access rules admit this chat as a target the user did not just write from (the `message`
   * tool). A channel without it can only be written to in the chat a turn came from.
   */
  admitsChat?(chatId: string): ChatAdmission;
  /**
   * While the manager waits out a backoff: calls `changed` when something the channel needs to connect changed
   * outside it (a login saved by `nanobot channels login` in another terminal), so it is tried at once rather than in
   * up to a minute. Returns the function that stops watching.
   */
  watchSetup?(changed: () => void): () => void;
}

/** Plain text, no editing, no media: what an unknown surface can be assumed to handle. */
export const BASIC_CAPABILITIES: ChannelCapabilities = {
  maxMessageLength: 4000,
  markup: 'plain',
  editMessages: false,
  media: false,
  threads: false,
  buttons: false,
};
