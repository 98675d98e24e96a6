/**
 * Timers a test fires by hand (src/util/timers.ts): nothing waits on the clock. `fire()` runs every timer that is
 * set and not cleared; `armed()` waits (bounded) until at least one is, for code that arms its timer on a later tick.
 */
import type { Timers } from '../../src/util/timers.js';

export class ManualTimers implements Timers {
  private nextId = 0;
  private readonly pending = new Map<number, { fn: () => void; ms: number }>();
  /** Every delay asked for, in order. */
  readonly delays: number[] = [];
  cleared = 0;

  set = (fn: () => void, ms: number): unknown => {
    const id = ++this.nextId;
    this.pending.set(id, { fn, ms });
    this.delays.push(ms);
    return id;
  };

  clear = (handle: unknown): void => {
    if (this.pending.delete(handle as number)) this.cleared += 1;
  };

  get armedCount(): number {
    return this.pending.size;
  }

  /** Runs the timers set so far (as if their time had come); returns how many ran. */
  fire(): number {
    const due = [...this.pending.values()];
    this.pending.clear();
    for (const timer of due) timer.fn();
    return due.length;
  }

  /** Resolves once a timer is set; rejects after `maxMs` of polling (a bug, not a slow machine). */
  async armed(maxMs = 5_000): Promise<void> {
    const end = Date.now() + maxMs;
    while (this.pending.size === 0) {
      if (Date.now() > end) throw new Error('no timer was set');
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  }
}
