import type { SleepFn } from './retry.js';

/** Seams for the wire adapters: tests inject a fetch or a sleep that does not wait. */
export interface ProviderOptions {
  fetch?: typeof globalThis.fetch;
  sleep?: SleepFn;
  /** Per-request timeout until the response starts (nanobot: NANOBOT_LLM_TIMEOUT_S, 300 s). */
  timeoutMs?: number;
  /** Waits before each retry; defaults to 1 s / 2 s / 4 s. */
  retryDelaysMs?: readonly number[];
}

export const DEFAULT_TIMEOUT_MS = 300_000;
