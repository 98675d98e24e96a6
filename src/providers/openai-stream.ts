/**
 * Folds OpenAI chat-completion chunks into one response, emitting events as they arrive, and absorbs what
 * OpenAI-compatible servers do differently: reasoning as `reasoning_content` (DeepSeek, Kimi, Qwen), `reasoning`
 * (OpenRouter, vLLM, Ollama), `reasoning_details` (MiniMax), or inline as `<think>…</think>`; Mistral's content parts; tool calls without `index`
 * or `id`, with repeated ids (GLM), with arguments sent as an object (some local servers) or printed as
 * `<tool_call>` text; Gemini's `extra_content` thought signatures; and StepFun's answer in the reasoning field.
 */
import { randomUUID } from 'node:crypto';
import type { ChatCompletionChunk } from 'openai/resources/chat/completions';
import { errorResponse } from './retry.js';
import { InlineTagSplitter, parseTextToolCall, type Segment, splitOrphanThinkClose } from './think-tags.js';
import type { FinishReason, LLMResponse, ProviderError, StreamEvent, ToolCall, Usage } from './types.js';

interface PendingToolCall {
  id: string;
  name: string;
  arguments: string;
  extraContent?: Record<string, unknown>;
  started: boolean;
}

export class ChunkAccumulator {
  private text = '';
  private reasoning = '';
  private readonly splitter = new InlineTagSplitter();
  private inlineThinking = false;
  private readonly textToolCalls: ToolCall[] = [];
  /** `<tool_call>` blocks held back from the stream, kept verbatim in case they are not used as calls. */
  private readonly heldToolText: string[] = [];
  private readonly toolCalls = new Map<number, PendingToolCall>();
  private lastToolKey: number | undefined;
  private finishReason: string | null = null;
  private usage: Usage | undefined;
  private sawChoice = false;

  constructor(
    private readonly emit: (event: StreamEvent) => void,
    /** StepFun: an empty answer with reasoning means the reasoning was the answer. */
    private readonly reasoningAsContent: boolean,
  ) {}

  add(chunk: ChatCompletionChunk): void {
    if (chunk.usage) this.usage = readUsage(chunk.usage);
    const choice = chunk.choices?.[0];
    if (!choice) return;
    this.sawChoice = true;
    const delta = choice.delta as Record<string, unknown> | undefined;
    if (delta) {
      // Reasoning first: a chunk that carries both belongs to the end of the thinking.
      const reasoning = delta.reasoning_content ?? delta.reasoning ?? detailsText(delta.reasoning_details);
      if (typeof reasoning === 'string' && reasoning) this.addReasoning(reasoning);
      this.addContent(delta.content);
      if (Array.isArray(delta.tool_calls)) {
        for (const [position, call] of delta.tool_calls.entries()) this.addToolCallDelta(call, position);
      } else if (isRecord(delta.function_call)) {
        this.addToolCallDelta({ index: 0, function: delta.function_call }, 0);
      }
    }
    if (choice.finish_reason) this.finishReason = choice.finish_reason;
  }

  finish(): LLMResponse {
    if (!this.sawChoice) {
      return errorResponse({ kind: 'server', message: 'The provider returned an empty response.', retryable: true });
    }
    // The SDK ends an aborted or dropped stream quietly: without a finish reason the answer may be cut off.
    if (this.finishReason === null) {
      return this.fail({
        kind: 'network',
        message: 'The response stream ended before the provider finished it.',
        retryable: true,
      });
    }
    this.route(this.splitter.flush());
    let toolCalls = this.completedToolCalls();
    let text = this.text;
    if (toolCalls.length === 0 && this.textToolCalls.length > 0) toolCalls = this.textToolCalls;
    else if (this.heldToolText.length > 0) text += this.heldToolText.join('');
    let reasoning = this.reasoning;
    if (!this.inlineThinking && !reasoning) {
      const orphan = splitOrphanThinkClose(text);
      if (orphan) ({ reasoning, answer: text } = orphan);
    }
    let content = text.trim() ? text : '';
    if (!content && this.reasoningAsContent && toolCalls.length === 0) {
      content = reasoning;
      reasoning = '';
    }
    return {
      content: content || null,
      toolCalls,
      finishReason: mapFinishReason(this.finishReason, toolCalls.length > 0),
      ...(reasoning ? { reasoningContent: reasoning } : {}),
      ...(this.usage ? { usage: this.usage } : {}),
    };
  }

  /** Keeps what already streamed, so the caller can show or save the partial answer. */
  fail(error: ProviderError): LLMResponse {
    return errorResponse(error, {
      content: this.text || null,
      ...(this.reasoning ? { reasoningContent: this.reasoning } : {}),
      ...(this.usage ? { usage: this.usage } : {}),
    });
  }

  private addContent(content: unknown): void {
    if (typeof content === 'string') {
      if (content) this.route(this.splitter.push(content));
      return;
    }
    // Mistral reasoning models stream content as [{type:'thinking', thinking:[…]}, {type:'text', text}].
    if (!Array.isArray(content)) return;
    for (const part of content) {
      if (!isRecord(part)) continue;
      if (part.type === 'thinking') this.addReasoning(textOf(part.thinking));
      else if (typeof part.text === 'string' && part.text) this.route(this.splitter.push(part.text));
    }
  }

