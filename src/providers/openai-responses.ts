/**
 * The OpenAI Responses API (`POST /responses`), for `providers.openai.apiType: "responses"` (and Azure's v1
 * endpoint). Stateless like nanobot: `store: false`, the whole conversation as input items each time. The system
 * prompt becomes `instructions`, tool calls `function_call` items keyed by `call_id`, tool results
 * `function_call_output` items. Streamed events are folded into the same events and response as the chat wire.
 */
import { createHash } from 'node:crypto';
import type OpenAI from 'openai';
import { toProviderError } from './errors.js';
import { deepMerge } from './openai-request.js';
import { acceptsTemperature, normalizeEffort } from './reasoning.js';
import { upstreamModelName } from './registry.js';
import type { ResolvedProvider } from './resolve.js';
import { errorResponse } from './retry.js';
import type { WireWatch } from './stream-watch.js';
import type {
  ChatMessage,
  ChatRequest,
  ContentPart,
  FinishReason,
  LLMResponse,
  ProviderError,
  StreamEvent,
  ToolCall,
  Usage,
} from './types.js';

type WireObject = Record<string, unknown>;

export function buildResponsesBody(resolved: ResolvedProvider, request: ChatRequest): WireObject {
  const model = upstreamModelName(resolved.spec.modelName, request.model);
  const { instructions, input } = toResponsesInput(request.messages);
  const effort = normalizeEffort(request.reasoningEffort);
  // The ChatGPT Codex backend takes a narrower body: no token cap or temperature, instructions always present.
  const codex = resolved.spec.name === 'openai_codex';
  const body: WireObject = { model, input, store: false, stream: true };
  if (instructions || codex) body.instructions = instructions;
  if (codex) {
    body.parallel_tool_calls = true;
    body.prompt_cache_key = promptCacheKey(instructions, input[0]);
    // Opt in to visible reasoning summaries, as the Codex CLI does.
    body.reasoning = effort ? { effort, summary: 'auto' } : { summary: 'auto' };
  } else {
    body.max_output_tokens = Math.max(1, request.maxTokens);
    if (request.temperature !== undefined && acceptsTemperature(model, effort, resolved.spec.quirks)) {
      body.temperature = request.temperature;
    }
    if (effort && effort !== 'none') body.reasoning = { effort };
  }
  if (request.tools?.length) {
    body.tools = request.tools.map(({ function: fn }) => ({
      type: 'function',
      name: fn.name,
      description: fn.description,
      parameters: fn.parameters,
    }));
  }
  if (request.tools?.length || codex) body.tool_choice = request.toolChoice ?? 'auto';
  return mergeExtraBody(body, resolved.settings.extraBody ?? {});
}

/** Same system prompt and first message, same key: the backend routes the conversation to its warm cache. */
function promptCacheKey(instructions: string, first: WireObject | undefined): string {
  return createHash('sha256')
    .update(`${instructions}\u0000${JSON.stringify(first ?? null)}`)
    .digest('hex')
    .slice(0, 32);
}

/** extraBody merges in, except that its `tools` (hosted tools such as web_search) add to ours and `include` unions. */
function mergeExtraBody(body: WireObject, extra: WireObject): WireObject {
  const { tools, include, ...rest } = extra;
  const merged = deepMerge(body, rest);
  if (Array.isArray(tools)) merged.tools = [...(Array.isArray(body.tools) ? body.tools : []), ...tools];
  if (Array.isArray(include))
    merged.include = [...new Set([...(Array.isArray(body.include) ? body.include : []), ...include])];
  return merged;
}

export function toResponsesInput(messages: readonly ChatMessage[]): { instructions: string; input: WireObject[] } {
  const system: string[] = [];
  const input: WireObject[] = [];
  for (const message of messages) {
    if (message.role === 'system') {
      const text = plainText(message.content);
      if (text.trim()) system.push(text);
    } else if (message.role === 'user') {
      input.push({ role: 'user', content: inputParts(message.content) });
    } else if (message.role === 'assistant') {
      const text = plainText(message.content);
      // No item ids: with store:false there is nothing stored for them to refer to.
      if (text.trim()) input.push({ type: 'message', role: 'assistant', content: [{ type: 'output_text', text }] });
      for (const call of message.tool_calls ?? []) {
        input.push({
          type: 'function_call',
          call_id: call.id,
          name: call.function.name,
          arguments: call.function.arguments || '{}',
        });
      }
    } else {
      input.push({ type: 'function_call_output', call_id: message.tool_call_id ?? '', output: toolOutput(message) });
    }
  }
  return { instructions: system.join('\n\n'), input };
}

