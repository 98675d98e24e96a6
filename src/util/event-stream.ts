/**
 * A push-based async iterable with a final result: the one streaming primitive.
 * Producers `push` events and `end` with a result; consumers may iterate, or just await `result()`.
 * Events are buffered, so a consumer that never iterates does not block the producer.
 */
export class EventStream<E, R> implements AsyncIterable<E> {
  private readonly queue: E[] = [];
  private waiting: ((r: IteratorResult<E>) => void) | undefined;
  private done = false;
  private readonly final: Promise<R>;
  private resolveFinal!: (r: R) => void;

  constructor() {
    this.final = new Promise<R>((resolve) => {
      this.resolveFinal = resolve;
    });
  }

  push(event: E): void {
    if (this.done) return;
    const waiter = this.waiting;
    if (waiter) {
      this.waiting = undefined;
      waiter({ value: event, done: false });
    } else {
      this.queue.push(event);
    }
  }

  end(result: R): void {
    if (this.done) return;
    this.done = true;
    this.resolveFinal(result);
    const waiter = this.waiting;
    this.waiting = undefined;
    waiter?.({ value: undefined, done: true });
  }

  result(): Promise<R> {
    return this.final;
  }

  [Symbol.asyncIterator](): AsyncIterator<E> {
    return {
      next: () => {
        const next = this.queue.shift();
        if (next !== undefined) return Promise.resolve({ value: next, done: false });
        if (this.done) return Promise.resolve({ value: undefined, done: true });
        return new Promise((resolve) => {
          this.waiting = resolve;
        });
      },
    };
  }

  /** Runs `producer` and ends the stream with its result; a thrown error is mapped by `onError`. */
  static from<E, R>(
    producer: (stream: EventStream<E, R>) => Promise<R>,
    onError: (error: unknown) => R,
  ): EventStream<E, R> {
    const stream = new EventStream<E, R>();
    producer(stream).then(
      (r) => stream.end(r),
      (e: unknown) => stream.end(onError(e)),
    );
    return stream;
  }
}
