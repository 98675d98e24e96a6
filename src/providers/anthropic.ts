/**
 * The Anthropic Messages wire (official `@anthropic-ai/sdk`), for anthropic, kimi_coding and minimax_anthropic.
 * Raw stream events are folded here so text, thinking (with signatures) and tool_use surface as they arrive.
 */
import Anthropic from '@anthropic-ai/sdk';
import { buildMessagesBody } from './anthropic-request.js';
import { toProviderError } from './errors.js';
import { providerFetch } from './http.js';
import { failMessage, finishMessage, type MessageBlocks } from './message-blocks.js';
import { DEFAULT_TIMEOUT_MS, type ProviderOptions } from './options.js';
import type { ResolvedProvider } from './resolve.js';
import { retryingProvider } from './retry.js';
import type { WireWatch } from './stream-watch.js';
import type { ChatRequest, LLMProvider, LLMResponse, ProviderError, StreamEvent, Usage } from './types.js';

export function createAnthropicProvider(resolved: ResolvedProvider, opts: ProviderOptions = {}): LLMProvider {
  return retryingProvider(
    resolved.name,
    opts,
    () => makeClient(resolved, opts),
    (client, request, emit, watch) => streamOnce(client, resolved, request, emit, watch),
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
  watch: WireWatch,
): Promise<LLMResponse> {
  const accumulator = new EventAccumulator(emit);
  try {
    // extraBody may add fields the SDK's types do not know; the body is otherwise a standard streaming request.
    const body = buildMessagesBody(resolved, request) as unknown as Anthropic.MessageCreateParamsStreaming;
    const events = await withoutSdkNotices(() => client.messages.create(body, { signal: request.signal }));
    for await (const event of watch(events)) accumulator.add(event);
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

/** Folds raw Messages stream events into one response, emitting text/reasoning/tool-call events on the way. */
class EventAccumulator {
  private readonly blocks: MessageBlocks = new Map();
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
    // message_stop without a stop_reason still ends the message normally.
    return finishMessage(this.blocks, {
      stopReason: this.finished ? (this.stopReason ?? 'end_turn') : undefined,
      usage: this.sawUsage ? this.totalUsage() : undefined,
    });
  }

  fail(error: ProviderError): LLMResponse {
    return failMessage(this.blocks, error, this.sawUsage ? this.totalUsage() : undefined);
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
