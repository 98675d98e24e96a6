/**
 * The content blocks of a streamed Anthropic-style message — text, thinking (signed or redacted) and tool_use — and
 * how they become one response. The Anthropic Messages wire and Bedrock's Converse API stream the same blocks under
 * different event names; each adapter folds its events into a `MessageBlocks`, and the response is assembled here.
 */
import { errorResponse } from './retry.js';
import type { FinishReason, LLMResponse, ProviderError, ThinkingBlock, ToolCall, Usage } from './types.js';

export type MessageBlock =
  | { type: 'text'; text: string }
  | { type: 'thinking'; thinking: string; signature: string }
  | { type: 'redacted_thinking'; data: string }
  /** `json` is the streamed input; `startInput` the input given whole at block start (Anthropic), used when none streamed. */
  | { type: 'tool_use'; id: string; name: string; json: string; startInput?: unknown };

/** Blocks by their index in the message. */
export type MessageBlocks = Map<number, MessageBlock>;

/** How the stream ended: `stopReason` is undefined when the wire's stop event never came (a cut connection). */
export interface MessageEnd {
  stopReason: string | undefined;
  usage: Usage | undefined;
}

export function finishMessage(blocks: MessageBlocks, end: MessageEnd): LLMResponse {
  if (end.stopReason === undefined) {
    // A dropped connection can end the stream without its stop event: never pass a cut-off answer as complete.
    const error: ProviderError = blocks.size
      ? { kind: 'network', message: 'The response stream ended before the model finished.', retryable: true }
      : { kind: 'server', message: 'The provider returned an empty response.', retryable: true };
    return failMessage(blocks, error, end.usage);
  }
  if (end.stopReason === 'model_context_window_exceeded') {
    // Asking the model to "continue" cannot help: the context itself is full.
    const error: ProviderError = {
      kind: 'context_overflow',
      message: 'The conversation no longer fits the model’s context window.',
      retryable: false,
    };
    return failMessage(blocks, error, end.usage);
  }
  const { content, toolCalls, thinkingBlocks, reasoning } = collect(blocks);
  return {
    content,
    toolCalls,
    finishReason: mapStopReason(end.stopReason, toolCalls.length > 0),
    ...(reasoning ? { reasoningContent: reasoning } : {}),
    ...(thinkingBlocks.length ? { thinkingBlocks } : {}),
    ...(end.usage ? { usage: end.usage } : {}),
  };
}

/** An error response that keeps what streamed before the failure. */
export function failMessage(blocks: MessageBlocks, error: ProviderError, usage: Usage | undefined): LLMResponse {
  const { content, reasoning } = collect(blocks);
  return errorResponse(error, {
    content,
    ...(reasoning ? { reasoningContent: reasoning } : {}),
    ...(usage ? { usage } : {}),
  });
}

function collect(blocks: MessageBlocks) {
  const ordered = [...blocks.entries()].sort(([a], [b]) => a - b).map(([, block]) => block);
  const text = ordered.map((b) => (b.type === 'text' ? b.text : '')).join('');
  const thinkingBlocks: ThinkingBlock[] = [];
  const toolCalls: ToolCall[] = [];
  for (const block of ordered) {
    if (block.type === 'thinking') {
      thinkingBlocks.push({ type: 'thinking', thinking: block.thinking, signature: block.signature });
    } else if (block.type === 'redacted_thinking') {
      thinkingBlocks.push({ type: 'redacted_thinking', data: block.data });
    } else if (block.type === 'tool_use') {
      toolCalls.push({
        id: block.id,
        type: 'function',
        function: { name: block.name, arguments: toolArguments(block) },
      });
    }
  }
  const reasoning = thinkingBlocks.map((b) => (b.type === 'thinking' ? b.thinking : '')).join('');
  // Unsigned reasoning (DeepSeek R1, gpt-oss on Bedrock) is shown, but there is nothing to replay.
  const replayable = thinkingBlocks.filter((b) => b.type === 'redacted_thinking' || b.signature);
  return { content: text || null, toolCalls, thinkingBlocks: replayable, reasoning };
}

/** Normalised JSON text of a tool_use input; a fragment that does not parse is passed on for the tool to reject. */
function toolArguments(block: { json: string; startInput?: unknown }): string {
  if (!block.json.trim()) return JSON.stringify(block.startInput ?? {});
  try {
    return JSON.stringify(JSON.parse(block.json));
  } catch {
    return block.json;
  }
}

function mapStopReason(reason: string, hasToolCalls: boolean): FinishReason {
  switch (reason) {
    case 'tool_use':
      return 'tool_calls';
    case 'max_tokens':
      return 'length';
    case 'refusal': // Anthropic
    case 'guardrail_intervened': // Bedrock
    case 'content_filtered':
      return 'content_filter';
    default:
      return hasToolCalls ? 'tool_calls' : 'stop';
  }
}
