/**
 * The OpenAI chat-completions wire (official `openai` SDK), used by every provider whose spec says `wire: 'openai'`.
 * The SDK's own retries are off: `withRetry` retries only while nothing has streamed to the user.
 */
import { randomUUID } from 'node:crypto';
import OpenAI, { AzureOpenAI } from 'openai';
import type { ChatCompletionChunk, ChatCompletionCreateParamsStreaming } from 'openai/resources/chat/completions';
import { toProviderError } from './errors.js';
import { buildChatBody } from './openai-request.js';
import { DEFAULT_TIMEOUT_MS, type ProviderOptions } from './options.js';
import type { ResolvedProvider } from './resolve.js';
import { errorResponse, retryingProvider } from './retry.js';
import type {
  ChatRequest,
  FinishReason,
  LLMProvider,
  LLMResponse,
  ProviderError,
  StreamEvent,
  ToolCall,
  Usage,
} from './types.js';

/** Azure's GA chat-completions API version (the one nanobot pins). */
const AZURE_API_VERSION = '2024-10-21';

export function createOpenAICompatProvider(resolved: ResolvedProvider, opts: ProviderOptions = {}): LLMProvider {
  return retryingProvider(
    resolved.name,
    opts,
    () => makeClient(resolved, opts),
    (client, request, emit) => streamOnce(client, resolved, request, emit),
  );
}

function makeClient(resolved: ResolvedProvider, opts: ProviderOptions): OpenAI {
  const common = {
    // Explicit values everywhere: the SDK would otherwise read OPENAI_* variables meant for OpenAI itself.
    apiKey: resolved.apiKey ?? 'no-key',
    organization: null,
    project: null,
    maxRetries: 0,
    timeout: opts.timeoutMs ?? DEFAULT_TIMEOUT_MS,
    defaultHeaders: { ...resolved.spec.defaultHeaders, ...resolved.settings.extraHeaders },
    ...(resolved.settings.extraQuery ? { defaultQuery: resolved.settings.extraQuery } : {}),
    ...(opts.fetch ? { fetch: opts.fetch } : {}),
  };
  if (resolved.spec.quirks?.azure) {
    // Azure routes by deployment (= model name): <endpoint>/openai/deployments/<model>/chat/completions.
    const endpoint = resolved.apiBase.replace(/\/+$/, '');
    const baseURL = endpoint.endsWith('/openai') ? endpoint : `${endpoint}/openai`;
    return new AzureOpenAI({ ...common, baseURL, apiVersion: AZURE_API_VERSION });
  }
  return new OpenAI({ ...common, baseURL: resolved.apiBase });
}

async function streamOnce(
  client: OpenAI,
  resolved: ResolvedProvider,
  request: ChatRequest,
  emit: (event: StreamEvent) => void,
): Promise<LLMResponse> {
  const accumulator = new ChunkAccumulator(emit, Boolean(resolved.spec.quirks?.reasoningAsContent));
  try {
    // extraBody may add fields the SDK's types do not know; the body is otherwise a standard streaming request.
    const body = buildChatBody(resolved, request) as unknown as ChatCompletionCreateParamsStreaming;
    const chunks = await client.chat.completions.create(body, { signal: request.signal });
    for await (const chunk of chunks) accumulator.add(chunk);
  } catch (error) {
    return accumulator.fail(toProviderError(error, request.signal));
  }
  return accumulator.finish();
}

interface PendingToolCall {
  id: string;
  name: string;
  arguments: string;
  started: boolean;
}

/** Folds streamed chunks into text, reasoning and index-keyed tool calls, emitting events as they arrive. */
class ChunkAccumulator {
  private text = '';
  private reasoning = '';
  private readonly toolCalls = new Map<number, PendingToolCall>();
  private lastToolKey: number | undefined;
  private finishReason: string | null = null;
  private usage: Usage | undefined;
  private sawChoice = false;

  constructor(
    private readonly emit: (event: StreamEvent) => void,
    private readonly reasoningAsContent: boolean,
  ) {}

