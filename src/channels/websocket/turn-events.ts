/**
 * The detail a rich client (the WebUI) shows of a running turn, beyond what chat apps get: the model's reasoning as
 * it streams, and each tool call with its arguments and, when it finishes, a preview of its result or its error. A
 * channel asks for it with `_wants_events` on its inbound messages; TurnRelay then feeds this class the runner's
 * events, and these outbound messages reach the channel alongside the usual stream deltas.
 *
 * Tool calls travel as nanobot's tool events (`version`, `phase` start|end|error, `call_id`, `name`, `arguments`
 * as an object, `result`, `error`, `files`, `embeds`): the start rides on the call's one-line hint, the end on a
 * progress note of its own. A client keys a call by `name(JSON of arguments)` too, so both phases carry the same
 * arguments object.
 */
import { randomBytes } from 'node:crypto';
import type { RunnerEvent } from '../../agent/runner.js';
import type { ContentPart, ToolCall } from '../../providers/types.js';
import { fileEdits, isFileEditTool } from './file-edits.js';
import type { FileEditPayload, ToolEventPayload } from './frames.js';

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
  /** ToolEventPayload[]; the message's content is the call's one-line hint (start) or empty (end, error). */
  toolEvents: '_tool_events',
  /** FileEditPayload[] of an edit tool's call. */
  fileEdits: '_file_edits',
} as const;

export interface TurnEventSettings {
  sendToolHints: boolean;
  showReasoning: boolean;
}

/** The one-line hint shown for a tool call (`read notes.md`). */
export type DescribeTool = (event: Extract<RunnerEvent, { type: 'tool-start' }>) => string;

export type PublishDetail = (content: string, metadata: Record<string, unknown>) => void;

export class TurnEvents {
  private readonly turnId = randomBytes(4).toString('hex');
  private reasoningStreams = 0;
  private openReasoning?: string;

  constructor(
    private readonly publish: PublishDetail,
    private readonly settings: TurnEventSettings,
    private readonly describeTool: DescribeTool = (event) => event.call.function.name,
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
        const payload = toolEvent(event.call, 'start', null, null);
        this.publish(this.describeTool(event) || event.call.function.name, { [EVENT_META.toolEvents]: [payload] });
        this.publishEdits(event.call, 'start');
        return;
      }
      case 'tool-end': {
        if (!this.settings.sendToolHints) return;
        const text = preview(resultText(event.result.content));
        const failed = event.result.isError === true;
        const payload = failed
          ? toolEvent(event.call, 'error', null, text.trim() || 'Tool execution failed')
          : toolEvent(event.call, 'end', text, null);
        this.publish('', { [EVENT_META.toolEvents]: [payload] });
        this.publishEdits(event.call, failed ? 'error' : 'end', text);
        return;
      }
      default:
        return;
    }
  }

  private publishEdits(call: ToolCall, phase: FileEditPayload['phase'], error?: string): void {
    if (!isFileEditTool(call.function.name)) return;
    // Counted on the whole arguments, not the preview the tool event carries.
    const edits = fileEdits(
      { id: call.id, name: call.function.name, arguments: parseObject(call.function.arguments) },
      phase,
      error,
    );
    if (edits.length) this.publish('', { [EVENT_META.fileEdits]: edits });
  }

  /** Ends the reasoning stream that is open (the answer or a tool call follows, or the turn ends). */
  close(): void {
    if (!this.openReasoning) return;
    this.publish('', { [EVENT_META.reasoningEnd]: true, _stream_id: this.openReasoning });
    this.openReasoning = undefined;
  }
}

function toolEvent(
  call: ToolCall,
  phase: ToolEventPayload['phase'],
  result: string | null,
  error: string | null,
): ToolEventPayload {
  return {
    version: 1,
    phase,
    call_id: call.id,
    name: call.function.name,
    arguments: argumentsObject(call.function.arguments),
    result,
    error,
    files: [],
    embeds: [],
  };
}

/** The call's arguments as an object (`{}` when they are not a JSON object); long strings cut to a preview. */
export function argumentsObject(json: string): Record<string, unknown> {
  return cutStrings(parseObject(json));
}

function parseObject(json: string): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(json);
  } catch {
    return {};
  }
  return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)
    ? (parsed as Record<string, unknown>)
    : {};
}

function cutStrings(value: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) {
    if (typeof item === 'string') out[key] = preview(item);
    else if (item && typeof item === 'object' && !Array.isArray(item)) {
      out[key] = cutStrings(item as Record<string, unknown>);
    } else out[key] = item;
  }
  return out;
}

function resultText(content: string | ContentPart[]): string {
  if (typeof content === 'string') return content;
  return content.map((part) => (part.type === 'text' ? part.text : '[image]')).join('\n');
}
