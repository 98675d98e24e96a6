/**
 * The frames waiting to go out on one connection. A busy gateway sends many small frames (every streamed delta);
 * written one by one, each costs a socket write. The outbox writes what was queued during one event-loop turn
 * together (one corked write), merges consecutive deltas of one stream into one frame, and sends delta frames at
 * most once per `deltaIntervalMs` (the first at once; any other frame goes out at the end of its tick and takes
 * the held deltas with it). Frames keep their order, and the text a client puts together from them is exactly
 * what it would have been from the unmerged frames.
 */
import type { ServerFrame } from './frames.js';

/** How often a connection gets a delta frame while the model streams: smooth to read, far fewer frames. */
export const DELTA_INTERVAL_MS = 30;

type DeltaFrame = Extract<ServerFrame, { event: 'delta' | 'reasoning_delta' }>;

export interface OutboxOptions {
  /** Writes frames in order, as one batch. */
  write: (frames: ServerFrame[]) => void;
  /** Asks for `flush()` at the end of this event-loop turn (many outboxes share one tick). */
  requestFlush: (outbox: Outbox) => void;
  deltaIntervalMs?: number;
  now?: () => number;
}

export class Outbox {
  private queue: ServerFrame[] = [];
  private flushRequested = false;
  private timer?: NodeJS.Timeout;
  private lastDeltaAt = Number.NEGATIVE_INFINITY;
  private readonly intervalMs: number;
  private readonly now: () => number;

  constructor(private readonly options: OutboxOptions) {
    this.intervalMs = options.deltaIntervalMs ?? DELTA_INTERVAL_MS;
    this.now = options.now ?? Date.now;
  }

  get pending(): number {
    return this.queue.length;
  }

  push(frame: ServerFrame): void {
    if (isDelta(frame)) {
      this.pushDelta(frame);
      return;
    }
    this.queue.push(frame);
    this.requestFlush();
  }

  /** Writes everything queued, in order. */
  flush(): void {
    this.flushRequested = false;
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.queue.length === 0) return;
    const frames = this.queue;
    this.queue = [];
    if (frames.some(isDelta)) this.lastDeltaAt = this.now();
    this.options.write(frames);
  }

  /** Forgets what is queued (the connection closed). */
  discard(): void {
    this.flushRequested = false;
    clearTimeout(this.timer);
    this.timer = undefined;
    this.queue = [];
  }

  private pushDelta(frame: DeltaFrame): void {
    const last = this.queue.at(-1);
    if (last && isDelta(last) && sameStream(last, frame)) {
      // A new object: frames fanned out to several connections are shared.
      this.queue[this.queue.length - 1] = { ...last, text: last.text + frame.text };
    } else {
      this.queue.push(frame);
    }
    if (this.flushRequested || this.timer) return;
    const wait = this.lastDeltaAt + this.intervalMs - this.now();
    if (wait <= 0) {
      this.requestFlush();
      return;
    }
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.requestFlush();
    }, wait);
    this.timer.unref?.();
  }

  private requestFlush(): void {
    if (this.flushRequested) return;
    this.flushRequested = true;
    this.options.requestFlush(this);
  }
}

function isDelta(frame: ServerFrame): frame is DeltaFrame {
  return frame.event === 'delta' || frame.event === 'reasoning_delta';
}

function sameStream(a: DeltaFrame, b: DeltaFrame): boolean {
  return a.event === b.event && a.chat_id === b.chat_id && a.stream_id === b.stream_id;
}

/** Flushes the outboxes that asked, together, once per event-loop turn (after the work that queued their frames). */
export class FlushScheduler {
  private due: Outbox[] = [];
  private scheduled = false;

  constructor(private readonly onError: (err: unknown) => void) {}

  readonly request = (outbox: Outbox): void => {
    this.due.push(outbox);
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(this.run);
  };

  /** Flushes now (before the connections close). */
  readonly run = (): void => {
    this.scheduled = false;
    const due = this.due;
    this.due = [];
    for (const outbox of due) {
      try {
        outbox.flush();
      } catch (err) {
        this.onError(err);
      }
    }
  };
}
