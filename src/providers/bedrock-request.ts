/**
 * Converts our OpenAI-shaped conversation to a Bedrock Converse request: system blocks apart, tool calls as `toolUse`
 * blocks, tool results as user `toolResult` blocks, strict user/assistant alternation, signed reasoning replayed as
 * `reasoningContent`, prompt-cache points for Claude, and the reasoning effort passed in
 * `additionalModelRequestFields` in each model family's own terms.
 */
import type {
  ContentBlock,
  ConverseStreamRequest,
  Message,
  SystemContentBlock,
  Tool,
  ToolResultContentBlock,
} from '@aws-sdk/client-bedrock-runtime';
import { claudeThinking } from './anthropic-request.js';
import { deepMerge } from './openai-request.js';
import { normalizeEffort } from './reasoning.js';
import { upstreamModelName } from './registry.js';
import type { ResolvedProvider } from './resolve.js';
import type { ChatMessage, ChatRequest, ContentPart, MessageContent } from './types.js';

type ImageFormat = 'png' | 'jpeg' | 'gif' | 'webp';
/** Bedrock's JSON "document" type; our values are plain JSON already. */
type Document = NonNullable<ConverseStreamRequest['additionalModelRequestFields']>;
const IMAGE_FORMATS: Readonly<Record<string, ImageFormat>> = {
  'image/png': 'png',
  'image/jpeg': 'jpeg',
  'image/jpg': 'jpeg',
  'image/gif': 'gif',
  'image/webp': 'webp',
};
/** Claude families that take Bedrock cache points (older Claude 3 models reject them). */
const CACHING_CLAUDE = /claude-(?:3-7-|3-5-haiku|(?:opus|sonnet|haiku)-[4-9])/;
const CACHE_POINT = { cachePoint: { type: 'default' } } as const;

export function buildConverseRequest(resolved: ResolvedProvider, request: ChatRequest): ConverseStreamRequest {
  const modelId = upstreamModelName(resolved.spec.modelName, request.model);
  const lower = modelId.toLowerCase();
  const { system, messages } = toConverseMessages(request.messages);
  const tools: Tool[] = (request.tools ?? []).map(({ function: fn }) => ({
    toolSpec: {
      name: fn.name,
      description: fn.description,
      inputSchema: { json: { ...fn.parameters, type: 'object' } },
    },
  }));
  if (CACHING_CLAUDE.test(lower)) addCachePoints(system, tools, messages);

  let maxTokens = Math.max(1, request.maxTokens);
  let temperature = request.temperature;
  let additional: Record<string, unknown> | undefined;
  const effort = normalizeEffort(request.reasoningEffort);
  if (lower.includes('claude')) {
    const thinking = claudeThinking(modelId, effort, maxTokens);
    if (Object.keys(thinking.fields).length) additional = thinking.fields;
    maxTokens = thinking.maxTokens;
    if (!thinking.temperature) temperature = undefined;
  } else if (effort && effort !== 'none' && lower.includes('gpt-oss')) {
    additional = { reasoning_effort: effort === 'minimal' ? 'low' : effort };
  }

  const input: ConverseStreamRequest = {
    modelId,
    messages,
    inferenceConfig: { maxTokens, ...(temperature !== undefined ? { temperature } : {}) },
  };
  if (system.length) input.system = system;
  // Bedrock has no "none" tool choice; the definitions must stay whenever history holds toolUse blocks.
  if (tools.length) input.toolConfig = { tools, toolChoice: { auto: {} } };
  if (additional) input.additionalModelRequestFields = additional as Document;
  // The user's extraBody (e.g. guardrailConfig, performanceConfig, more additionalModelRequestFields) wins.
  const extra = resolved.settings.extraBody;
  return extra
    ? (deepMerge(input as unknown as Record<string, unknown>, extra) as unknown as ConverseStreamRequest)
    : input;
}

