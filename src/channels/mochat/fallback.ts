/**
 * Upstream's fallback when the socket cannot be had: one loop per session (an HTTP long-poll from its cursor) and
 * per panel (a poll of its latest messages). A failed round waits retryDelayMs; a token MoChat refuses, or
 * FAILURES rounds failing in a row, end the loop and report it (the channel then connects again, socket first).
 */
import { MochatApiError } from './api.js';

const FAILURES = 3;

export interface FallbackOptions {
  retryDelayMs: () => number;
  failed(error: Error): void;
}

export class FallbackWorkers {
  private readonly running = new Map<string, Promise<void>>();

  constructor(private readonly options: FallbackOptions) {}

  /** Runs `round` again and again under `key` (once per key) until `signal` ends it. */
  start(key: string, signal: AbortSignal, round: () => Promise<void>): void {
    if (this.running.has(key) || signal.aborted) return;
    const worker = this.loop(signal, round).finally(() => this.running.delete(key));
    this.running.set(key, worker);
  }

  /** Waits for every loop to end (their signal must be aborted first). */
  async settled(): Promise<void> {
    await Promise.allSettled([...this.running.values()]);
    this.running.clear();
  }

  private async loop(signal: AbortSignal, round: () => Promise<void>): Promise<void> {
    let failures = 0;
    while (!signal.aborted) {
      try {
        await round();
        failures = 0;
      } catch (err) {
        if (signal.aborted) return;
        failures += 1;
        if ((err instanceof MochatApiError && err.refused) || failures >= FAILURES) {
          this.options.failed(err instanceof Error ? err : new Error(String(err)));
          return;
        }
        await pause(Math.max(100, this.options.retryDelayMs()), signal);
      }
    }
  }
}

/** Waits `ms`, or less when `signal` ends first. */
export function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}