function inputParts(content: ChatMessage['content']): WireObject[] {
  if (content === null || content === '') return [{ type: 'input_text', text: '(empty)' }];
  if (typeof content === 'string') return [{ type: 'input_text', text: content }];
  const parts = content.map((part: ContentPart) =>
    part.type === 'text'
      ? { type: 'input_text', text: part.text }
      : { type: 'input_image', image_url: part.image_url.url, detail: 'auto' },
  );
  return parts.length ? parts : [{ type: 'input_text', text: '(empty)' }];
}

/** Text results stay a string; results with images use the item list form. */
function toolOutput(message: ChatMessage): string | WireObject[] {
  const { content } = message;
  if (content === null || typeof content === 'string') return content || '(empty)';
  if (content.every((part) => part.type === 'text')) return plainText(content) || '(empty)';
  return inputParts(content);
}

function plainText(content: ChatMessage['content']): string {
  if (content === null) return '';
  if (typeof content === 'string') return content;
  return content.map((part) => (part.type === 'text' ? part.text : '')).join('');
}

export async function streamResponses(
  client: OpenAI,
  resolved: ResolvedProvider,
  request: ChatRequest,
  emit: (event: StreamEvent) => void,
  watch: WireWatch,
): Promise<LLMResponse> {
  const accumulator = new ResponsesAccumulator(emit);
  try {
    // extraBody may add fields the SDK's types do not know; the body is otherwise a standard streaming request.
    const body = buildResponsesBody(resolved, request) as unknown as OpenAI.Responses.ResponseCreateParamsStreaming;
    const events = await client.responses.create(body, { signal: request.signal });
    for await (const event of watch(events)) {
      const failure = accumulator.add(event as unknown as WireObject);
      if (failure) return accumulator.fail(failure);
    }
  } catch (error) {
    return accumulator.fail(toProviderError(error, request.signal));
  }
  return accumulator.finish();
}

/**
 * A Responses-API refusal that means "this endpoint does not do Responses" (gateways, older servers), as opposed to
 * a real error about the request: the auto mode then falls back to chat completions (nanobot's markers).
 */
export function isResponsesCompatibilityError(error: ProviderError | undefined): boolean {
  if (!error || (error.status !== 400 && error.status !== 404 && error.status !== 422)) return false;
  return /responses|response api|max_output_tokens|instructions|previous_response|unsupported|not supported|unknown parameter|unrecognized request argument|not found/i.test(
    error.message,
  );
}

interface PendingCall {
  callId: string;
  name: string;
  arguments: string;
  done: boolean;
}

class ResponsesAccumulator {
  private text = '';
  private reasoning = '';
  private lastSummaryKey: string | undefined;
  private refused = false;
  /** Function calls by output item id, in output order. */
  private readonly calls = new Map<string, PendingCall>();
  private status: string | undefined;
  private incompleteReason: string | undefined;
  private usage: Usage | undefined;

  constructor(private readonly emit: (event: StreamEvent) => void) {}

  /** Folds one event; returns an error when the event reports the response failed. */
  add(event: WireObject): ProviderError | undefined {
    switch (event.type) {
      case 'response.output_item.added':
        this.startItem(record(event.item), event.output_index);
        break;
      case 'response.output_text.delta':
        this.addText(text(event.delta));
        break;
      case 'response.refusal.delta':
        this.refused = true;
        this.addText(text(event.delta));
        break;
      case 'response.reasoning_summary_text.delta':
      case 'response.reasoning_text.delta':
        this.addReasoning(
          text(event.delta),
          `${String(event.item_id)}:${String(event.summary_index ?? event.content_index)}`,
        );
        break;
      case 'response.function_call_arguments.delta': {
        const call = this.callFor(event);
        if (call && !call.done) call.arguments += text(event.delta);
        break;
      }
      case 'response.function_call_arguments.done': {
        const call = this.callFor(event);
        if (call && typeof event.arguments === 'string') call.arguments = event.arguments;
        break;
      }
      case 'response.output_item.done':
        this.finishItem(record(event.item));
        break;
      case 'response.completed':
      case 'response.incomplete':
        this.complete(record(event.response), event.type);
        break;
      case 'response.failed':
        return failure(record(record(event.response).error));
      case 'error':
        return failure(event);
      default:
        break;
    }
    return undefined;
  }

