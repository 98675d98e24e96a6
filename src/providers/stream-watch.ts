/**
 * The watch over one streamed attempt. NANOBOT_LLM_TIMEOUT_S (the SDKs' own timeout) covers only the wait for the
 * response to start; a stream that stalls after its headers (a half-open connection, a proxy holding the socket)
 * would otherwise wait for ever. The watch ends the attempt when the caller aborts, or when nothing has come from
 * the wire for `idleMs` since the response started (NANOBOT_STREAM_IDLE_TIMEOUT_S, upstream's name and default).
 * At that moment the attempt is over for the caller, whatever the adapter does with its abort: an SDK that ignores
 * it cannot hold the turn, nor its concurrency slot.
 */
import { realTimers, type Timers } from '../util/timers.js';
import type { ProviderError } from './types.js';

/** nanobot's default for NANOBOT_STREAM_IDLE_TIMEOUT_S. */
export const DEFAULT_STREAM_IDLE_TIMEOUT_MS = 90_000;

export interface AttemptWatch {
  /** Aborts when the caller aborts or the stream stalls: the signal of the adapter's request. */
  readonly signal: AbortSignal;
  /** Resolves when the attempt is over for the caller (aborted or stalled). */
  readonly ended: Promise<void>;
  readonly stalled: boolean;
  /** A sign of life from the wire (the response started, a chunk arrived): (re)arms the idle timer. */
  touch(): void;
  /** Clears the timer and the listener on the caller's signal. */
  stop(): void;
}

/** Wraps the chunks an adapter reads from the wire so each one (and the start of the response) counts as life. */
export type WireWatch = <T>(chunks: AsyncIterable<T> | Iterable<T>) => AsyncIterable<T>;

export interface WatchOptions {
  signal?: AbortSignal;
  /** Longest silence once the response has started; no idle limit without it. */
  idleMs?: number;
  timers?: Timers;
}

export function watchAttempt(options: WatchOptions): AttemptWatch {
  const { signal, idleMs, timers = realTimers } = options;
  const controller = new AbortController();
  let end!: () => void;
  const ended = new Promise<void>((resolve) => {
    end = resolve;
  });
  let timer: unknown;
  let stalled = false;
  let stopped = false;
  const onAbort = () => {
    end();
    controller.abort(signal?.reason);
  };
  const stall = () => {
    timer = undefined;
    if (stopped) return;
    stalled = true;
    end();
    controller.abort(new Error(stallError(idleMs ?? 0).message));
  };
  if (signal?.aborted) onAbort();
  else signal?.addEventListener('abort', onAbort, { once: true });
  return {
    signal: controller.signal,
    ended,
    get stalled() {
      return stalled;
    },
    touch() {
      if (stopped || stalled || !idleMs || idleMs <= 0) return;
      if (timer !== undefined) timers.clear(timer);
      timer = timers.set(stall, idleMs);
    },
    stop() {
      stopped = true;
      if (timer !== undefined) timers.clear(timer);
      timer = undefined;
      signal?.removeEventListener('abort', onAbort);
    },
  };
}

export function wireWatch(watch: AttemptWatch): WireWatch {
  return <T>(chunks: AsyncIterable<T> | Iterable<T>) =>
    (async function* () {
      watch.touch();
      for await (const chunk of chunks) {
        watch.touch();
        yield chunk;
      }
    })();
}

/** Retryable while nothing has streamed (retry.ts decides); says what happened and what to set. */
export function stallError(idleMs: number): ProviderError {
  return {
    kind: 'timeout',
    message: `The model's stream stalled for ${seconds(idleMs)} s (nothing arrived from the provider); set NANOBOT_STREAM_IDLE_TIMEOUT_S to wait longer.`,
    retryable: true,
  };
}

export function seconds(ms: number): string {
  return String(Math.round(ms / 100) / 10);
}
