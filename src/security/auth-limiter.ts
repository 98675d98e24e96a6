/**
 * Failed-authentication limiter, per remote address: after `maxFailures` wrong keys or tokens within `windowMs`,
 * that address is answered 429 (with Retry-After) until the window ends, before any key is compared or any work is
 * done. Memory is bounded: at most `maxTracked` addresses are remembered (expired ones are dropped first, then the
 * oldest). The clock is injected so tests need no sleeps.
 */

export interface AuthLimiterOptions {
  /** Failures allowed per window; the next attempt is refused. Default 10. */
  maxFailures?: number;
  /** Default 60 s. */
  windowMs?: number;
  /** Addresses remembered at once. Default 4096. */
  maxTracked?: number;
  now?: () => number;
}

interface Window {
  startedAt: number;
  failures: number;
}

export class AuthLimiter {
  private readonly windows = new Map<string, Window>();
  private readonly maxFailures: number;
  private readonly windowMs: number;
  private readonly maxTracked: number;
  private readonly now: () => number;

  constructor(options: AuthLimiterOptions = {}) {
    this.maxFailures = options.maxFailures ?? 10;
    this.windowMs = options.windowMs ?? 60_000;
    this.maxTracked = options.maxTracked ?? 4096;
    this.now = options.now ?? Date.now;
  }

  /** Seconds this address must wait before trying again; 0 when it may try now. */
  retryAfterS(address: string | undefined): number {
    const window = this.current(keyOf(address));
    if (!window || window.failures < this.maxFailures) return 0;
    return Math.max(1, Math.ceil((window.startedAt + this.windowMs - this.now()) / 1000));
  }

  /** A wrong or missing key or token from this address. */
  recordFailure(address: string | undefined): void {
    const key = keyOf(address);
    const window = this.current(key);
    if (window) {
      window.failures += 1;
      return;
    }
    if (this.windows.size >= this.maxTracked) this.evict();
    this.windows.set(key, { startedAt: this.now(), failures: 1 });
  }

  /** Addresses remembered now (for tests of the bound). */
  get size(): number {
    return this.windows.size;
  }

  private current(key: string): Window | undefined {
    const window = this.windows.get(key);
    if (window && this.now() - window.startedAt >= this.windowMs) {
      this.windows.delete(key);
      return undefined;
    }
    return window;
  }

  private evict(): void {
    const now = this.now();
    for (const [key, window] of this.windows) {
      if (now - window.startedAt >= this.windowMs) this.windows.delete(key);
    }
    // Still full: forget the oldest (Map keeps insertion order).
    while (this.windows.size >= this.maxTracked) {
      const oldest = this.windows.keys().next().value;
      if (oldest === undefined) break;
      this.windows.delete(oldest);
    }
  }
}

/** `::ffff:1.2.3.4` and `1.2.3.4` are one client. */
function keyOf(address: string | undefined): string {
  if (!address) return '?';
  return address.startsWith('::ffff:') && address.includes('.') ? address.slice('::ffff:'.length) : address;
}
