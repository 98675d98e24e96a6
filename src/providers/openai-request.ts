/**
 * Builds an OpenAI chat-completions request body from our canonical messages, applying the vendor quirks from the
 * registry. Kept apart from the streaming code so the wire shape can be read (and tested) on its own.
 */
import { createHash } from 'node:crypto';
import { needsMaxCompletionTokens, planReasoning } from './reasoning.js';
import { type ProviderQuirks, upstreamModelName, usesCacheControl } from './registry.js';
import type { ResolvedProvider } from './resolve.js';
import type { ChatMessage, ChatRequest, ContentPart, ToolCall, ToolDefinition } from './types.js';
import { wireSettings } from './wire-settings.js';

type WireObject = Record<string, unknown>;
type WireContent = string | WireObject[] | null;

const EPHEMERAL = { type: 'ephemeral' } as const;
/** Google's documented stand-in for a tool call Gemini did not produce itself (history from another model). */
export const GEMINI_FOREIGN_SIGNATURE = 'skip_thought_signature_validator';

export interface MessageOptions {
  quirks?: ProviderQuirks;
  /** Replay `reasoning_content: ""` where a turn has none (DeepSeek/Kimi thinking mode). */
  backfillReasoning?: boolean;
  /** Gemini 3 rejects a step whose first tool call has no thought signature. */
  geminiSignatures?: boolean;
  /** DeepSeek takes string content only. */
  stringContent?: boolean;
  /** MiniMax M2 wants its earlier thinking back in the text, as `<think>…</think>` (its interleaved thinking). */
  inlineReasoning?: boolean;
}

export function buildChatBody(resolved: ResolvedProvider, request: ChatRequest): WireObject {
  const { spec } = resolved;
  const quirks = spec.quirks ?? {};
  const settings = wireSettings(resolved.settings);
  const model = upstreamModelName(spec.modelName, request.model);
  const reasoning = planReasoning({
    provider: spec.name,
    quirks,
    model,
    effort: request.reasoningEffort,
    ...(settings.thinkingStyle ? { thinkingStyle: settings.thinkingStyle } : {}),
  });
  const messages = toOpenAIMessages(request.messages, {
    quirks,
    backfillReasoning: reasoning.backfillReasoning,
    geminiSignatures: isGeminiEndpoint(resolved),
    stringContent: spec.name === 'deepseek',
    inlineReasoning: spec.name === 'minimax',
  });
  const tools: WireObject[] | undefined = request.tools?.length ? request.tools.map(toWireTool) : undefined;
  if (usesCacheControl(spec, model)) addCacheBreakpoints(messages, tools);

  const body: WireObject = { model, messages, stream: true, stream_options: { include_usage: true } };
  const maxTokensKey =
    quirks.maxCompletionTokens || needsMaxCompletionTokens(model) ? 'max_completion_tokens' : 'max_tokens';
  body[maxTokensKey] = Math.max(1, request.maxTokens);
  if (request.temperature !== undefined && reasoning.temperature) body.temperature = request.temperature;
  Object.assign(body, reasoning.fields);
  if (tools) {
    body.tools = tools;
    body.tool_choice = request.toolChoice ?? 'auto';
    // Z.AI streams tool-call arguments only when asked to.
    if (spec.name === 'zhipu') body.tool_stream = true;
  }
  // The user's extraBody is the escape hatch for anything we do not model; it wins, merged key by key.
  return deepMerge(body, resolved.settings.extraBody ?? {});
}

/** Gemini's OpenAI-compatible endpoint, by name or by URL (a custom provider pointed at it counts too). */
export function isGeminiEndpoint(resolved: ResolvedProvider): boolean {
  return resolved.spec.name === 'gemini' || /generativelanguage\.googleapis\.com/i.test(resolved.apiBase);
}

/**
 * Drops session-only fields (timestamp, thinking_blocks); keeps `reasoning_content`, which DeepSeek/Kimi need back,
 * and a tool call's `extra_content` (Gemini's thought signature), unless the vendor's schema rejects extra fields.
 */
