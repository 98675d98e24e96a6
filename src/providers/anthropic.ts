/**
 * The Anthropic Messages wire (official `@anthropic-ai/sdk`), for anthropic, kimi_coding and minimax_anthropic.
 * Raw stream events are folded here so text, thinking (with signatures) and tool_use surface as they arrive.
 */
import Anthropic from '@anthropic-ai/sdk';
import { buildMessagesBody } from './anthropic-request.js';
import { toProviderError } from './errors.js';
import { providerFetch } from './http.js';
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
  ThinkingBlock,
  ToolCall,
  Usage,
} from './types.js';

export function createAnthropicProvider(resolved: ResolvedProvider, opts: ProviderOptions = {}): LLMProvider {
  return retryingProvider(
    resolved.name,
    opts,
    () => makeClient(resolved, opts),
    (client, request, emit) => streamOnce(client, resolved, request, emit),
  );
}

/** The SDK appends /v1/messages itself; users often paste a base that already ends in /v1. */
export function anthropicBaseURL(apiBase: string): string {
  return apiBase.replace(/\/+$/, '').replace(/\/v1$/, '');
}

function makeClient(resolved: ResolvedProvider, opts: ProviderOptions): Anthropic {
  const apiKey = resolved.apiKey ?? 'no-key';
  return new Anthropic({
    // A key passed in code keeps the SDK from reading ANTHROPIC_* variables or credential profiles on disk.
    apiKey,
    baseURL: anthropicBaseURL(resolved.apiBase),
    maxRetries: 0,
    timeout: opts.timeoutMs ?? DEFAULT_TIMEOUT_MS,
    // x-api-key is what the Anthropic API and every Anthropic-compatible endpoint accept; the SDK would send Bearer.
    defaultHeaders: {
      authorization: null,
      'x-api-key': apiKey,
      ...resolved.spec.defaultHeaders,
      ...resolved.settings.extraHeaders,
    },
    ...(resolved.settings.extraQuery ? { defaultQuery: resolved.settings.extraQuery } : {}),
    fetch: opts.fetch ?? providerFetch,
  });
}

async function streamOnce(
  client: Anthropic,
  resolved: ResolvedProvider,
  request: ChatRequest,
  emit: (event: StreamEvent) => void,
): Promise<LLMResponse> {
  const accumulator = new EventAccumulator(emit);
  try {
    // extraBody may add fields the SDK's types do not know; the body is otherwise a standard streaming request.
    const body = buildMessagesBody(resolved, request) as unknown as Anthropic.MessageCreateParamsStreaming;
    const events = await withoutSdkNotices(() => client.messages.create(body, { signal: request.signal }));
    for await (const event of events) accumulator.add(event);
  } catch (error) {
    return accumulator.fail(toProviderError(error, request.signal));
  }
  return accumulator.finish();
}

/** SDK notices printed with console.warn on every request; in a chat UI they would interleave with the answer. */
const SDK_NOTICES = /is deprecated and will reach end-of-life|thinking\.type=enabled' is deprecated/;

function withoutSdkNotices<T>(call: () => T): T {
  const warn = console.warn;
  console.warn = (...args: unknown[]) => {
    if (typeof args[0] === 'string' && SDK_NOTICES.test(args[0])) return;
    warn(...args);
  };
  try {
    // The notices are printed synchronously, before the request is sent.
    return call();
  } finally {
    console.warn = warn;
  }
}

type PendingBlock =
  | { type: 'text'; text: string }
  | { type: 'thinking'; thinking: string; signature: string }
  | { type: 'redacted_thinking'; data: string }
  | { type: 'tool_use'; id: string; name: string; json: string; startInput: unknown };

