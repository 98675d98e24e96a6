/** One-shot timers, injectable so tests fire them by hand instead of waiting. */
export interface Timers {
  /** Calls `fn` once after `ms`. Must not keep the process alive. */
  set(fn: () => void, ms: number): unknown;
  clear(handle: unknown): void;
}

/** setTimeout's delay is a signed 32-bit int: a longer one would fire at once. */
const MAX_DELAY_MS = 2_147_483_647;

export const realTimers: Timers = {
  set: (fn, ms) => setTimeout(fn, Math.min(Math.max(0, ms), MAX_DELAY_MS)).unref(),
  clear: (handle) => clearTimeout(handle as NodeJS.Timeout),
};
