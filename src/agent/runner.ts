/**
 * AgentRunner: model call → tools → model call …, until the model answers without tools.
 * Every failure has a recovery path, so a turn always ends with something to tell the user:
 * empty replies are retried then finalized without tools, truncated replies are continued, malformed tool calls
 * are dropped, identical repeated calls are refused, and an exhausted budget gets a tools-disabled final answer.
 */
import { DEFAULT_MAX_CALLS_PER_RESPONSE } from '../config/schema.js';
import { addUsage } from '../providers/cost.js';
import type {
  ChatMessage,
  LLMProvider,
  LLMResponse,
  ProviderError,
  StreamEvent,
  ToolCall,
  ToolDefinition,
  Usage,
} from '../providers/types.js';
import type { ToolRegistry } from '../tools/registry.js';
import type { ToolContext, ToolResult } from '../tools/types.js';
import type { Timers } from '../util/timers.js';
import { deadlineError, withDeadline } from './deadline.js';
import { type GovernorMemo, GovernorMemos, prepareForModel } from './governor.js';
import {
  CONTINUE_AFTER_LENGTH,
  callCapNote,
  EMPTY_RESPONSE_RETRY,
  FINALIZE_REQUEST,
  maxIterationsMessage,
  repeatedCallNote,
} from './prompts.js';

const MAX_EMPTY_RETRIES = 2;
const MAX_LENGTH_RECOVERIES = 3;
const MAX_IDENTICAL_CALLS = 3;

export type RunnerEvent =
  | StreamEvent
  | { type: 'tool-start'; call: ToolCall }
  | { type: 'tool-end'; call: ToolCall; result: ToolResult }
  | { type: 'model-request'; iteration: number };

export type StopReason = 'completed' | 'max_iterations' | 'error' | 'aborted';

export interface RunnerSpec {
  provider: LLMProvider;
  model: string;
  maxTokens: number;
  temperature?: number;
  reasoningEffort?: string | null;
  tools: ToolRegistry;
  maxIterations: number;
  /** The model's context window; with it, the request is kept inside `window − maxTokens − tools − 1024`. */
  contextWindowTokens?: number;
  /** Per-result cap on the model-side copy (agents.defaults.maxToolResultChars). */
  maxToolResultChars?: number;
  /** Calls of one response that run (tools.maxCallsPerResponse); each one past it gets an error result instead. */
  maxCallsPerResponse?: number;
  /** agents.defaults.turnTimeoutS in ms: a run still going then is stopped with an error (deadline.ts). */
  turnTimeoutMs?: number;
  /** The deadline's clock: tests fire it by hand. */
  timers?: Timers;
}

export interface RunOptions {
  signal?: AbortSignal;
  toolContext?: Omit<ToolContext, 'signal'>;
  onEvent?: (event: RunnerEvent) => void;
  /**
   * Called with the messages that became final since the last call, in transcript order: a tool round's assistant
   * message before its tools run, then its results in call order, each as soon as it and every earlier call of the
   * round have finished (several at once when they finished meanwhile); injected messages. Each call is awaited
   * before a tool that runs alone starts, so saving here makes every finished side effect durable, and the work
   * stays linear in the number of calls.
   */
  onProgress?: (messages: ChatMessage[]) => Promise<void>;
  /** Messages that arrived for this session while the turn runs; taken between iterations. */
  takeInjections?: () => ChatMessage[];
}

export interface RunResult {
  /** Text for the user. */
  content: string;
  /** Messages this run appended after the input (assistant, tool results, final answer). */
  messages: ChatMessage[];
  stopReason: StopReason;
  usage: Usage;
  error?: ProviderError;
}

export class AgentRunner {
  /** Per conversation, what the governor did for its last request, so the next one only works on new messages. */
  private readonly memos = new GovernorMemos();

  constructor(private readonly spec: RunnerSpec) {}

  async run(input: ChatMessage[], options: RunOptions = {}): Promise<RunResult> {
    const deadline = withDeadline(options.signal, this.spec.turnTimeoutMs, this.spec.timers);
    try {
      return await this.runRounds(input, { ...options, ...(deadline.signal ? { signal: deadline.signal } : {}) });
    } finally {
      deadline.clear();
    }
  }

