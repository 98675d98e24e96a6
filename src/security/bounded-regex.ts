/**
 * Regular expressions written by the model (grep, search_history, write_stdin's wait_for) run with a time budget.
 * JavaScript's backtracking engine is exponential on patterns like `(a+)+$` and quadratic on many more, and a match
 * cannot be interrupted on the thread that runs it: one such grep froze every session, /health and every channel of
 * the gateway for as long as it ran. So a pattern that is not plain text is matched in a worker thread; the caller
 * blocks (Atomics.wait) for at most what is left of its budget, and a match that outlives it ends the worker and fails
 * with RegexTimeoutError instead of stalling the process.
 */
import { MessageChannel, type MessagePort, receiveMessageOnPort, Worker } from 'node:worker_threads';

/** What one tool call may spend matching (all its files or messages together). */
export const DEFAULT_REGEX_BUDGET_MS = 2_000;
/** Starting the worker is not the pattern's fault: it gets its own, generous, wait. */
const WORKER_START_MS = 15_000;

export class RegexTimeoutError extends Error {
  /** `subject` names the pattern as the model wrote it: `the regular expression "(a+)+$"`, `the glob "*a*a*b"`. */
  constructor(readonly subject: string) {
    super(
      `${subject} took too long to match (over the time budget), so the ` +
        'search was stopped. Patterns like (a+)+ or (.*)*x backtrack exponentially: simplify it, anchor it, or ' +
        'search for plain text.',
    );
    this.name = 'RegexTimeoutError';
  }
}

/**
 * The matching time one tool call may spend, over all its files or messages. Only time spent matching counts (tool
 * calls run side by side, so a wall-clock deadline would be spent by the others' searches).
 */
export class RegexBudget {
  private spentMs = 0;
  constructor(
    private readonly limitMs: number = DEFAULT_REGEX_BUDGET_MS,
    private readonly now: () => number = Date.now,
  ) {}
  remainingMs(): number {
    return Math.max(0, this.limitMs - this.spentMs);
  }
  /** Runs `match`, counting the time it takes. */
  spend<T>(match: () => T): T {
    const start = this.now();
    try {
      return match();
    } finally {
      this.spentMs += this.now() - start;
    }
  }
}

/** [line index, index of the match in that line] for each matching line. */
export type LineMatch = [number, number];
export interface FirstMatch {
  index: number;
  length: number;
  /** Further matches after the first, counted up to the cap asked for. */
  more: number;
}

type Request =
  | { op: 'lines'; source: string; flags: string; text: string; firstOnly: boolean }
  | { op: 'first'; source: string; flags: string; text: string; cap: number }
  | { op: 'test'; source: string; flags: string; text: string };
type Reply = { ok: LineMatch[] | FirstMatch | boolean | null } | { error: string };

// The matching code, as source: the worker runs it, and so does this thread for plain-text patterns (one copy,
// and it survives minification, which renames functions). `lines` splits as grep does: on \n, a trailing empty
// line dropped, a final \r cut.
const MATCHERS = `
function lines(re, text, firstOnly) {
  const all = text.split('\\n');
  if (all.length > 1 && all[all.length - 1] === '') all.pop();
  const out = [];
  for (let i = 0; i < all.length; i++) {
    let line = all[i];
    if (line.endsWith('\\r')) line = line.slice(0, -1);
    re.lastIndex = 0;
    const found = re.exec(line);
    if (!found) continue;
    out.push([i, found.index]);
    if (firstOnly) break;
  }
  return out;
}
function first(re, text, cap) {
  re.lastIndex = 0;
  const found = re.exec(text);
  if (!found) return null;
  let more = 0;
  if (re.global && found[0].length > 0) while (more < cap && re.exec(text)) more++;
  re.lastIndex = 0;
  return { index: found.index, length: found[0].length, more };
}
`;

const local = new Function(`${MATCHERS}; return { lines, first };`)() as {
  lines(re: RegExp, text: string, firstOnly: boolean): LineMatch[];
  first(re: RegExp, text: string, cap: number): FirstMatch | null;
};