  private route(segments: Segment[]): void {
    for (const segment of segments) {
      if (segment.kind === 'text') this.addText(segment.text);
      else if (segment.kind === 'reasoning') {
        this.inlineThinking = true;
        this.addReasoning(segment.text);
      } else {
        const call = parseTextToolCall(segment.text);
        if (call) {
          this.textToolCalls.push(call);
          this.heldToolText.push(`<tool_call>${segment.text}</tool_call>`);
          this.emit({ type: 'tool-call-start', id: call.id, name: call.function.name });
        } else {
          this.addText(`<tool_call>${segment.text}</tool_call>`);
        }
      }
    }
  }

  private addText(text: string): void {
    if (!text) return;
    this.text += text;
    this.emit({ type: 'text-delta', text });
  }

  private addReasoning(text: string): void {
    if (!text) return;
    this.reasoning += text;
    this.emit({ type: 'reasoning-delta', text });
  }

  private addToolCallDelta(raw: unknown, position: number): void {
    if (!isRecord(raw)) return;
    const fn = isRecord(raw.function) ? raw.function : {};
    const id = typeof raw.id === 'string' && raw.id ? raw.id : undefined;
    const name = typeof fn.name === 'string' && fn.name ? fn.name : undefined;
    const key = this.toolCallKey(typeof raw.index === 'number' ? raw.index : undefined, id, name, position);
    const call = this.toolCalls.get(key) ?? { id: '', name: '', arguments: '', started: false };
    this.toolCalls.set(key, call);
    this.lastToolKey = key;
    if (id && !call.id) call.id = id;
    if (name && !call.name) call.name = name;
    // Some local servers send the arguments as a parsed object rather than JSON text.
    if (typeof fn.arguments === 'string') call.arguments += fn.arguments;
    else if (isRecord(fn.arguments)) call.arguments += JSON.stringify(fn.arguments);
    if (isRecord(raw.extra_content)) call.extraContent = { ...call.extraContent, ...raw.extra_content };
    if (call.name && !call.started) {
      call.started = true;
      // GLM repeats one id for parallel calls; a result must name exactly one call.
      if (!call.id || [...this.toolCalls.values()].some((other) => other !== call && other.id === call.id)) {
        call.id = `call_${randomUUID().replace(/-/g, '').slice(0, 24)}`;
      }
      this.emit({ type: 'tool-call-start', id: call.id, name: call.name });
    }
  }

  /**
   * Deltas are keyed by `index`. Servers that omit it: match by id, else a delta naming a function starts a new
   * call when the one in progress already has a name (Ollama sends whole calls), else it continues that call.
   */
  private toolCallKey(index: number | undefined, id: string | undefined, name: string | undefined, position: number) {
    if (index !== undefined) return index;
    const next = this.toolCalls.size === 0 ? 0 : Math.max(...this.toolCalls.keys()) + 1;
    if (id) {
      for (const [key, call] of this.toolCalls) if (call.id === id) return key;
      return next;
    }
    const last = this.lastToolKey === undefined ? undefined : this.toolCalls.get(this.lastToolKey);
    if (this.lastToolKey === undefined || (name && last?.name) || position > 0) return next;
    return this.lastToolKey;
  }

  private completedToolCalls(): ToolCall[] {
    return [...this.toolCalls.entries()]
      .sort(([a], [b]) => a - b)
      .map(([, call]) => call)
      .filter((call) => call.name)
      .map((call) => ({
        id: call.id,
        type: 'function' as const,
        function: { name: call.name, arguments: call.arguments.trim() || '{}' },
        ...(call.extraContent ? { extra_content: call.extraContent } : {}),
      }));
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** MiniMax with `reasoning_split` (and OpenRouter) stream reasoning as `reasoning_details: [{type, text}]`. */
function detailsText(value: unknown): string | undefined {
  if (!Array.isArray(value)) return undefined;
  return value.map((part) => (isRecord(part) && typeof part.text === 'string' ? part.text : '')).join('');
}

function textOf(value: unknown): string {
  if (typeof value === 'string') return value;
  if (!Array.isArray(value)) return '';
  return value
    .map((part) => (isRecord(part) ? part.text : undefined))
    .filter((text): text is string => typeof text === 'string')
    .join('');
}

function readUsage(raw: NonNullable<ChatCompletionChunk['usage']>): Usage {
  const extra = raw as unknown as Record<string, unknown>;
  // Cached prompt tokens: OpenAI/Zhipu/Qwen nest them; Moonshot/StepFun put them top-level; DeepSeek names them "hit".
  const cached = [raw.prompt_tokens_details?.cached_tokens, extra.cached_tokens, extra.prompt_cache_hit_tokens].find(
    (value): value is number => typeof value === 'number' && value > 0,
  );
  const reasoningTokens = raw.completion_tokens_details?.reasoning_tokens;
  return {
    promptTokens: raw.prompt_tokens ?? 0,
    completionTokens: raw.completion_tokens ?? 0,
    ...(cached ? { cachedTokens: cached } : {}),
    ...(reasoningTokens ? { reasoningTokens } : {}),
  };
}

function mapFinishReason(reason: string | null, hasToolCalls: boolean): FinishReason {
  switch (reason) {
    case 'length':
      return 'length';
    case 'content_filter':
      return 'content_filter';
    case 'tool_calls':
    case 'function_call':
      return 'tool_calls';
    default:
      // Some servers say "stop" (or nothing) even when the turn ends in tool calls.
      return hasToolCalls ? 'tool_calls' : 'stop';
  }
}
