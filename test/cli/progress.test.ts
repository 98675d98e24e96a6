/** The wait indicator (src/cli/progress.ts) under timers fired by hand: nothing here waits on the clock. */
import { describe, expect, it } from 'vitest';
import { WaitIndicator } from '../../src/cli/progress.js';
import { ManualTimers } from '../helpers/manual-timers.js';

function setup(isTTY: boolean) {
  const timers = new ManualTimers();
  let now = 0;
  const written: string[] = [];
  const indicator = new WaitIndicator(
    { isTTY, write: (text) => written.push(text) },
    { timers, now: () => now, limit: 'NANOBOT_LLM_TIMEOUT_S=300 bounds the wait' },
  );
  return { timers, written, indicator, advance: (ms: number) => (now += ms) };
}

describe('WaitIndicator', () => {
  for (const isTTY of [true, false]) {
    it(`${isTTY ? 'terminal' : 'pipe'}: a wait that ends within the delay shows nothing`, () => {
      const { timers, written, indicator } = setup(isTTY);
      indicator.wait('waiting for the model');
      expect(timers.delays).toEqual([1000]);
      indicator.done();
      expect(timers.fire()).toBe(0);
      expect(written).toEqual([]);
    });
  }

  it('pipe: one line per wait, naming what it waits for and the limit', () => {
    const { timers, written, indicator, advance } = setup(false);
    indicator.wait('waiting for the model');
    advance(1000);
    timers.fire();
    expect(written).toEqual([
      '  … waiting for the model: no answer yet after 1 s; NANOBOT_LLM_TIMEOUT_S=300 bounds the wait\n',
    ]);
    // Still the same wait: no second line, however long it goes on.
    indicator.wait('waiting for the model');
    expect(timers.fire()).toBe(0);
    indicator.done();
    expect(written).toHaveLength(1);
    // The next wait (a tool) gets its own line.
    indicator.wait('running exec');
    advance(2000);
    timers.fire();
    expect(written[1]).toBe('  … running exec: no answer yet after 2 s; NANOBOT_LLM_TIMEOUT_S=300 bounds the wait\n');
    expect(written.join('')).not.toContain('\r');
  });

  it('terminal: a spinner with the elapsed seconds, redrawn in place, cleared when output comes', () => {
    const { timers, written, indicator, advance } = setup(true);
    indicator.wait('waiting for the model');
    advance(1000);
    timers.fire();
    advance(1100);
    timers.fire();
    expect(written).toEqual(['\r\x1b[2K⠋ waiting for the model 1s', '\r\x1b[2K⠙ waiting for the model 2s']);
    // A new name for the same wait keeps the clock.
    indicator.wait('running exec');
    advance(1000);
    timers.fire();
    expect(written.at(-1)).toBe('\r\x1b[2K⠹ running exec 3s');
    indicator.done();
    expect(written.at(-1)).toBe('\r\x1b[2K');
    expect(timers.armedCount).toBe(0);
    // A late frame cannot redraw after done().
    expect(timers.fire()).toBe(0);
    indicator.done();
    expect(written.filter((w) => w === '\r\x1b[2K')).toHaveLength(1);
  });
});