  private async runRounds(input: ChatMessage[], options: RunOptions): Promise<RunResult> {
    const { spec } = this;
    const added: ChatMessage[] = [];
    const usage: Usage = { promptTokens: 0, completionTokens: 0, cachedTokens: 0 };
    const conversation = () => [...input, ...added];
    let emptyRetries = 0;
    let lengthRecoveries = 0;
    let lastSignature = '';
    let identicalCalls = 0;
    const memo = this.memos.for(input);

    for (let iteration = 1; iteration <= spec.maxIterations; iteration++) {
      if (options.signal?.aborted) return stopped(options.signal, added, usage);
      if (iteration > 1) await this.injectPending(added, options);
      options.onEvent?.({ type: 'model-request', iteration });
      const response = await this.request(conversation(), 'auto', options, usage, memo);
      if (response.finishReason === 'error') return this.failed(response, added, usage);

      const calls = response.toolCalls.filter(isWellFormed);

      if (calls.length > 0) {
        const assistantMessage = assistantWithCalls(response, calls);
        // The same calls with the same arguments, response after response, are refused from the third time on.
        const signature = calls.map(callKey).join('\n');
        identicalCalls = signature === lastSignature ? identicalCalls + 1 : 1;
        lastSignature = signature;
        const refuse = identicalCalls >= MAX_IDENTICAL_CALLS;
        added.push(assistantMessage);
        await options.onProgress?.([assistantMessage]);
        await this.executeTools(calls, options, refuse, added);
        continue;
      }

      const text = response.content?.trim() ?? '';
      if (response.finishReason === 'length' && lengthRecoveries < MAX_LENGTH_RECOVERIES) {
        lengthRecoveries++;
        if (text) added.push(assistantText(response));
        added.push({ role: 'user', content: CONTINUE_AFTER_LENGTH });
        continue;
      }
      if (!text) {
        // Empty reply, or only malformed tool calls: ask again, then force a text answer.
        if (emptyRetries < MAX_EMPTY_RETRIES) {
          emptyRetries++;
          continue;
        }
        return this.finalizeWithoutTools(conversation(), options, usage, added, EMPTY_RESPONSE_RETRY, memo);
      }
      const content = joinContinuations(added, response.content ?? '');
      added.push(assistantText(response));
      return { content: content.trim(), messages: added, stopReason: 'completed', usage };
    }
    return this.finalizeWithoutTools(conversation(), options, usage, added, FINALIZE_REQUEST, memo, true);
  }

  private async request(
    messages: ChatMessage[],
    toolChoice: 'auto' | 'none',
    options: RunOptions,
    usage: Usage,
    memo: GovernorMemo,
  ): Promise<LLMResponse> {
    const { spec } = this;
    const tools = spec.tools.definitions();
    const stream = spec.provider.stream({
      model: spec.model,
      messages: this.governed(messages, tools, memo),
      tools,
      toolChoice,
      maxTokens: spec.maxTokens,
      ...(spec.temperature !== undefined ? { temperature: spec.temperature } : {}),
      ...(spec.reasoningEffort ? { reasoningEffort: spec.reasoningEffort } : {}),
      ...(options.signal ? { signal: options.signal } : {}),
    });
    for await (const event of stream) options.onEvent?.(event);
    const response = await stream.result();
    addUsage(usage, response.usage);
    // Aborted by the deadline: the error says so (and what to set) instead of a silent abort.
    const late = response.finishReason === 'error' ? deadlineError(options.signal) : undefined;
    return late ? { ...response, error: late } : response;
  }

  /** The model-side copy: tool-call pairing repaired, big results cut, and old content cleared or snipped to fit. */
  private governed(messages: ChatMessage[], tools: ToolDefinition[], memo: GovernorMemo): ChatMessage[] {
    const { spec } = this;
    const budgetTokens = spec.contextWindowTokens
      ? spec.contextWindowTokens - spec.maxTokens - 1024 - toolSchemaTokens(tools)
      : undefined;
    return prepareForModel(messages, {
      memo,
      ...(budgetTokens !== undefined ? { budgetTokens: Math.max(budgetTokens, 1024) } : {}),
      ...(spec.maxToolResultChars ? { maxToolResultChars: spec.maxToolResultChars } : {}),
    }).messages;
  }

