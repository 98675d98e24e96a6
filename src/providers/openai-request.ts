/**
 * Builds an OpenAI chat-completions request body from our canonical messages, applying the vendor quirks from the
 * registry. Kept apart from the streaming code so the wire shape can be read (and tested) on its own.
 */
import { createHash } from 'node:crypto';
import { type ProviderQuirks, upstreamModelName } from './registry.js';
import type { ResolvedProvider } from './resolve.js';
import type { ChatMessage, ChatRequest, ContentPart, ToolDefinition } from './types.js';

type WireObject = Record<string, unknown>;
type WireContent = string | WireObject[] | null;

const EPHEMERAL = { type: 'ephemeral' } as const;

export function buildChatBody(resolved: ResolvedProvider, request: ChatRequest): WireObject {
  const { spec } = resolved;
  const quirks = spec.quirks ?? {};
  const model = upstreamModelName(spec.modelName, request.model);
  const messages = toOpenAIMessages(request.messages, quirks);
  const tools: WireObject[] | undefined = request.tools?.length ? request.tools.map(toWireTool) : undefined;
  if (spec.supportsPromptCaching && isClaude(model)) addCacheBreakpoints(messages, tools);

  const body: WireObject = { model, messages, stream: true, stream_options: { include_usage: true } };
  body[quirks.maxCompletionTokens ? 'max_completion_tokens' : 'max_tokens'] = Math.max(1, request.maxTokens);

  const requestedEffort = request.reasoningEffort?.trim().toLowerCase() || undefined;
  const effort = wireReasoningEffort(requestedEffort, quirks, model);
  if (request.temperature !== undefined && acceptsTemperature(model, requestedEffort, quirks)) {
    body.temperature = request.temperature;
  }
  if (effort) {
    if (quirks.reasoningParam === 'reasoning_object') body.reasoning = { effort };
    else body.reasoning_effort = effort;
  }
  if (requestedEffort && quirks.thinkingStyle) {
    const enabled = requestedEffort !== 'none';
    if (quirks.thinkingStyle === 'thinking_type') body.thinking = { type: enabled ? 'enabled' : 'disabled' };
    else if (quirks.thinkingStyle === 'enable_thinking') body.enable_thinking = enabled;
    else body.reasoning_split = enabled;
  }
  if (tools) {
    body.tools = tools;
    body.tool_choice = request.toolChoice ?? 'auto';
  }
  // The user's extraBody is the escape hatch for anything we do not model; it wins.
  return { ...body, ...resolved.settings.extraBody };
}

/** Drops session-only fields (timestamp, thinking_blocks); keeps reasoning_content, which DeepSeek/Kimi need back. */
export function toOpenAIMessages(messages: readonly ChatMessage[], quirks: ProviderQuirks = {}): WireObject[] {
  const mapId = quirks.shortToolCallIds ? shortToolCallId : (id: string) => id;
  return messages.map((message) => {
    const hasToolCalls = Boolean(message.tool_calls?.length);
    const out: WireObject = { role: message.role, content: wireContent(message.content, hasToolCalls) };
    if (message.name !== undefined) out.name = message.name;
    if (hasToolCalls) {
      out.tool_calls = message.tool_calls?.map((call) => ({
        id: mapId(call.id),
        type: 'function',
        function: { name: call.function.name, arguments: call.function.arguments || '{}' },
      }));
    }
    if (message.tool_call_id !== undefined) out.tool_call_id = mapId(message.tool_call_id);
    if (message.role === 'assistant' && message.reasoning_content && !quirks.stripReasoningContent) {
      out.reasoning_content = message.reasoning_content;
    }
    return out;
  });
}

/** Many vendors reject empty content; an assistant turn that only calls tools carries `null`. */
function wireContent(content: ChatMessage['content'], hasToolCalls: boolean): WireContent {
  if (content === null || content === '' || (Array.isArray(content) && content.length === 0)) {
    return hasToolCalls ? null : '(empty)';
  }
  if (typeof content === 'string') return content;
  return content.map((part: ContentPart) => ({ ...part }));
}

function toWireTool(tool: ToolDefinition): WireObject {
  return { type: 'function', function: { ...tool.function } };
}

/**
 * Anthropic-style prompt-cache breakpoints for Claude behind an OpenAI-compatible gateway: the system prompt,
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

function isClaude(model: string): boolean {
  const lower = model.toLowerCase();
  return lower.startsWith('anthropic/') || lower.includes('claude');
}

/** OpenAI's reasoning families (o1/o3/o4, gpt-5) reject `temperature`. */
function isOpenAIReasoningModel(model: string): boolean {
  const bare = model.toLowerCase().split('/').pop() ?? '';
  return /^(o\d|gpt-5)/.test(bare);
}

function acceptsTemperature(model: string, effort: string | undefined, quirks: ProviderQuirks): boolean {
  const lower = model.toLowerCase();
  if (quirks.omitTemperatureModels?.some((m) => lower.includes(m))) return false;
  if (effort && effort !== 'none') return false;
  return !isOpenAIReasoningModel(model);
}

function wireReasoningEffort(effort: string | undefined, quirks: ProviderQuirks, model: string): string | undefined {
  if (!effort) return undefined;
  const lower = model.toLowerCase();
  if (quirks.noReasoningEffortModels?.some((m) => lower.includes(m))) return undefined;
  const mapped = quirks.reasoningEffortMap ? quirks.reasoningEffortMap[effort] : effort;
  return mapped || undefined;
}

/** Mistral accepts only `[a-zA-Z0-9]{9}` ids; hashing keeps a call and its result paired across turns. */
function shortToolCallId(id: string): string {
  if (/^[a-zA-Z0-9]{9}$/.test(id)) return id;
  return createHash('sha1').update(id).digest('hex').slice(0, 9);
}
