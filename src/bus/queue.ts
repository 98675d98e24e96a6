/** An unbounded async FIFO: `put` never blocks, `take` waits until an item arrives or the signal aborts. */
export class AsyncQueue<T> {
  private readonly items: T[] = [];
  private readonly waiters: ((item: T) => void)[] = [];

  put(item: T): void {
    const waiter = this.waiters.shift();
    if (waiter) waiter(item);
    else this.items.push(item);
  }

  /** Resolves with the next item; rejects with the signal's reason when aborted first. */
  take(signal?: AbortSignal): Promise<T> {
    const next = this.items.shift();
    if (next !== undefined) return Promise.resolve(next);
    return new Promise<T>((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      const waiter = (item: T) => {
        signal?.removeEventListener('abort', onAbort);
        resolve(item);
      };
      const onAbort = () => {
        const at = this.waiters.indexOf(waiter);
        if (at !== -1) this.waiters.splice(at, 1);
        reject(signal?.reason);
      };
      this.waiters.push(waiter);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  get size(): number {
    return this.items.length;
  }
}