/** Folds raw Messages stream events into one response, emitting text/reasoning/tool-call events on the way. */
class EventAccumulator {
  private readonly blocks = new Map<number, PendingBlock>();
  private stopReason: string | null = null;
  private finished = false;
  private usage = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 };
  private sawUsage = false;

  constructor(private readonly emit: (event: StreamEvent) => void) {}

  add(event: Anthropic.RawMessageStreamEvent): void {
    switch (event.type) {
      case 'message_start':
        this.readUsage(event.message.usage);
        break;
      case 'content_block_start':
        this.startBlock(event.index, event.content_block);
        break;
      case 'content_block_delta':
        this.applyDelta(event.index, event.delta);
        break;
      case 'message_delta':
        if (event.delta.stop_reason) this.stopReason = event.delta.stop_reason;
        this.readUsage(event.usage);
        break;
      case 'message_stop':
        this.finished = true;
        break;
      default:
        break;
    }
  }

  finish(): LLMResponse {
    if (!this.finished) {
      // A dropped connection can end the stream without message_stop: never pass a cut-off answer as complete.
      const error: ProviderError = this.blocks.size
        ? { kind: 'network', message: 'The response stream ended before the model finished.', retryable: true }
        : { kind: 'server', message: 'The provider returned an empty response.', retryable: true };
      return this.fail(error);
    }
    if (this.stopReason === 'model_context_window_exceeded') {
      // Asking the model to "continue" cannot help: the context itself is full.
      return this.fail({
        kind: 'context_overflow',
        message: 'The conversation no longer fits the model’s context window.',
        retryable: false,
      });
    }
    const { content, toolCalls, thinkingBlocks, reasoning } = this.collect();
    return {
      content,
      toolCalls,
      finishReason: mapStopReason(this.stopReason, toolCalls.length > 0),
      ...(reasoning ? { reasoningContent: reasoning } : {}),
      ...(thinkingBlocks.length ? { thinkingBlocks } : {}),
      ...(this.sawUsage ? { usage: this.totalUsage() } : {}),
    };
  }

  fail(error: ProviderError): LLMResponse {
    const { content, reasoning } = this.collect();
    return errorResponse(error, {
      content,
      ...(reasoning ? { reasoningContent: reasoning } : {}),
      ...(this.sawUsage ? { usage: this.totalUsage() } : {}),
    });
  }

  private startBlock(index: number, block: Anthropic.RawContentBlockStartEvent['content_block']): void {
    if (block.type === 'text') {
      this.blocks.set(index, { type: 'text', text: '' });
      if (block.text) this.appendText(index, block.text);
    } else if (block.type === 'thinking') {
      this.blocks.set(index, { type: 'thinking', thinking: '', signature: block.signature ?? '' });
      if (block.thinking) this.appendThinking(index, block.thinking);
    } else if (block.type === 'redacted_thinking') {
      this.blocks.set(index, { type: 'redacted_thinking', data: block.data });
    } else if (block.type === 'tool_use') {
      this.blocks.set(index, { type: 'tool_use', id: block.id, name: block.name, json: '', startInput: block.input });
      this.emit({ type: 'tool-call-start', id: block.id, name: block.name });
    }
    // Server-side tool blocks (web search…) are not ours to surface.
  }

  private applyDelta(index: number, delta: Anthropic.RawContentBlockDelta): void {
    const block = this.blocks.get(index);
    if (delta.type === 'text_delta') this.appendText(index, delta.text);
    else if (delta.type === 'thinking_delta') this.appendThinking(index, delta.thinking);
    else if (delta.type === 'signature_delta' && block?.type === 'thinking') block.signature += delta.signature;
    else if (delta.type === 'input_json_delta' && block?.type === 'tool_use') block.json += delta.partial_json;
  }

  private appendText(index: number, text: string): void {
    const block = this.blocks.get(index);
    if (block?.type !== 'text' || !text) return;
    block.text += text;
    this.emit({ type: 'text-delta', text });
  }

  private appendThinking(index: number, text: string): void {
    const block = this.blocks.get(index);
    if (block?.type !== 'thinking' || !text) return;
    block.thinking += text;
    this.emit({ type: 'reasoning-delta', text });
  }

  private collect() {
    const ordered = [...this.blocks.entries()].sort(([a], [b]) => a - b).map(([, block]) => block);
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
    return { content: text || null, toolCalls, thinkingBlocks, reasoning };
  }

  /** Fields are cumulative; message_delta repeats or updates what message_start said. */
  private readUsage(raw: object | null | undefined): void {
    if (!raw) return;
    const usage = raw as Record<string, unknown>;
    const read = (key: string) => {
      const value = usage[key];
      return typeof value === 'number' ? value : undefined;
    };
    this.sawUsage = true;
    this.usage = {
      input: read('input_tokens') ?? this.usage.input,
      output: read('output_tokens') ?? this.usage.output,
      cacheRead: read('cache_read_input_tokens') ?? this.usage.cacheRead,
      cacheWrite: read('cache_creation_input_tokens') ?? this.usage.cacheWrite,
    };
  }

  /** Anthropic's input_tokens excludes cached tokens; promptTokens is the whole prompt, as on the OpenAI wire. */
  private totalUsage(): Usage {
    const { input, output, cacheRead, cacheWrite } = this.usage;
    return {
      promptTokens: input + cacheRead + cacheWrite,
      completionTokens: output,
      ...(cacheRead ? { cachedTokens: cacheRead } : {}),
      ...(cacheWrite ? { cacheWriteTokens: cacheWrite } : {}),
    };
  }
}

/** Normalised JSON text of a tool_use input; a fragment that does not parse is passed on for the tool to reject. */
function toolArguments(block: { json: string; startInput: unknown }): string {
  if (!block.json.trim()) return JSON.stringify(block.startInput ?? {});
  try {
    return JSON.stringify(JSON.parse(block.json));
  } catch {
    return block.json;
  }
}

function mapStopReason(reason: string | null, hasToolCalls: boolean): FinishReason {
  switch (reason) {
    case 'tool_use':
      return 'tool_calls';
    case 'max_tokens':
      return 'length';
    case 'refusal':
      return 'content_filter';
    default:
      return hasToolCalls ? 'tool_calls' : 'stop';
  }
}
