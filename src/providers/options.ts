import type { Timers } from '../util/timers.js';
import type { RetryMode, SleepFn } from './retry.js';

/** Seams for the wire adapters: tests inject a fetch, a sleep that does not wait, or timers they fire. */
export interface ProviderOptions {
  fetch?: typeof globalThis.fetch;
  sleep?: SleepFn;
  /** Per-request timeout until the response starts (nanobot: NANOBOT_LLM_TIMEOUT_S, 300 s). */
  timeoutMs?: number;
  /** Longest silence of a stream once its response has started (nanobot: NANOBOT_STREAM_IDLE_TIMEOUT_S, 90 s). */
  streamIdleTimeoutMs?: number;
  /** The idle timer's clock: tests fire it by hand. */
  timers?: Timers;
  /** Waits before each retry; defaults to 1 s / 2 s / 4 s. */
  retryDelaysMs?: readonly number[];
  /** agents.defaults.providerRetryMode: `persistent` keeps retrying rate limits until the turn is aborted. */
  retryMode?: RetryMode;
  /** Where OAuth providers keep their tokens (`~/.nanobot/auth`) and the variables that override their endpoints. */
  oauth?: { authDir: string; env: Record<string, string | undefined> };
}

export const DEFAULT_TIMEOUT_MS = 300_000;