  /** Appends messages that arrived mid-turn as one user message (keeps role alternation simple for every API). */
  private async injectPending(added: ChatMessage[], options: RunOptions): Promise<void> {
    const injected = options.takeInjections?.() ?? [];
    if (injected.length === 0) return;
    const parts = injected.map((m) => (typeof m.content === 'string' ? m.content : JSON.stringify(m.content)));
    const message: ChatMessage = { role: 'user', content: parts.join('\n\n') };
    added.push(message);
    await options.onProgress?.([message]);
  }

  /**
   * Runs a round's calls and appends their results to `added` in call order, reporting each through `onProgress`
   * once it and every earlier call have finished. Concurrency-safe calls run together; any other call runs alone, in
   * order. Calls past `maxCallsPerResponse` are not run: each gets an error result the model can read.
   */
  private async executeTools(
    calls: ToolCall[],
    options: RunOptions,
    refuse: boolean,
    added: ChatMessage[],
  ): Promise<void> {
    const { tools } = this.spec;
    const ctx: ToolContext = { ...options.toolContext, signal: options.signal ?? new AbortController().signal };
    const max = this.spec.maxCallsPerResponse ?? DEFAULT_MAX_CALLS_PER_RESPONSE;
    const results: (ChatMessage | undefined)[] = calls.map((call, index) =>
      index < max ? undefined : toolMessage(call, { content: callCapNote(max), isError: true }),
    );
    const record = finishedInOrder(results, async (ready) => {
      added.push(...ready);
      await options.onProgress?.(ready);
    });
    const runOne = async (call: ToolCall, index: number): Promise<void> => {
      options.onEvent?.({ type: 'tool-start', call });
      const result: ToolResult = refuse
        ? { content: repeatedCallNote(call.function.name, MAX_IDENTICAL_CALLS), isError: true }
        : await tools.execute(call, ctx);
      options.onEvent?.({ type: 'tool-end', call, result });
      results[index] = toolMessage(call, result);
      await record();
    };
    let batch: Promise<void>[] = [];
    for (const [index, call] of calls.slice(0, max).entries()) {
      if (tools.isConcurrencySafe(call.function.name)) {
        batch.push(runOne(call, index));
        continue;
      }
      await Promise.all(batch);
      batch = [];
      await runOne(call, index);
    }
    await Promise.all(batch);
    await record(); // a round with only capped calls past the last one run (or none) still reports them
  }

  /** One last request with tools forbidden; falls back to a fixed message when even that yields nothing. */
  private async finalizeWithoutTools(
    messages: ChatMessage[],
    options: RunOptions,
    usage: Usage,
    added: ChatMessage[],
    instruction: string,
    memo: GovernorMemo,
    budgetExhausted = false,
  ): Promise<RunResult> {
    if (options.signal?.aborted) return stopped(options.signal, added, usage);
    const prompt: ChatMessage = { role: 'user', content: instruction };
    const response = await this.request([...messages, prompt], 'none', options, usage, memo);
    if (response.finishReason === 'error') return this.failed(response, added, usage);
    const text = response.content?.trim() ?? '';
    const content =
      text ||
      (budgetExhausted
        ? maxIterationsMessage(this.spec.maxIterations)
        : "I couldn't produce an answer this time. Please try again or rephrase the request.");
    added.push(assistant(content));
    return {
      content,
      messages: added,
      stopReason: budgetExhausted ? 'max_iterations' : 'completed',
      usage,
    };
  }

  private failed(response: LLMResponse, added: ChatMessage[], usage: Usage): RunResult {
    const error = response.error ?? { kind: 'server', message: 'unknown provider error', retryable: false };
    // Text that streamed before the failure (a stall, a cut stream) stays: the user saw it, the session keeps it.
    const partial = error.kind === 'aborted' ? '' : (response.content?.trim() ?? '');
    if (partial) added.push(assistantText(response));
    return {
      content: partial,
      messages: added,
      stopReason: error.kind === 'aborted' ? 'aborted' : 'error',
      usage,
      error,
    };
  }
}

