/**
 * Polls `check` until it stops throwing (or returns something other than `false`), then returns its value.
 * The bound is a failure guard for a bug (the condition never comes true), not an assertion about speed: it
 * fails with the check's last error so the report says what never happened.
 */
export interface EventuallyOptions {
  /** Give up after this long (default 10 s). */
  timeoutMs?: number;
  /** Pause between tries (default 10 ms). */
  intervalMs?: number;
}

export async function eventually<T>(
  check: () => T | Promise<T>,
  { timeoutMs = 10_000, intervalMs = 10 }: EventuallyOptions = {},
): Promise<Exclude<T, false>> {
  const end = Date.now() + timeoutMs;
  let lastError: unknown = new Error('the condition was never true');
  for (;;) {
    try {
      const value = await check();
      if (value !== false) return value as Exclude<T, false>;
      lastError = new Error('the condition was never true');
    } catch (error) {
      lastError = error;
    }
    if (Date.now() > end) {
      const why = lastError instanceof Error ? lastError.message : String(lastError);
      throw new Error(`eventually: not true within ${timeoutMs} ms: ${why}`, { cause: lastError });
    }
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

/** A promise with its resolver outside: the code under test (or a fake) opens the gate, the test awaits it. */
export function gate<T = void>(): { promise: Promise<T>; open: (value: T) => void } {
  let open!: (value: T) => void;
  const promise = new Promise<T>((resolve) => {
    open = resolve;
  });
  return { promise, open };
}
