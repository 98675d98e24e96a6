/**
 * The OpenAI wire (official `openai` SDK), used by every provider whose spec says `wire: 'openai'`: chat completions,
 * or the Responses API when `providers.openai.apiType` asks for it (or, on "auto", for OpenAI's reasoning models at
 * api.openai.com, falling back to chat completions where the endpoint does not do Responses).
 * The SDK's own retries are off: `withRetry` retries only while nothing has streamed to the user.
 */
import OpenAI from 'openai';
import type { ChatCompletionCreateParamsStreaming } from 'openai/resources/chat/completions';
import { type CommonClientOptions, makeAzureClient } from './azure.js';
import { toProviderError } from './errors.js';
import { providerFetch } from './http.js';
import { buildChatBody } from './openai-request.js';
import { isResponsesCompatibilityError, streamResponses } from './openai-responses.js';
import { ChunkAccumulator } from './openai-stream.js';
import { DEFAULT_TIMEOUT_MS, type ProviderOptions } from './options.js';
import { normalizeEffort } from './reasoning.js';
import type { ResolvedProvider } from './resolve.js';
import { retryingProvider } from './retry.js';
import type { WireWatch } from './stream-watch.js';
import type { ChatRequest, LLMProvider, LLMResponse, StreamEvent } from './types.js';
import { type WireSettings, wireSettings } from './wire-settings.js';

/** After this many compatibility failures the auto mode stops trying Responses for a while. */
const RESPONSES_FAILURE_LIMIT = 3;
const RESPONSES_RETRY_AFTER_MS = 5 * 60_000;

export function createOpenAICompatProvider(resolved: ResolvedProvider, opts: ProviderOptions = {}): LLMProvider {
  const settings = wireSettings(resolved.settings);
  const responses = new ResponsesChoice(resolved, settings);
  return retryingProvider(
    resolved.name,
    opts,
    () => makeClient(resolved, settings, opts),
    async (client, request, emit, watch) => {
      if (!responses.wanted(request)) return streamChat(client, resolved, request, emit, watch);
      const response = await streamResponses(client, resolved, request, emit, watch);
      if (responses.mayFallBack() && isResponsesCompatibilityError(response.error)) {
        responses.failed(request);
        return streamChat(client, resolved, request, emit, watch);
      }
      if (response.finishReason !== 'error') responses.succeeded(request);
      return response;
    },
  );
}

function makeClient(resolved: ResolvedProvider, settings: WireSettings, opts: ProviderOptions): OpenAI {
  const common: CommonClientOptions = {
    // Explicit values everywhere: the SDK would otherwise read OPENAI_* variables meant for OpenAI itself.
    apiKey: resolved.apiKey ?? 'no-key',
    organization: null,
    project: null,
    maxRetries: 0,
    timeout: opts.timeoutMs ?? DEFAULT_TIMEOUT_MS,
    defaultHeaders: { ...resolved.spec.defaultHeaders, ...resolved.settings.extraHeaders },
    ...(resolved.settings.extraQuery ? { defaultQuery: resolved.settings.extraQuery } : {}),
    fetch: opts.fetch ?? providerFetch,
  };
  if (resolved.spec.quirks?.azure) return makeAzureClient(resolved, settings, common);
  return new OpenAI({ ...common, baseURL: resolved.apiBase });
}

/**
 * Which API serves a request. `responses` and `chat_completions` are obeyed; `auto` (nanobot's rule) uses Responses
 * for a reasoning model or effort on OpenAI itself (backing off after repeated compatibility failures) and on GitHub
 * Copilot (which serves those models through /responses only).
 */
class ResponsesChoice {
  private readonly failures = new Map<string, { count: number; since: number }>();

  constructor(
    private readonly resolved: ResolvedProvider,
    private readonly settings: WireSettings,
  ) {}

  wanted(request: ChatRequest): boolean {
    const { apiType } = this.settings;
    // An explicit "responses" is obeyed for any endpoint (OpenAI, Azure, the Codex backend, a server that has it).
    if (apiType === 'responses') return true;
    if (apiType === 'chat_completions') return false;
    const { name } = this.resolved.spec;
    const openai = name === 'openai' && /^https:\/\/api\.openai\.com(?:\/|$)/i.test(this.resolved.apiBase);
    if (!openai && name !== 'github_copilot') return false;
    const effort = normalizeEffort(request.reasoningEffort);
    const reasoningModel = /gpt-5|(?:^|\/)o[134]/i.test(request.model);
    if (!(effort && effort !== 'none') && !reasoningModel) return false;
    if (name === 'github_copilot') return true;
    const failure = this.failures.get(this.key(request));
    return !failure || failure.count < RESPONSES_FAILURE_LIMIT || Date.now() - failure.since > RESPONSES_RETRY_AFTER_MS;
  }

  /** Copilot has no chat-completions route for these models: its own error says more than a fallback's would. */
  mayFallBack(): boolean {
    return this.settings.apiType === 'auto' && this.resolved.spec.name !== 'github_copilot';
  }

  failed(request: ChatRequest): void {
    const key = this.key(request);
    const previous = this.failures.get(key);
    this.failures.set(key, { count: (previous?.count ?? 0) + 1, since: Date.now() });
  }

  succeeded(request: ChatRequest): void {
    this.failures.delete(this.key(request));
  }

  private key(request: ChatRequest): string {
    return `${request.model.toLowerCase()}:${normalizeEffort(request.reasoningEffort) ?? ''}`;
  }
}

async function streamChat(
  client: OpenAI,
  resolved: ResolvedProvider,
  request: ChatRequest,
  emit: (event: StreamEvent) => void,
  watch: WireWatch,
): Promise<LLMResponse> {
  const accumulator = new ChunkAccumulator(emit, Boolean(resolved.spec.quirks?.reasoningAsContent));
  try {
    // extraBody may add fields the SDK's types do not know; the body is otherwise a standard streaming request.
    const body = buildChatBody(resolved, request) as unknown as ChatCompletionCreateParamsStreaming;
    const chunks = await client.chat.completions.create(body, { signal: request.signal });
    for await (const chunk of watch(chunks)) accumulator.add(chunk);
  } catch (error) {
    return accumulator.fail(toProviderError(error, request.signal));
  }
  return accumulator.finish();
}