  add(chunk: ChatCompletionChunk): void {
    if (chunk.usage) this.usage = readUsage(chunk.usage);
    const choice = chunk.choices[0];
    if (!choice) return;
    this.sawChoice = true;
    const delta = choice.delta as Record<string, unknown> | undefined;
    if (delta) {
      this.addContent(delta.content);
      // DeepSeek/Kimi/Qwen say `reasoning_content`; OpenRouter and vLLM say `reasoning`.
      const reasoning = delta.reasoning_content ?? delta.reasoning;
      if (typeof reasoning === 'string' && reasoning) this.addReasoning(reasoning);
      if (Array.isArray(delta.tool_calls)) for (const call of delta.tool_calls) this.addToolCallDelta(call);
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
    const toolCalls = this.completedToolCalls();
    const content = this.text || (this.reasoningAsContent ? this.reasoning : '');
    return {
      content: content || null,
      toolCalls,
      finishReason: mapFinishReason(this.finishReason, toolCalls.length > 0),
      ...(this.reasoning ? { reasoningContent: this.reasoning } : {}),
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
      if (content) this.addText(content);
      return;
    }
    // Mistral reasoning models stream content as [{type:'thinking', thinking:[…]}, {type:'text', text}].
    if (!Array.isArray(content)) return;
    for (const part of content) {
      if (typeof part !== 'object' || part === null) continue;
      const record = part as Record<string, unknown>;
      if (record.type === 'thinking') this.addReasoning(textOf(record.thinking));
      else if (typeof record.text === 'string' && record.text) this.addText(record.text);
    }
  }

  private addText(text: string): void {
    this.text += text;
    this.emit({ type: 'text-delta', text });
  }

  private addReasoning(text: string): void {
    if (!text) return;
    this.reasoning += text;
    this.emit({ type: 'reasoning-delta', text });
  }

  private addToolCallDelta(raw: unknown): void {
    if (typeof raw !== 'object' || raw === null) return;
    const delta = raw as { index?: unknown; id?: unknown; function?: { name?: unknown; arguments?: unknown } };
    const id = typeof delta.id === 'string' && delta.id ? delta.id : undefined;
    const key = this.toolCallKey(typeof delta.index === 'number' ? delta.index : undefined, id);
    const call = this.toolCalls.get(key) ?? { id: '', name: '', arguments: '', started: false };
    this.toolCalls.set(key, call);
    this.lastToolKey = key;
    if (id && !call.id) call.id = id;
    const name = delta.function?.name;
    if (typeof name === 'string' && name && !call.name) call.name = name;
    const args = delta.function?.arguments;
    if (typeof args === 'string') call.arguments += args;
    if (call.name && !call.started) {
      call.started = true;
      call.id ||= `call_${randomUUID().replace(/-/g, '').slice(0, 24)}`;
      this.emit({ type: 'tool-call-start', id: call.id, name: call.name });
    }
  }

  /** Deltas are keyed by `index`; a few servers omit it, so fall back to the id, then to "the call in progress". */
  private toolCallKey(index: number | undefined, id: string | undefined): number {
    if (index !== undefined) return index;
    if (id) {
      for (const [key, call] of this.toolCalls) if (call.id === id) return key;
      return this.toolCalls.size === 0 ? 0 : Math.max(...this.toolCalls.keys()) + 1;
    }
    return this.lastToolKey ?? 0;
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
      }));
  }
}

function textOf(value: unknown): string {
  if (typeof value === 'string') return value;
  if (!Array.isArray(value)) return '';
  return value
    .map((part) => (typeof part === 'object' && part !== null ? (part as { text?: unknown }).text : undefined))
    .filter((text): text is string => typeof text === 'string')
    .join('');
}

function readUsage(raw: NonNullable<ChatCompletionChunk['usage']>): Usage {
  const extra = raw as unknown as Record<string, unknown>;
  // Cached prompt tokens: OpenAI/Zhipu/Qwen nest them; Moonshot/StepFun put them top-level; DeepSeek names them "hit".
  const cached = [raw.prompt_tokens_details?.cached_tokens, extra.cached_tokens, extra.prompt_cache_hit_tokens].find(
    (value): value is number => typeof value === 'number' && value > 0,
  );
  return {
    promptTokens: raw.prompt_tokens ?? 0,
    completionTokens: raw.completion_tokens ?? 0,
    ...(cached ? { cachedTokens: cached } : {}),
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
