/**
 * The provider contract. Messages use the OpenAI chat shape (also the session line format);
 * adapters convert at the wire. Upstream failures come back as data (`finishReason: "error"`),
 * never as exceptions.
 */
import type { EventStream } from '../util/event-stream.js';

export type TextPart = { type: 'text'; text: string };
export type ImagePart = { type: 'image_url'; image_url: { url: string } };
export type ContentPart = TextPart | ImagePart;
export type MessageContent = string | ContentPart[] | null;

export interface ToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
  /** Vendor data that must travel back with the call unchanged (Gemini: `{ google: { thought_signature } }`). */
  extra_content?: Record<string, unknown>;
}

/** Anthropic extended-thinking blocks; the signature must be replayed unchanged. */
export type ThinkingBlock =
  | { type: 'thinking'; thinking: string; signature: string }
  | { type: 'redacted_thinking'; data: string };

export interface ChatMessage {
  role: 'system' | 'user' | 'assistant' | 'tool';
  content: MessageContent;
  tool_calls?: ToolCall[];
  tool_call_id?: string;
  name?: string;
  reasoning_content?: string;
  thinking_blocks?: ThinkingBlock[];
  /** ISO time the message was recorded; stripped before it goes to a provider. */
  timestamp?: string;
  /**
   * nanobot's record of the runtime-context blocks appended to a user message (session-only, never sent): lets a
   * display remove exactly them. `suffix` for string content, `blocks` for part lists.
   */
  _runtime_context?: RuntimeContextRecord;
}

export interface RuntimeContextRecord {
  version: 1;
  sources: string[];
  suffix?: string;
  blocks?: TextPart[];
}

export interface ToolDefinition {
  type: 'function';
  function: { name: string; description: string; parameters: Record<string, unknown> };
}

export type ProviderErrorKind =
  | 'rate_limit'
  | 'timeout'
  | 'network'
  | 'auth'
  | 'quota'
  | 'context_overflow'
  | 'bad_request'
  | 'server'
  | 'aborted';

export interface ProviderError {
  kind: ProviderErrorKind;
  message: string;
  status?: number;
  retryable: boolean;
  /** Server-requested wait (Retry-After), when it sent one. */
  retryAfterMs?: number;
}

export type FinishReason = 'stop' | 'tool_calls' | 'length' | 'content_filter' | 'error';

export interface Usage {
  promptTokens: number;
  completionTokens: number;
  /** Prompt tokens served from the provider's prompt cache. */
  cachedTokens?: number;
  /** Prompt tokens written to the cache (Anthropic). */
  cacheWriteTokens?: number;
  /** Completion tokens spent on reasoning (already counted in `completionTokens`). */
  reasoningTokens?: number;
  /** USD, when `agents.defaults.modelPrices` has a price for the model that answered. */
  costUsd?: number;
}

export interface LLMResponse {
  content: string | null;
  toolCalls: ToolCall[];
  finishReason: FinishReason;
  reasoningContent?: string;
  thinkingBlocks?: ThinkingBlock[];
  usage?: Usage;
  error?: ProviderError;
}

export interface ChatRequest {
  model: string;
  messages: ChatMessage[];
  tools?: ToolDefinition[];
  maxTokens: number;
  temperature?: number;
  reasoningEffort?: string | null;
  /** `none` keeps the tool definitions (some APIs require them when history has tool calls) but forbids calls. */
  toolChoice?: 'auto' | 'none';
  signal?: AbortSignal;
}

export type StreamEvent =
  | { type: 'text-delta'; text: string }
  | { type: 'reasoning-delta'; text: string }
  | { type: 'tool-call-start'; id: string; name: string }
  | { type: 'retry-wait'; attempt: number; delayMs: number; error: ProviderError };

export type ResponseStream = EventStream<StreamEvent, LLMResponse>;

export interface LLMProvider {
  /** Registry name of the provider (e.g. "anthropic", "openrouter", or a custom name). */
  readonly name: string;
  /** Streams one model response. Never rejects: failures end with `finishReason: "error"`. */
  stream(request: ChatRequest): ResponseStream;
}
