/** The service's view of time, injectable so tests can jump days ahead without waiting. */
export interface CronClock {
  now(): number;
  /** Calls `fn` after `ms`. Must not keep the process alive (the gateway decides when to exit). */
  setTimer(fn: () => void, ms: number): unknown;
  clearTimer(handle: unknown): void;
}

/** setTimeout's delay is a signed 32-bit int; longer sleeps are split. */
export const MAX_TIMER_MS = 2_147_483_647;

export const systemClock: CronClock = {
  now: () => Date.now(),
  setTimer: (fn, ms) => setTimeout(fn, Math.min(Math.max(0, ms), MAX_TIMER_MS)).unref(),
  clearTimer: (handle) => clearTimeout(handle as NodeJS.Timeout),
};
