/**
 * Retries a streamed model call on transient failures (nanobot: 1 s / 2 s / 4 s), but only while nothing has reached
 * the user yet: once text or a tool call has streamed, a retry would show it twice, so the error is returned instead.
 * `persistent` mode (agents.defaults.providerRetryMode) keeps going with doubling waits capped at 60 s: rate limits
 * until the turn is aborted, other transient errors until the same one has come back 10 times in a row.
 * Every attempt runs under a watch (stream-watch.ts): a stream that stalls ends as a timeout (retried like any other
 * while nothing has streamed; afterwards returned with the partial text), and an abort ends the attempt at once.
 */
import { EventStream } from '../util/event-stream.js';
import type { Timers } from '../util/timers.js';
import { MAX_RETRY_AFTER_MS, toProviderError } from './errors.js';
import { DEFAULT_STREAM_IDLE_TIMEOUT_MS, stallError, type WireWatch, watchAttempt, wireWatch } from './stream-watch.js';
import type { ChatRequest, LLMProvider, LLMResponse, ProviderError, StreamEvent } from './types.js';

/** Waits `ms`; resolves early (without throwing) when `signal` aborts. Injectable so tests never wait. */
export type SleepFn = (ms: number, signal?: AbortSignal) => Promise<void>;

export type RetryMode = 'standard' | 'persistent';

export interface RetryOptions {
  signal?: AbortSignal;
  sleep?: SleepFn;
  /** Waits before retry 1, 2, 3…; its length is the retry count (standard mode). */
  delaysMs?: readonly number[];
  mode?: RetryMode;
  /** Longest silence of a stream once its response has started (NANOBOT_STREAM_IDLE_TIMEOUT_S); none without it. */
  idleTimeoutMs?: number;
  timers?: Timers;
}

/** What an attempt is given besides `emit`: the signal for its request, and the watch over the chunks it reads. */
export interface AttemptWire {
  signal: AbortSignal;
  watch: WireWatch;
}

/** One attempt: stream events through `emit`, resolve with the response (failures as `finishReason: "error"`). */
export type Attempt = (emit: (event: StreamEvent) => void, wire: AttemptWire) => Promise<LLMResponse>;

export const DEFAULT_RETRY_DELAYS_MS: readonly number[] = [1000, 2000, 4000];
/** Persistent mode: the longest wait between two attempts. */
export const PERSISTENT_MAX_DELAY_MS = 60_000;
/** Persistent mode: a non-rate-limit error that comes back this many times in a row is final. */
export const PERSISTENT_MAX_IDENTICAL = 10;

