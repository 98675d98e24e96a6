/**
 * TurnRelay: what a chat sees of a turn while it runs. The gateway's dispatcher feeds it the runner's events; it
 * publishes tool hints, the model's reasoning and, for chats whose channel streams (`_wants_stream` on the inbound
 * message), the answer's text as `_stream_delta` messages. Text streamed before a tool call is a segment of its own
 * (ended with `_stream_end`); the final reply names the segment it completes (`_stream_id`), so the channel writes
 * it into the streamed message instead of sending it again.
 */
import { randomBytes } from 'node:crypto';
import type { RunnerEvent } from '../agent/runner.js';
import type { InboundMessage, OutboundMessage } from '../bus/types.js';
import { META } from './metadata.js';
import { EVENT_META, TurnEvents } from './websocket/turn-events.js';

export interface TurnRelaySettings {
  sendToolHints: boolean;
  showReasoning: boolean;
}

export type ToolStartEvent = Extract<RunnerEvent, { type: 'tool-start' }>;

export interface TurnRelayOptions {
  publish: (message: OutboundMessage) => void;
  inbound: InboundMessage;
  settings: TurnRelaySettings;
  /** The one-line hint for a tool call (`read_file("notes.md")`). */
  describeTool: (event: ToolStartEvent) => string;
}

export class TurnRelay {
  private readonly streaming: boolean;
  private readonly turnId = randomBytes(4).toString('hex');
  private segments = 0;
  private openSegment?: string;
  private reasoning = '';
  /** Reasoning as it streams and tool calls with their results, for channels that ask (the WebUI). */
  private readonly detail?: TurnEvents;
  /** Clients that follow turns get one empty marker when the turn's first model request goes out. */
  private startPending: boolean;

  constructor(private readonly options: TurnRelayOptions) {
    this.streaming = options.inbound.metadata?.[META.wantsStream] === true;
    this.startPending = options.inbound.metadata?.[EVENT_META.wantsEvents] === true;
    if (options.inbound.metadata?.[EVENT_META.wantsEvents] === true) {
      this.detail = new TurnEvents(
        (content, extra) => this.publish(content, extra),
        options.settings,
        options.describeTool,
      );
    }
  }

  onEvent(event: RunnerEvent): void {
    // Not when the message is handed to the loop: one folded into a running turn never runs a turn of its own.
    if (event.type === 'model-request' && this.startPending) {
      this.startPending = false;
      this.publish('', { [META.turnStart]: true });
    }
    this.detail?.onEvent(event);
    switch (event.type) {
      case 'reasoning-delta':
        if (this.options.settings.showReasoning) this.reasoning += event.text;
        return;
      case 'text-delta':
        this.flushReasoning();
        if (!this.streaming || !event.text) return;
        this.openSegment ??= `${this.turnId}-${++this.segments}`;
        this.publish(event.text, { [META.streamDelta]: true, [META.streamId]: this.openSegment });
        return;
      case 'tool-start':
        this.flushReasoning();
        this.endSegment();
        if (this.options.settings.sendToolHints) {
          this.publish(this.options.describeTool(event), { [META.progress]: true, [META.toolHint]: true });
        }
        return;
      default:
        return;
    }
  }

  /** Metadata for the final reply: the streamed segment it completes, if any. */
  replyMetadata(): Record<string, unknown> {
    this.detail?.close();
    this.flushReasoning();
    return this.openSegment ? { [META.streamId]: this.openSegment } : {};
  }

  /** The turn ends without a reply (stopped, folded into another turn): close what was streamed as it is. */
  close(): void {
    this.detail?.close();
    this.flushReasoning();
    this.endSegment();
  }

  private endSegment(): void {
    if (!this.openSegment) return;
    this.publish('', { [META.streamEnd]: true, [META.streamId]: this.openSegment });
    this.openSegment = undefined;
  }

  private flushReasoning(): void {
    const text = this.reasoning.trim();
    this.reasoning = '';
    if (text) this.publish(text, { [META.progress]: true, [META.reasoning]: true });
  }

  private publish(content: string, extra: Record<string, unknown>): void {
    const { inbound } = this.options;
    this.options.publish({
      channel: inbound.channel,
      chatId: inbound.chatId,
      content,
      metadata: { ...inbound.metadata, ...extra },
    });
  }
}
