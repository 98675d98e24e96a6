/**
 * Converts our OpenAI-shaped conversation to an Anthropic Messages request: system prompt apart, tool calls as
 * tool_use blocks, tool results as user tool_result blocks, strict user/assistant alternation, prompt-cache
 * breakpoints, and extended thinking sized from the reasoning effort.
 */
import type Anthropic from '@anthropic-ai/sdk';
import { upstreamModelName } from './registry.js';
import type { ResolvedProvider } from './resolve.js';
import type { ChatMessage, ChatRequest, ContentPart, MessageContent, ToolDefinition } from './types.js';

type Block = Anthropic.ContentBlockParam;
type TextBlock = Anthropic.TextBlockParam;
type ImageBlock = Anthropic.ImageBlockParam;
type Turn = { role: 'user' | 'assistant'; content: Block[] };

const EPHEMERAL = { type: 'ephemeral' } as const;
const IMAGE_TYPES = new Set(['image/jpeg', 'image/png', 'image/gif', 'image/webp']);

/**
 * Thinking budgets per effort (nanobot's: low 1 k, medium 4 k, high 8 k and up); Anthropic's floor is 1024.
 * "high" and above grow with max_tokens, always leaving the answer its reserve.
 */
const THINKING_BUDGETS: Readonly<Record<string, number>> = {
  minimal: 1024,
  low: 1024,
  medium: 4096,
  high: 8192,
  xhigh: 16384,
  max: 16384,
};
const GROWING_EFFORTS = new Set(['high', 'xhigh', 'max']);
/** Room kept for the visible answer next to the thinking budget (max_tokens covers both). */
const ANSWER_RESERVE_TOKENS = 4096;
/**
 * Newer Claude families think adaptively (effort in `output_config`) and reject a custom temperature; the SDK
 * already warns that budget thinking is deprecated for claude-opus-4-6. Older families keep budget thinking.
 */
const ADAPTIVE_THINKING_MODELS = /claude-(?:opus|sonnet)-(?:4-[6-9]|[5-9])|claude-(?:fable|mythos)/;
const ADAPTIVE_EFFORTS = new Set(['low', 'medium', 'high', 'xhigh', 'max']);

export function buildMessagesBody(resolved: ResolvedProvider, request: ChatRequest): Record<string, unknown> {
  const { system, messages } = toAnthropicMessages(request.messages);
  const tools = (request.tools ?? []).map(toAnthropicTool);
  addCacheBreakpoints(system, tools, messages);
  const model = upstreamModelName(resolved.spec.modelName, request.model);
  const body: Record<string, unknown> = { model, max_tokens: Math.max(1, request.maxTokens), messages, stream: true };
  if (system.length) body.system = system;
  if (tools.length) body.tools = tools;
  // Tool definitions stay when calls are forbidden: the API requires them once history holds tool_use blocks.
  if (tools.length && request.toolChoice === 'none') body.tool_choice = { type: 'none' };
  const thinking = claudeThinking(model, request.reasoningEffort, request.maxTokens);
  Object.assign(body, thinking.fields);
  body.max_tokens = thinking.maxTokens;
  if (thinking.temperature && request.temperature !== undefined) body.temperature = request.temperature;
  return { ...body, ...resolved.settings.extraBody };
}

/**
 * Claude's thinking request for an effort (shared with Bedrock, which passes the same fields through): adaptive
 * thinking for the newer families, a token budget for the others. Thinking rejects a custom temperature.
 */
export function claudeThinking(
  model: string,
  effort: string | null | undefined,
  maxTokens: number,
): { fields: Record<string, unknown>; maxTokens: number; temperature: boolean } {
  const cap = Math.max(1, maxTokens);
  if (ADAPTIVE_THINKING_MODELS.test(model.toLowerCase())) {
    const level = adaptiveEffort(effort);
    const fields = level ? { thinking: { type: 'adaptive' }, output_config: { effort: level } } : {};
    return { fields, maxTokens: cap, temperature: false };
  }
  const budget = thinkingBudget(effort, cap);
  if (!budget) return { fields: {}, maxTokens: cap, temperature: true };
  return {
    fields: { thinking: { type: 'enabled', budget_tokens: budget } },
    maxTokens: Math.max(cap, budget + ANSWER_RESERVE_TOKENS),
    temperature: false,
  };
}

function adaptiveEffort(effort: string | null | undefined): string | undefined {
  const key = effort?.trim().toLowerCase();
  if (!key || key === 'none' || key === 'off') return undefined;
  if (key === 'minimal') return 'low';
  return ADAPTIVE_EFFORTS.has(key) ? key : 'medium';
}

export function thinkingBudget(effort: string | null | undefined, maxTokens: number): number | undefined {
  const key = effort?.trim().toLowerCase();
  if (!key || key === 'none' || key === 'off') return undefined;
  const floor = THINKING_BUDGETS[key] ?? THINKING_BUDGETS.medium ?? 4096;
  return GROWING_EFFORTS.has(key) ? Math.max(floor, maxTokens - ANSWER_RESERVE_TOKENS) : floor;
}

