import { describe, expect, it } from 'vitest';
import { HEAP_GROWING_PERCENT, limitHeapGrowth } from '../../src/gateway/heap.js';

function apply(execArgv: string[], nodeOptions = '') {
  const set: string[] = [];
  const applied = limitHeapGrowth({ execArgv, nodeOptions, setFlags: (flags) => set.push(flags) });
  return { applied, set };
}

describe('the gateway heap policy', () => {
  it('limits how far the heap grows past its live size', () => {
    expect(apply([], '--enable-source-maps')).toEqual({
      applied: true,
      set: [`--heap-growing-percent=${HEAP_GROWING_PERCENT}`],
    });
  });

  it('leaves a heap setting the user gave node alone', () => {
    for (const [execArgv, nodeOptions] of [
      [['--max-old-space-size=512'], ''],
      [['--heap-growing-percent=300'], ''],
      [[], '--enable-source-maps --max_old_space_size=1024'],
      [[], '--max-old-space-size 768'],
    ] as const) {
      expect(apply([...execArgv], nodeOptions)).toEqual({ applied: false, set: [] });
    }
  });
});
