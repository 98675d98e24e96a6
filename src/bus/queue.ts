interface Waiter<T> {
  resolve: (item: T) => void;
  reject: (reason: unknown) => void;
  signal: AbortSignal | undefined;
}

/** An unbounded async FIFO: `put` never blocks, `take` waits until an item arrives or the signal aborts. */
export class AsyncQueue<T> {
  private readonly items: T[] = [];
  private readonly waiters: Waiter<T>[] = [];
  /**
   * Signals this queue listens to. A consumer takes with the same signal again and again (once per message): one
   * abort listener per signal, rather than one added and removed per `take`, keeps a busy bus cheap.
   */
  private readonly watched = new WeakSet<AbortSignal>();

  put(item: T): void {
    const waiter = this.waiters.shift();
    if (waiter) waiter.resolve(item);
    else this.items.push(item);
  }

  /** Resolves with the next item; rejects with the signal's reason when aborted first. */
  take(signal?: AbortSignal): Promise<T> {
    const next = this.items.shift();
    if (next !== undefined) return Promise.resolve(next);
    if (signal?.aborted) return Promise.reject(signal.reason);
    return new Promise<T>((resolve, reject) => {
      this.waiters.push({ resolve, reject, signal });
      if (signal && !this.watched.has(signal)) {
        this.watched.add(signal);
        signal.addEventListener('abort', () => this.abortWaiters(signal), { once: true });
      }
    });
  }

  get size(): number {
    return this.items.length;
  }

  private abortWaiters(signal: AbortSignal): void {
    for (let i = this.waiters.length - 1; i >= 0; i--) {
      const waiter = this.waiters[i];
      if (waiter?.signal !== signal) continue;
      this.waiters.splice(i, 1);
      waiter.reject(signal.reason);
    }
  }
}
