import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { AsyncQueue } from '../../src/bus/queue.js';

describe('AsyncQueue', () => {
  it('hands items out in order, to waiting takers first come first served', async () => {
    const queue = new AsyncQueue<string>();
    queue.put('a');
    const first = queue.take();
    const second = queue.take();
    const third = queue.take();
    queue.put('b');
    queue.put('c');
    queue.put('d');
    expect(await Promise.all([first, second, third])).toEqual(['a', 'b', 'c']);
    expect(queue.size).toBe(1);
    expect(await queue.take()).toBe('d');
  });

  it('an abort rejects the takers waiting on that signal only; the rest still get items in order', async () => {
    const queue = new AsyncQueue<number>();
    const stop = new AbortController();
    const other = new AbortController();
    const cancelled = queue.take(stop.signal);
    const kept = queue.take(other.signal);
    const plain = queue.take();
    stop.abort(new Error('stopping'));
    await expect(cancelled).rejects.toThrow('stopping');
    queue.put(1);
    queue.put(2);
    expect(await Promise.all([kept, plain])).toEqual([1, 2]);
    await expect(queue.take(stop.signal)).rejects.toThrow('stopping');
    queue.put(3);
    expect(await queue.take(other.signal)).toBe(3);
  });

  it('a consumer taking again and again with one signal leaves one abort listener on it', async () => {
    const queue = new AsyncQueue<number>();
    const signal = new AbortController().signal;
    for (let i = 0; i < 100; i++) {
      const taken = queue.take(signal);
      queue.put(i);
      expect(await taken).toBe(i);
    }
    expect(getEventListeners(signal, 'abort')).toHaveLength(1);
  });
});