const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const { port, signal } = workerData;
const cache = new Map();
const compile = (source, flags) => {
  const key = flags + '/' + source;
  let re = cache.get(key);
  if (!re) { re = new RegExp(source, flags); if (cache.size > 32) cache.clear(); cache.set(key, re); }
  return re;
};
${MATCHERS}
Atomics.store(signal, 1, 1);
Atomics.notify(signal, 1);
parentPort.on('message', (req) => {
  let reply;
  try {
    const re = compile(req.source, req.flags);
    re.lastIndex = 0;
    if (req.op === 'lines') reply = { ok: lines(re, req.text, req.firstOnly) };
    else if (req.op === 'first') reply = { ok: first(re, req.text, req.cap) };
    else reply = { ok: re.test(req.text) };
  } catch (error) {
    reply = { error: String((error && error.message) || error) };
  }
  port.postMessage(reply);
  Atomics.store(signal, 0, 1);
  Atomics.notify(signal, 0);
});
`;

interface Runner {
  worker: Worker;
  port: MessagePort;
  signal: Int32Array;
}
let runner: Runner | undefined;

function startRunner(): Runner {
  const signal = new Int32Array(new SharedArrayBuffer(8));
  const { port1, port2 } = new MessageChannel();
  const worker = new Worker(WORKER_SOURCE, {
    eval: true,
    workerData: { port: port2, signal },
    transferList: [port2],
    resourceLimits: { maxOldGenerationSizeMb: 256 },
  });
  worker.unref();
  worker.on('error', () => {
    if (runner?.worker === worker) runner = undefined;
  });
  port1.unref();
  if (Atomics.wait(signal, 1, 0, WORKER_START_MS) === 'timed-out') {
    void worker.terminate().catch(() => undefined);
    throw new Error('the regular-expression worker did not start');
  }
  return { worker, port: port1, signal };
}

function call(request: Request, budget: RegexBudget, subject: string): LineMatch[] | FirstMatch | boolean | null {
  runner ??= startRunner();
  return budget.spend(() => callRunner(runner as Runner, request, budget, subject));
}

function callRunner(
  current: Runner,
  request: Request,
  budget: RegexBudget,
  subject: string,
): LineMatch[] | FirstMatch | boolean | null {
  Atomics.store(current.signal, 0, 0);
  current.worker.postMessage(request);
  if (Atomics.wait(current.signal, 0, 0, budget.remainingMs()) === 'timed-out') {
    runner = undefined;
    void current.worker.terminate().catch(() => undefined); // ending it is all that matters
    throw new RegexTimeoutError(subject);
  }
  const message = receiveMessageOnPort(current.port)?.message as Reply | undefined;
  if (!message) throw new Error('the regular-expression worker gave no answer');
  if ('error' in message) throw new Error(message.error);
  return message.ok;
}

/** A model-supplied pattern, matched within a budget. Plain text (no regex syntax) is matched in-process. */
export class BoundedRegex {
  private readonly local: RegExp | undefined;
  private readonly flags: string;

  private readonly subject: string;

  /**
   * Throws SyntaxError for an invalid pattern, like `new RegExp`. `local` runs it in-process anyway, for a caller
   * that knows its pattern and input are too small to backtrack for long; plain text always runs in-process.
   */
  constructor(
    readonly source: string,
    flags: string,
    private readonly budget: RegexBudget,
    options: { subject?: string; local?: boolean } = {},
  ) {
    this.flags = flags;
    this.subject = options.subject ?? `the regular expression ${JSON.stringify(source)}`;
    const compiled = new RegExp(source, flags);
    this.local = options.local || isPlainText(source) ? compiled : undefined;
  }

  /** Matching lines of `text`, split as grep does. */
  matchLines(text: string, firstOnly: boolean): LineMatch[] {
    if (this.local) {
      // One whole-text test first: most files hold no match, and plain text cannot span lines.
      this.local.lastIndex = 0;
      return this.local.test(text) ? local.lines(this.local, text, firstOnly) : [];
    }
    const request = { op: 'lines', source: this.source, flags: this.flags, text, firstOnly } as const;
    return call(request, this.budget, this.subject) as LineMatch[];
  }

  /** The first match in `text` and how many follow (global patterns), up to `cap`. */
  firstMatch(text: string, cap: number): FirstMatch | undefined {
    if (this.local) return local.first(this.local, text, cap) ?? undefined;
    const found = call({ op: 'first', source: this.source, flags: this.flags, text, cap }, this.budget, this.subject);
    return (found as FirstMatch | null) ?? undefined;
  }

  test(text: string): boolean {
    if (this.local) {
      this.local.lastIndex = 0;
      return this.local.test(text);
    }
    return call({ op: 'test', source: this.source, flags: this.flags, text }, this.budget, this.subject) as boolean;
  }
}

/** No regex syntax at all (escaped metacharacters are fine): a literal search, linear whatever the text. */
function isPlainText(source: string): boolean {
  return /^(?:[^\\^$.*+?()[\]{}|]|\\[\\^$.*+?()[\]{}|/-])*$/.test(source);
}
