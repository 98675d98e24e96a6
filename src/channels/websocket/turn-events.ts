/**
 * The detail a rich client (the WebUI) shows of a running turn, beyond what chat apps get: the model's reasoning as
 * it streams, and each tool call with its arguments and, when it finishes, a preview of its result. A channel asks
 * for it with `_wants_events` on its inbound messages; TurnRelay then feeds this class the runner's events, and
 * these outbound messages reach the channel alongside the usual stream deltas.
 */
import { randomBytes } from 'node:crypto';
import type { RunnerEvent } from '../../agent/runner.js';
import type { ContentPart } from '../../providers/types.js';

/** Tool results and arguments are cut to this many characters (the cards show a preview). */
export const PREVIEW_CHARS = 2_000;

export function preview(text: string, max = PREVIEW_CHARS): string {
  return text.length > max ? `${text.slice(0, max)}\n… (${text.length - max} more characters)` : text;
}

export const EVENT_META = {
  /** On an inbound message: send this turn's detail. */
  wantsEvents: '_wants_events',
  /** A chunk of reasoning; `_stream_id` names the reasoning stream. */
  reasoningDelta: '_reasoning_delta',
  reasoningEnd: '_reasoning_end',
  /** A ToolEventDetail. */
  toolEvent: '_tool_event',
} as const;

export type ToolEventDetail =
  | { phase: 'start'; id: string; name: string; arguments: string }
  | { phase: 'end'; id: string; name: string; result: string; isError: boolean };

export interface TurnEventSettings {
  sendToolHints: boolean;
  showReasoning: boolean;
}

export type PublishDetail = (content: string, metadata: Record<string, unknown>) => void;

export class TurnEvents {
  private readonly turnId = randomBytes(4).toString('hex');
  private reasoningStreams = 0;
  private openReasoning?: string;

  constructor(
    private readonly publish: PublishDetail,
    private readonly settings: TurnEventSettings,
  ) {}

  onEvent(event: RunnerEvent): void {
    switch (event.type) {
      case 'reasoning-delta':
        if (!this.settings.showReasoning || !event.text) return;
        this.openReasoning ??= `${this.turnId}-r${++this.reasoningStreams}`;
        this.publish(event.text, { [EVENT_META.reasoningDelta]: true, _stream_id: this.openReasoning });
        return;
      case 'text-delta':
        if (event.text) this.close();
        return;
      case 'tool-start': {
        this.close();
        if (!this.settings.sendToolHints) return;
        const { id, function: fn } = event.call;
        const detail: ToolEventDetail = { phase: 'start', id, name: fn.name, arguments: preview(fn.arguments) };
        this.publish('', { [EVENT_META.toolEvent]: detail });
        return;
      }
      case 'tool-end': {
        if (!this.settings.sendToolHints) return;
        const { id, function: fn } = event.call;
        const detail: ToolEventDetail = {
          phase: 'end',
          id,
          name: fn.name,
          result: preview(resultText(event.result.content)),
          isError: event.result.isError === true,
        };
        this.publish('', { [EVENT_META.toolEvent]: detail });
        return;
      }
      default:
        return;
    }
  }

  /** Ends the reasoning stream that is open (the answer or a tool call follows, or the turn ends). */
  close(): void {
    if (!this.openReasoning) return;
    this.publish('', { [EVENT_META.reasoningEnd]: true, _stream_id: this.openReasoning });
    this.openReasoning = undefined;
  }
}

function resultText(content: string | ContentPart[]): string {
  if (typeof content === 'string') return content;
  return content.map((part) => (part.type === 'text' ? part.text : '[image]')).join('\n');
}
