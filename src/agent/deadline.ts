/**
 * The deadline of one run of a turn (agents.defaults.turnTimeoutS): when it passes, the run's signal aborts with a
 * TurnDeadline reason, so every model call and tool of the run stops, and the runner ends the run with an error that
 * says so, instead of the silence of a plain abort. A stream that trickles for ever, or retries without end, then
 * frees its concurrency slot.
 */
import type { ProviderError } from '../providers/types.js';
import { realTimers, type Timers } from '../util/timers.js';

export class TurnDeadline extends Error {
  readonly error: ProviderError;

  constructor(limitMs: number) {
    const message = `The turn ran longer than ${limitMs / 1000} s and was stopped; set agents.defaults.turnTimeoutS to allow longer (0 = no limit).`;
    super(message);
    this.error = { kind: 'timeout', message, retryable: false };
  }
}

export interface Deadline {
  signal: AbortSignal | undefined;
  clear(): void;
}

/** `signal` plus the deadline `limitMs` from now; no deadline when `limitMs` is 0 or missing. */
export function withDeadline(
  signal: AbortSignal | undefined,
  limitMs: number | undefined,
  timers: Timers = realTimers,
): Deadline {
  if (!limitMs || limitMs <= 0) return { signal, clear: () => undefined };
  const controller = new AbortController();
  const timer = timers.set(() => controller.abort(new TurnDeadline(limitMs)), limitMs);
  return {
    signal: signal ? AbortSignal.any([signal, controller.signal]) : controller.signal,
    clear: () => timers.clear(timer),
  };
}

/** The deadline error, when `signal` aborted because the deadline passed (not because of /stop or a shutdown). */
export function deadlineError(signal: AbortSignal | undefined): ProviderError | undefined {
  return signal?.aborted && signal.reason instanceof TurnDeadline ? signal.reason.error : undefined;
}