export const realSleep: SleepFn = (ms, signal) =>
  new Promise<void>((resolve) => {
    if (signal?.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });

export function errorResponse(error: ProviderError, partial?: Partial<LLMResponse>): LLMResponse {
  return { content: null, toolCalls: [], ...partial, finishReason: 'error', error };
}

export const abortedError = (): ProviderError => ({ kind: 'aborted', message: 'Request aborted.', retryable: false });

export async function withRetry(
  stream: EventStream<StreamEvent, LLMResponse>,
  attempt: Attempt,
  options: RetryOptions = {},
): Promise<LLMResponse> {
  const { signal, sleep = realSleep, delaysMs = DEFAULT_RETRY_DELAYS_MS, mode = 'standard' } = options;
  const plan = mode === 'persistent' ? persistentPlan(delaysMs[0] ?? 1000) : standardPlan(delaysMs);
  for (let retry = 0; ; retry++) {
    if (signal?.aborted) return errorResponse(abortedError());
    const { response, streamed } = await watchedAttempt(stream, attempt, options);
    if (response.finishReason !== 'error') return response;
    if (signal?.aborted) return { ...response, error: abortedError() };
    const error = response.error;
    if (!error?.retryable || streamed) return response;
    const plannedDelay = plan(retry, error);
    if (plannedDelay === undefined) return response;

    const delayMs = Math.min(error.retryAfterMs ?? plannedDelay, MAX_RETRY_AFTER_MS);
    stream.push({ type: 'retry-wait', attempt: retry + 1, delayMs, error });
    await sleep(delayMs, signal);
  }
}

/**
 * One attempt under its watch. When the caller aborts or the stream stalls, the attempt is given up on the spot (its
 * late events are dropped) and the response is what reached the user: the text streamed so far, and the error.
 */
async function watchedAttempt(
  stream: EventStream<StreamEvent, LLMResponse>,
  attempt: Attempt,
  options: RetryOptions,
): Promise<{ response: LLMResponse; streamed: boolean }> {
  const watch = watchAttempt({
    ...(options.signal ? { signal: options.signal } : {}),
    ...(options.idleTimeoutMs ? { idleMs: options.idleTimeoutMs } : {}),
    ...(options.timers ? { timers: options.timers } : {}),
  });
  let over = false;
  let streamed = false;
  let text = '';
  let reasoning = '';
  const emit = (event: StreamEvent) => {
    if (over) return;
    watch.touch();
    streamed = true;
    if (event.type === 'text-delta') text += event.text;
    else if (event.type === 'reasoning-delta') reasoning += event.text;
    stream.push(event);
  };
  const soFar = (error: ProviderError) =>
    errorResponse(error, { content: text || null, ...(reasoning ? { reasoningContent: reasoning } : {}) });
  let response: LLMResponse;
  try {
    response = await Promise.race([
      attempt(emit, { signal: watch.signal, watch: wireWatch(watch) }),
      watch.ended.then(() => soFar(abortedError())),
    ]);
  } catch (thrown) {
    response = errorResponse(toProviderError(thrown, options.signal));
  } finally {
    over = true;
    watch.stop();
  }
  if (watch.stalled) response = soFar(stallError(options.idleTimeoutMs ?? 0));
  return { response, streamed };
}

/** The wait before retry number `retry` (0-based) after `error`, or undefined to give up. */
type RetryPlan = (retry: number, error: ProviderError) => number | undefined;

const standardPlan =
  (delaysMs: readonly number[]): RetryPlan =>
  (retry) =>
    delaysMs[retry];

function persistentPlan(firstDelayMs: number): RetryPlan {
  let lastError = '';
  let identical = 0;
  return (retry, error) => {
    const signature = `${error.kind}\u0000${error.message}`;
    identical = signature === lastError ? identical + 1 : 1;
    lastError = signature;
    if (error.kind !== 'rate_limit' && identical >= PERSISTENT_MAX_IDENTICAL) return undefined;
    return Math.min(firstDelayMs * 2 ** Math.min(retry, 16), PERSISTENT_MAX_DELAY_MS);
  };
}

/**
 * An LLMProvider over one SDK client (made on first use) whose single attempts are retried by `withRetry`.
 * Both wire adapters are this shape; they differ only in the client and in how one attempt streams.
 */
export function retryingProvider<Client>(
  name: string,
  options: {
    sleep?: SleepFn;
    retryDelaysMs?: readonly number[];
    retryMode?: RetryMode;
    streamIdleTimeoutMs?: number;
    timers?: Timers;
  },
  makeClient: () => Client,
  streamOnce: (
    client: Client,
    request: ChatRequest,
    emit: (event: StreamEvent) => void,
    watch: WireWatch,
  ) => Promise<LLMResponse>,
): LLMProvider {
  let client: Client | undefined;
  return {
    name,
    stream(request: ChatRequest) {
      return EventStream.from<StreamEvent, LLMResponse>(
        (stream) =>
          withRetry(
            stream,
            async (emit, wire) => {
              client ??= makeClient();
              return streamOnce(client, { ...request, signal: wire.signal }, emit, wire.watch);
            },
            {
              signal: request.signal,
              sleep: options.sleep,
              delaysMs: options.retryDelaysMs,
              ...(options.retryMode ? { mode: options.retryMode } : {}),
              idleTimeoutMs: options.streamIdleTimeoutMs ?? DEFAULT_STREAM_IDLE_TIMEOUT_MS,
              ...(options.timers ? { timers: options.timers } : {}),
            },
          ),
        (error) => errorResponse(toProviderError(error, request.signal)),
      );
    },
  };
}