const assistant = (content: string): ChatMessage => ({ role: 'assistant', content });

function toolMessage(call: ToolCall, result: ToolResult): ChatMessage {
  return { role: 'tool', tool_call_id: call.id, name: call.function.name, content: result.content };
}

/**
 * Hands the longest finished prefix of `results` to `report`, one report at a time: results that finish while a
 * report is awaited go out together in the next one (a group commit), and each result waits for every earlier one.
 * The returned function resolves once the finished prefix, as far as it reaches when called, has been reported.
 */
function finishedInOrder(
  results: (ChatMessage | undefined)[],
  report: (ready: ChatMessage[]) => Promise<void>,
): () => Promise<void> {
  let next = 0;
  let running: Promise<void> | undefined;
  const drain = async () => {
    for (let ready = take(); ready.length > 0; ready = take()) await report(ready);
  };
  const take = (): ChatMessage[] => {
    const ready: ChatMessage[] = [];
    for (let message = results[next]; message !== undefined; message = results[next]) {
      ready.push(message);
      next++;
    }
    return ready;
  };
  return async () => {
    while (results[next] !== undefined) {
      running ??= drain().finally(() => {
        running = undefined;
      });
      await running;
    }
  };
}

/** Where a run ends when its signal aborted: an error when the deadline passed, else a plain abort. */
function stopped(signal: AbortSignal, added: ChatMessage[], usage: Usage): RunResult {
  const error = deadlineError(signal);
  if (!error) return { content: '', messages: added, stopReason: 'aborted', usage };
  return { content: '', messages: added, stopReason: 'error', usage, error };
}

function assistantText(response: LLMResponse): ChatMessage {
  return withReasoning({ role: 'assistant', content: response.content ?? '' }, response);
}

function assistantWithCalls(response: LLMResponse, calls: ToolCall[]): ChatMessage {
  const content = response.content?.trim() ? response.content : null;
  return withReasoning({ role: 'assistant', content, tool_calls: calls }, response);
}

/** Keeps what providers need replayed: `reasoning_content` (DeepSeek, Kimi) and signed thinking blocks (Anthropic). */
function withReasoning(message: ChatMessage, response: LLMResponse): ChatMessage {
  if (response.reasoningContent !== undefined) message.reasoning_content = response.reasoningContent;
  if (response.thinkingBlocks?.length) message.thinking_blocks = response.thinkingBlocks;
  return message;
}

function isWellFormed(call: ToolCall): boolean {
  if (!call.id || !call.function?.name?.trim()) return false;
  const args = call.function.arguments;
  if (args === '' || args === undefined) return true;
  try {
    const parsed: unknown = JSON.parse(args);
    return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed);
  } catch {
    return false;
  }
}

function callKey(call: ToolCall): string {
  return `${call.function.name}\u0000${canonicalArgs(call.function.arguments)}`;
}

function canonicalArgs(args: string): string {
  try {
    return JSON.stringify(sortKeys(JSON.parse(args || '{}')));
  } catch {
    return args;
  }
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (typeof value !== 'object' || value === null) return value;
  return Object.fromEntries(
    Object.entries(value as Record<string, unknown>)
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([k, v]) => [k, sortKeys(v)]),
  );
}

/** A reply continued after `finish_reason=length` is shown to the user as one text. */
function joinContinuations(added: ChatMessage[], last: string): string {
  const parts = [last];
  let i = added.length - 1;
  while (added[i]?.role === 'user' && added[i]?.content === CONTINUE_AFTER_LENGTH) {
    const partial = added[i - 1];
    if (partial?.role !== 'assistant' || partial.tool_calls || typeof partial.content !== 'string') break;
    parts.unshift(partial.content);
    i -= 2;
  }
  return parts.join('');
}

/** Rough tokens of the tool schemas, by definitions array: the registry keeps one array until its tools change. */
const schemaTokens = new WeakMap<readonly ToolDefinition[], number>();
function toolSchemaTokens(tools: readonly ToolDefinition[]): number {
  let tokens = schemaTokens.get(tools);
  if (tokens === undefined) {
    tokens = Math.ceil(JSON.stringify(tools).length / 4);
    schemaTokens.set(tools, tokens);
  }
  return tokens;
}
