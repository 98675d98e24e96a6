/**
 * Failover across models (`agents.defaults.fallbackModels`) with a circuit breaker per model.
 *
 * A request goes to the first model whose breaker is closed; on a failure that another model could avoid (rate
 * limit, overload, timeout, network, quota, auth) the next one is tried, in order. Never after output has streamed
 * to the user: a second model would repeat or contradict what is already on screen. A context overflow or a bad
 * request is returned as it is, for the caller to handle (compaction, a fix): another model would only hide it.
 *
 * Each model's adapter has already retried transient errors (retry.ts) before its failure reaches this layer.
 */
import { EventStream } from '../util/event-stream.js';
import { type Logger, silentLogger } from '../util/log.js';
import { toProviderError } from './errors.js';
import { errorResponse } from './retry.js';
import type { ChatRequest, LLMProvider, LLMResponse, ProviderError, ProviderErrorKind, StreamEvent } from './types.js';

/** Failures another model may not have. */
const FAILOVER_KINDS: ReadonlySet<ProviderErrorKind> = new Set([
  'rate_limit',
  'server',
  'timeout',
  'network',
  'quota',
  'auth',
]);
/** Failures that will not fix themselves in a minute: the breaker opens at once, for the long cool-down. */
const LASTING_KINDS: ReadonlySet<ProviderErrorKind> = new Set(['quota', 'auth']);
/** Events that put something in front of the user; after one of them the model must not change. */
const VISIBLE_EVENTS: ReadonlySet<StreamEvent['type']> = new Set(['text-delta', 'reasoning-delta', 'tool-call-start']);

export interface BreakerOptions {
  /** Consecutive failures that open a model's breaker. */
  threshold?: number;
  /** How long an open breaker skips the model. */
  cooldownMs?: number;
  /** The cool-down after a quota or auth failure. */
  lastingCooldownMs?: number;
  now?: () => number;
}

interface BreakerState {
  failures: number;
  openUntil: number;
}

/** One breaker per model key, shared by every runner of an agent (a preset and a fallback may be the same model). */
export class CircuitBreakers {
  readonly threshold: number;
  readonly cooldownMs: number;
  readonly lastingCooldownMs: number;
  private readonly now: () => number;
  private readonly states = new Map<string, BreakerState>();

  constructor(options: BreakerOptions = {}) {
    this.threshold = options.threshold ?? 3;
    this.cooldownMs = options.cooldownMs ?? 60_000;
    this.lastingCooldownMs = options.lastingCooldownMs ?? 600_000;
    this.now = options.now ?? Date.now;
  }

  /** True while the model is being skipped. After the cool-down one request may try it again (half-open). */
  isOpen(key: string): boolean {
    const state = this.states.get(key);
    return state !== undefined && this.now() < state.openUntil;
  }

  recordSuccess(key: string): void {
    this.states.delete(key);
  }

  recordFailure(key: string, kind: ProviderErrorKind): void {
    const state = this.states.get(key) ?? { failures: 0, openUntil: 0 };
    state.failures++;
    if (LASTING_KINDS.has(kind)) state.openUntil = this.now() + this.lastingCooldownMs;
    else if (state.failures >= this.threshold) state.openUntil = this.now() + this.cooldownMs;
    this.states.set(key, state);
  }

  /** Consecutive failures so far (for `nanobot doctor` and tests). */
  failures(key: string): number {
    return this.states.get(key)?.failures ?? 0;
  }
}

/** One model the failover provider may use. */
export interface FailoverCandidate {
  /** Breaker key and the name in logs and messages, e.g. "openrouter/anthropic/claude-sonnet-4". */
  label: string;
  provider: LLMProvider;
  /** The model name for this candidate's requests. */
  model: string;
  /** Request settings of this candidate (a fallback preset may have its own limits). */
  maxTokens?: number;
  temperature?: number;
  reasoningEffort?: string | null;
}

export interface FailoverOptions {
  /** The primary model first, then the fallbacks in order. */
  candidates: readonly FailoverCandidate[];
  breakers: CircuitBreakers;
  log?: Logger;
}

export function createFailoverProvider(options: FailoverOptions): LLMProvider {
  const { candidates, breakers } = options;
  const log = options.log ?? silentLogger;
  const first = candidates[0];
  if (!first) throw new Error('createFailoverProvider needs at least one candidate');
  return {
    name: first.provider.name,
    stream(request: ChatRequest) {
      return EventStream.from<StreamEvent, LLMResponse>(
        async (stream) => {
          const closed = candidates.filter((c) => !breakers.isOpen(c.label));
          // Every breaker open: rather than fail without trying, probe the primary.
          const order = closed.length > 0 ? closed : [first];
          const skipped = candidates.filter((c) => !order.includes(c)).map((c) => c.label);
          if (skipped.length > 0) log.debug(`failover: skipping ${skipped.join(', ')} (circuit open)`);
          const failures: { label: string; error: ProviderError }[] = [];
          let firstFailure: LLMResponse | undefined;
          for (const candidate of order) {
            const { response, streamed } = await attempt(candidate, request, stream);
            if (response.finishReason !== 'error') {
              breakers.recordSuccess(candidate.label);
              return response;
            }
            const error = response.error ?? { kind: 'server', message: 'unknown provider error', retryable: false };
            const switchable = FAILOVER_KINDS.has(error.kind);
            if (switchable) breakers.recordFailure(candidate.label, error.kind);
            // This failure ends the chain: it is what the user needs to hear about (e.g. a context overflow).
            if (error.kind === 'aborted' || streamed || !switchable) return mentioning(response, failures);
            failures.push({ label: candidate.label, error });
            firstFailure ??= response;
            const next = order[order.indexOf(candidate) + 1];
            if (next)
              log.warn(`model ${candidate.label} failed (${error.kind}: ${error.message}); trying ${next.label}`);
          }
          // All failed: the first model's error is the one the user configured; the others are mentioned.
          return mentioning(firstFailure ?? errorResponse(noModel()), failures.slice(1));
        },
        (error) => errorResponse(toProviderError(error, request.signal)),
      );
    },
  };
}

async function attempt(
  candidate: FailoverCandidate,
  request: ChatRequest,
  stream: EventStream<StreamEvent, LLMResponse>,
): Promise<{ response: LLMResponse; streamed: boolean }> {
  const inner = candidate.provider.stream({
    ...request,
    model: candidate.model,
    ...(candidate.maxTokens !== undefined ? { maxTokens: candidate.maxTokens } : {}),
    ...(candidate.temperature !== undefined ? { temperature: candidate.temperature } : {}),
    ...(candidate.reasoningEffort !== undefined ? { reasoningEffort: candidate.reasoningEffort } : {}),
  });
  let streamed = false;
  for await (const event of inner) {
    if (VISIBLE_EVENTS.has(event.type)) streamed = true;
    stream.push(event);
  }
  return { response: await inner.result(), streamed };
}

/** Appends the other models' failures to the response's error message: "… [also failed: groq/llama (rate_limit)]". */
function mentioning(response: LLMResponse, others: { label: string; error: ProviderError }[]): LLMResponse {
  if (others.length === 0 || !response.error) return response;
  const list = others.map((f) => `${f.label} (${f.error.kind})`).join(', ');
  return { ...response, error: { ...response.error, message: `${response.error.message} [also failed: ${list}]` } };
}

const noModel = (): ProviderError => ({ kind: 'server', message: 'No model was available.', retryable: false });