export function toConverseMessages(messages: readonly ChatMessage[]): {
  system: SystemContentBlock[];
  messages: Message[];
} {
  const system: SystemContentBlock[] = [];
  const turns: Message[] = [];
  // Converse requires strict alternation, so consecutive same-role messages (e.g. several tool results) merge.
  const push = (role: 'user' | 'assistant', blocks: ContentBlock[]) => {
    if (!blocks.length) return;
    const last = turns.at(-1);
    if (last?.role === role) last.content = [...(last.content ?? []), ...blocks];
    else turns.push({ role, content: [...blocks] });
  };
  for (const message of messages) {
    if (message.role === 'system') {
      const text = plainText(message.content);
      if (text.trim()) system.push({ text });
    } else if (message.role === 'user') {
      const blocks = contentBlocks(message.content);
      push('user', blocks.length ? blocks : [{ text: '(empty)' }]);
    } else if (message.role === 'tool') {
      push('user', [toolResultBlock(message)]);
    } else {
      push('assistant', assistantBlocks(message));
    }
  }
  if (turns[0]?.role === 'assistant') turns.unshift({ role: 'user', content: [{ text: '(continued)' }] });
  return { system, messages: turns };
}

/** Signed reasoning goes first and unchanged (Claude verifies it); then text; then the tool calls. */
function assistantBlocks(message: ChatMessage): ContentBlock[] {
  const blocks: ContentBlock[] = [];
  for (const thinking of message.thinking_blocks ?? []) {
    if (thinking.type === 'redacted_thinking') {
      blocks.push({ reasoningContent: { redactedContent: Buffer.from(thinking.data, 'base64') } });
    } else if (thinking.signature) {
      blocks.push({ reasoningContent: { reasoningText: { text: thinking.thinking, signature: thinking.signature } } });
    }
  }
  blocks.push(...contentBlocks(message.content).filter((block) => block.text !== undefined));
  for (const call of message.tool_calls ?? []) {
    blocks.push({
      toolUse: {
        toolUseId: call.id,
        name: call.function.name,
        input: parseArguments(call.function.arguments) as Document,
      },
    });
  }
  return blocks;
}

function toolResultBlock(message: ChatMessage): ContentBlock {
  const content: ToolResultContentBlock[] = contentBlocks(message.content).map((block) =>
    block.image ? { image: block.image } : { text: block.text ?? '' },
  );
  return {
    toolResult: { toolUseId: message.tool_call_id ?? '', content: content.length ? content : [{ text: '(empty)' }] },
  };
}

/** Text and image blocks; Bedrock rejects blank text blocks, so they are left out. */
function contentBlocks(content: MessageContent): (ContentBlock.TextMember | ContentBlock.ImageMember)[] {
  if (content === null) return [];
  if (typeof content === 'string') return content.trim() ? [{ text: content }] : [];
  return content.flatMap((part: ContentPart): (ContentBlock.TextMember | ContentBlock.ImageMember)[] => {
    if (part.type === 'text') return part.text.trim() ? [{ text: part.text }] : [];
    return [imageBlock(part.image_url.url)];
  });
}

function imageBlock(url: string): ContentBlock.TextMember | ContentBlock.ImageMember {
  const data = /^data:([^;,]+);base64,(.*)$/s.exec(url);
  const format = data?.[1] ? IMAGE_FORMATS[data[1].toLowerCase()] : undefined;
  if (format && data?.[2] !== undefined) {
    return { image: { format, source: { bytes: Buffer.from(data[2], 'base64') } } };
  }
  // Converse takes image bytes only; say so rather than fail the whole request.
  return { text: `[image omitted: unsupported format ${url.slice(0, 40)}]` };
}

function plainText(content: MessageContent): string {
  if (content === null) return '';
  if (typeof content === 'string') return content;
  return content.map((part) => (part.type === 'text' ? part.text : '')).join('');
}

/** Tool arguments are a JSON string on our side and a document on Bedrock's; a malformed string becomes `{}`. */
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

/** Three of the four cache points: after the system prompt, after the tools, and after the previous turn. */
function addCachePoints(system: SystemContentBlock[], tools: Tool[], messages: Message[]): void {
  if (system.length) system.push(CACHE_POINT);
  if (tools.length) tools.push(CACHE_POINT);
  const previous = messages.at(-2);
  if (previous?.content?.length) previous.content.push(CACHE_POINT);
}
