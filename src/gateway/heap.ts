/**
 * The gateway's heap policy. On a machine with plenty of memory V8 lets the heap grow to about 4× what was live at
 * its last full collection before collecting again. A gateway's heap is mostly short-lived turn data (request
 * bodies, streamed chunks) that peaks while many turns are in flight, so that headroom fills with garbage: with
 * 1,000 turns in flight the process sat at ~600 MB RSS with ~150 MB live. Growing 1.5× instead costs a few more
 * full collections (marked concurrently) and keeps the process near its live size. A heap setting the user gave
 * node (`--max-old-space-size`, `--heap-growing-percent`) is left alone.
 */
import { setFlagsFromString } from 'node:v8';

/** The heap may grow this much (percent) over what was live at the last full collection. */
export const HEAP_GROWING_PERCENT = 50;

const USER_HEAP_FLAG = /^--(max[-_]old[-_]space[-_]size|heap[-_]growing[-_]percent)(=|$)/;

export interface HeapPolicyOptions {
  execArgv?: readonly string[];
  nodeOptions?: string;
  setFlags?: (flags: string) => void;
}

/** Applies the gateway's heap growth limit; false when the user chose their own heap settings. */
export function limitHeapGrowth(options: HeapPolicyOptions = {}): boolean {
  const nodeOptions = options.nodeOptions ?? process.env.NODE_OPTIONS ?? '';
  const given = [...(options.execArgv ?? process.execArgv), ...nodeOptions.split(/\s+/)];
  if (given.some((arg) => USER_HEAP_FLAG.test(arg))) return false;
  (options.setFlags ?? setFlagsFromString)(`--heap-growing-percent=${HEAP_GROWING_PERCENT}`);
  return true;
}