export function toOpenAIMessages(messages: readonly ChatMessage[], options: MessageOptions = {}): WireObject[] {
  const quirks = options.quirks ?? {};
  const mapId = quirks.shortToolCallIds ? shortToolCallId : (id: string) => id;
  const strict = Boolean(quirks.stripReasoningContent);
  const currentTurnStart = messages.findLastIndex((m) => m.role === 'user');
  return messages.map((message, index) => {
    const hasToolCalls = Boolean(message.tool_calls?.length);
    let content = wireContent(message.content, hasToolCalls);
    if (options.inlineReasoning && message.role === 'assistant' && message.reasoning_content?.trim()) {
      const thinking = `<think>\n${message.reasoning_content}\n</think>\n\n`;
      if (content === null || typeof content === 'string') content = thinking + (content ?? '');
    }
    const out: WireObject = { role: message.role, content: options.stringContent ? stringContent(content) : content };
    if (message.name !== undefined) out.name = message.name;
    if (hasToolCalls) {
      const signWith =
        options.geminiSignatures && index > currentTurnStart && !message.tool_calls?.some(hasThoughtSignature)
          ? GEMINI_FOREIGN_SIGNATURE
          : undefined;
      out.tool_calls = message.tool_calls?.map((call, callIndex) => {
        const wire: WireObject = {
          id: mapId(call.id),
          type: 'function',
          function: { name: call.function.name, arguments: call.function.arguments || '{}' },
        };
        if (call.extra_content && !strict) wire.extra_content = call.extra_content;
        else if (signWith && callIndex === 0) wire.extra_content = { google: { thought_signature: signWith } };
        return wire;
      });
    }
    if (message.tool_call_id !== undefined) out.tool_call_id = mapId(message.tool_call_id);
    if (message.role === 'assistant' && !strict) {
      if (message.reasoning_content !== undefined) out.reasoning_content = message.reasoning_content;
      else if (options.backfillReasoning) out.reasoning_content = '';
    }
    return out;
  });
}

function hasThoughtSignature(call: ToolCall): boolean {
  const google = call.extra_content?.google;
  return typeof google === 'object' && google !== null && 'thought_signature' in google;
}

/** Many vendors reject empty content; an assistant turn that only calls tools carries `null`. */
function wireContent(content: ChatMessage['content'], hasToolCalls: boolean): WireContent {
  if (content === null || content === '' || (Array.isArray(content) && content.length === 0)) {
    return hasToolCalls ? null : '(empty)';
  }
  if (typeof content === 'string') return content;
  return content.map((part: ContentPart) => ({ ...part }));
}

/** Flattens content parts for string-only APIs; an image becomes a note rather than a 400. */
function stringContent(content: WireContent): WireContent {
  if (!Array.isArray(content)) return content;
  return content
    .map((part) => (part.type === 'text' && typeof part.text === 'string' ? part.text : '[image omitted]'))
    .join('\n');
}

function toWireTool(tool: ToolDefinition): WireObject {
  return { type: 'function', function: { ...tool.function } };
}

/** Recursive merge: nested objects merge key by key, anything else in `override` replaces. */
export function deepMerge(base: WireObject, override: WireObject): WireObject {
  const merged: WireObject = { ...base };
  for (const [key, value] of Object.entries(override)) {
    const current = merged[key];
    merged[key] = isPlainObject(current) && isPlainObject(value) ? deepMerge(current, value) : value;
  }
  return merged;
}

function isPlainObject(value: unknown): value is WireObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Anthropic-style prompt-cache breakpoints for Claude (or Gemini) behind a gateway: the system prompt,
 * the tool list, and the conversation up to the previous turn (the same three the Anthropic adapter marks).
 */
export function addCacheBreakpoints(messages: WireObject[], tools: WireObject[] | undefined): void {
  const lastSystem = messages.findLastIndex((m) => m.role === 'system');
  if (lastSystem >= 0) markLastBlock(messages, lastSystem);
  if (messages.length >= 3) markLastBlock(messages, messages.length - 2);
  const lastTool = tools?.at(-1);
  if (lastTool) lastTool.cache_control = EPHEMERAL;
}

function markLastBlock(messages: WireObject[], index: number): void {
  const message = messages[index];
  if (!message) return;
  const content = message.content;
  if (typeof content === 'string') {
    messages[index] = { ...message, content: [{ type: 'text', text: content, cache_control: EPHEMERAL }] };
  } else if (Array.isArray(content) && content.length > 0) {
    const blocks = [...(content as WireObject[])];
    blocks[blocks.length - 1] = { ...blocks[blocks.length - 1], cache_control: EPHEMERAL };
    messages[index] = { ...message, content: blocks };
  }
}

/** Mistral accepts only `[a-zA-Z0-9]{9}` ids; hashing keeps a call and its result paired across turns. */
function shortToolCallId(id: string): string {
  if (/^[a-zA-Z0-9]{9}$/.test(id)) return id;
  return createHash('sha1').update(id).digest('hex').slice(0, 9);
}