export function toAnthropicMessages(messages: readonly ChatMessage[]): {
  system: TextBlock[];
  messages: Turn[];
} {
  const system: TextBlock[] = [];
  const turns: Turn[] = [];
  // Anthropic requires strict alternation, so consecutive same-role messages (e.g. several tool results) merge.
  const push = (role: Turn['role'], blocks: Block[]) => {
    if (!blocks.length) return;
    const last = turns.at(-1);
    if (last?.role === role) last.content.push(...blocks);
    else turns.push({ role, content: [...blocks] });
  };
  for (const message of messages) {
    if (message.role === 'system') {
      const text = textOf(message.content);
      if (text.trim()) system.push({ type: 'text', text });
    } else if (message.role === 'user') {
      push('user', userBlocks(message.content));
    } else if (message.role === 'tool') {
      push('user', [toolResultBlock(message)]);
    } else {
      push('assistant', assistantBlocks(message));
    }
  }
  if (turns[0]?.role === 'assistant') turns.unshift({ role: 'user', content: [{ type: 'text', text: '(continued)' }] });
  return { system, messages: turns };
}

function userBlocks(content: MessageContent): Block[] {
  const blocks = contentBlocks(content);
  return blocks.length ? blocks : [{ type: 'text', text: '(empty)' }];
}

function toolResultBlock(message: ChatMessage): Anthropic.ToolResultBlockParam {
  const blocks = contentBlocks(message.content);
  const onlyText = blocks.every((b) => b.type === 'text');
  const content = onlyText
    ? blocks.map((b) => (b as TextBlock).text).join('\n')
    : (blocks as (TextBlock | ImageBlock)[]);
  return {
    type: 'tool_result',
    tool_use_id: message.tool_call_id ?? '',
    content: content.length ? content : '(empty)',
  };
}

/**
 * Replayed thinking blocks go first and unchanged: the API verifies their signatures. An unsigned block (from an
 * Anthropic-compatible server that does not sign) cannot be verified and would fail the request, so it stays out.
 */
function assistantBlocks(message: ChatMessage): Block[] {
  const blocks: Block[] = [];
  for (const thinking of message.thinking_blocks ?? []) {
    if (thinking.type === 'redacted_thinking' || thinking.signature) blocks.push({ ...thinking });
  }
  blocks.push(...contentBlocks(message.content).filter((b) => b.type === 'text'));
  for (const call of message.tool_calls ?? []) {
    blocks.push({
      type: 'tool_use',
      id: call.id,
      name: call.function.name,
      input: parseArguments(call.function.arguments),
    });
  }
  return blocks;
}

function contentBlocks(content: MessageContent): (TextBlock | ImageBlock)[] {
  if (content === null) return [];
  // Anthropic rejects whitespace-only text blocks (400), and a stored one would break every later turn.
  if (typeof content === 'string') return content.trim() ? [{ type: 'text', text: content }] : [];
  return content.flatMap((part: ContentPart): (TextBlock | ImageBlock)[] => {
    if (part.type === 'text') return part.text.trim() ? [{ type: 'text', text: part.text }] : [];
    return [imageBlock(part.image_url.url)];
  });
}

function imageBlock(url: string): TextBlock | ImageBlock {
  const data = /^data:([^;,]+);base64,(.*)$/s.exec(url);
  if (data?.[1] && data[2] !== undefined && IMAGE_TYPES.has(data[1])) {
    const mediaType = data[1] as Anthropic.Base64ImageSource['media_type'];
    return { type: 'image', source: { type: 'base64', media_type: mediaType, data: data[2] } };
  }
  if (/^https?:\/\//i.test(url)) return { type: 'image', source: { type: 'url', url } };
  // Anthropic cannot read it; say so rather than fail the whole request.
  return { type: 'text', text: `[image omitted: unsupported format ${url.slice(0, 40)}]` };
}

function textOf(content: MessageContent): string {
  if (content === null) return '';
  if (typeof content === 'string') return content;
  return content.map((part) => (part.type === 'text' ? part.text : '')).join('');
}

/** Tool arguments are a JSON string on our side and an object on Anthropic's; a malformed string becomes `{}`. */
function parseArguments(json: string): Record<string, unknown> {
  try {
    const value: unknown = JSON.parse(json || '{}');
    return typeof value === 'object' && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : {};
  } catch {
    return {};
  }
}

function toAnthropicTool(tool: ToolDefinition): Anthropic.Tool {
  const { name, description, parameters } = tool.function;
  return { name, description, input_schema: { ...parameters, type: 'object' } };
}

/**
 * Three of the four allowed cache breakpoints: end of the system prompt, end of the tool list, and the end of the
 * conversation before the newest message, so the next request reads everything up to there from the cache.
 */
function addCacheBreakpoints(system: TextBlock[], tools: Anthropic.Tool[], messages: Turn[]): void {
  const lastSystem = system.at(-1);
  if (lastSystem) lastSystem.cache_control = EPHEMERAL;
  const lastTool = tools.at(-1);
  if (lastTool) lastTool.cache_control = EPHEMERAL;
  const previous = messages.at(-2);
  if (!previous) return;
  // Thinking blocks cannot carry cache_control; mark the last block that can.
  for (let i = previous.content.length - 1; i >= 0; i--) {
    const block = previous.content[i];
    if (block && block.type !== 'thinking' && block.type !== 'redacted_thinking') {
      previous.content[i] = { ...block, cache_control: EPHEMERAL } as Block;
      return;
    }
  }
}