  finish(): LLMResponse {
    if (!this.status) {
      return this.fail({
        kind: 'network',
        message: 'The response stream ended before the provider finished it.',
        retryable: true,
      });
    }
    const toolCalls: ToolCall[] = [...this.calls.values()]
      .filter((call) => call.name)
      .map((call) => ({
        id: call.callId,
        type: 'function' as const,
        function: { name: call.name, arguments: call.arguments.trim() || '{}' },
      }));
    let finishReason: FinishReason = toolCalls.length ? 'tool_calls' : 'stop';
    if (this.refused || this.incompleteReason === 'content_filter') finishReason = 'content_filter';
    else if (this.status === 'incomplete') finishReason = 'length';
    return {
      content: this.text || null,
      toolCalls,
      finishReason,
      ...(this.reasoning ? { reasoningContent: this.reasoning } : {}),
      ...(this.usage ? { usage: this.usage } : {}),
    };
  }

  fail(error: ProviderError): LLMResponse {
    return errorResponse(error, {
      content: this.text || null,
      ...(this.reasoning ? { reasoningContent: this.reasoning } : {}),
      ...(this.usage ? { usage: this.usage } : {}),
    });
  }

  private startItem(item: WireObject, outputIndex: unknown): void {
    if (item.type !== 'function_call') return;
    const callId = text(item.call_id) || text(item.id);
    if (!callId) return;
    const key = text(item.id) || `index:${String(outputIndex)}`;
    const call = { callId, name: text(item.name), arguments: text(item.arguments), done: false };
    this.calls.set(key, call);
    if (call.name) this.emit({ type: 'tool-call-start', id: callId, name: call.name });
  }

  private finishItem(item: WireObject): void {
    if (item.type === 'function_call') {
      const key = text(item.id);
      const call = (key ? this.calls.get(key) : undefined) ?? this.findByCallId(text(item.call_id));
      if (call) {
        if (!call.arguments.trim() && typeof item.arguments === 'string') call.arguments = item.arguments;
        call.done = true;
      } else {
        // A server that skipped output_item.added: the finished item is the whole call.
        this.startItem(item, undefined);
      }
    } else if (item.type === 'reasoning' && !this.reasoning) {
      // Summaries that were not streamed as deltas arrive whole here.
      for (const part of list(item.summary)) this.addReasoning(text(part.text), undefined);
    }
  }

  private complete(response: WireObject, eventType: string): void {
    this.status = text(response.status) || eventType.replace('response.', '');
    this.incompleteReason = text(record(response.incomplete_details).reason) || undefined;
    const usage = record(response.usage);
    if (Object.keys(usage).length) {
      const cached = number(record(usage.input_tokens_details).cached_tokens);
      const reasoningTokens = number(record(usage.output_tokens_details).reasoning_tokens);
      this.usage = {
        promptTokens: number(usage.input_tokens),
        completionTokens: number(usage.output_tokens),
        ...(cached > 0 ? { cachedTokens: cached } : {}),
        ...(reasoningTokens > 0 ? { reasoningTokens } : {}),
      };
    }
    if (!this.text) {
      // A server that sent no deltas still lists the output in the final response.
      for (const item of list(response.output)) {
        if (item.type !== 'message') continue;
        for (const part of list(item.content)) if (part.type === 'output_text') this.addText(text(part.text));
      }
    }
  }

  private callFor(event: WireObject): PendingCall | undefined {
    return (
      this.calls.get(text(event.item_id)) ??
      this.calls.get(`index:${String(event.output_index)}`) ??
      this.findByCallId(text(event.call_id))
    );
  }

  private findByCallId(callId: string): PendingCall | undefined {
    if (!callId) return undefined;
    return [...this.calls.values()].find((call) => call.callId === callId);
  }

  private addText(delta: string): void {
    if (!delta) return;
    this.text += delta;
    this.emit({ type: 'text-delta', text: delta });
  }

  /** Summary parts are separate paragraphs; the provider does not always say so with whitespace. */
  private addReasoning(delta: string, partKey: string | undefined): void {
    if (!delta) return;
    let piece = delta;
    const newPart = partKey === undefined || partKey !== this.lastSummaryKey;
    if (newPart && this.reasoning && !/\s$/.test(this.reasoning) && !/^\s/.test(piece)) piece = `\n\n${piece}`;
    this.lastSummaryKey = partKey;
    this.reasoning += piece;
    this.emit({ type: 'reasoning-delta', text: piece });
  }
}

function failure(error: WireObject): ProviderError {
  const code = text(error.code);
  const message = text(error.message) || 'The response failed.';
  // Classified by its words, like any in-stream error (rate_limit_exceeded, server_error, context_length_exceeded…).
  return toProviderError(new Error(code ? `${code}: ${message}` : message));
}

function record(value: unknown): WireObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as WireObject) : {};
}

function list(value: unknown): WireObject[] {
  return Array.isArray(value) ? value.map(record) : [];
}

function text(value: unknown): string {
  return typeof value === 'string' ? value : '';
}

function number(value: unknown): number {
  return typeof value === 'number' ? value : 0;
}
