/**
 * Shows that nanobot is waiting (for the model, a tool, a retry) once a wait has lasted `delayMs` (1 s): a spinner
 * with the elapsed seconds when stderr is a terminal, cleared as soon as output comes; otherwise one line per wait.
 * Always on stderr: stdout carries only the answer, for scripts.
 */
import { realTimers, type Timers } from '../util/timers.js';

export interface ProgressOutput {
  write(text: string): void;
  isTTY?: boolean;
}

export interface WaitIndicatorOptions {
  timers?: Timers;
  now?: () => number;
  /** How long a wait lasts before it is shown. */
  delayMs?: number;
  /** The spinner's frame interval (terminal only). */
  frameMs?: number;
  /** Appended to the one-line notice: what bounds the wait (e.g. the NANOBOT_LLM_TIMEOUT_S in force). */
  limit?: string;
}

const FRAMES = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
const CLEAR_LINE = '\r\x1b[2K';

export class WaitIndicator {
  private what = '';
  private startedAt = 0;
  private timer: unknown;
  /** The spinner is on screen (terminal) or the line was written (otherwise) for the current wait. */
  private shown = false;
  private frame = 0;
  private readonly timers: Timers;
  private readonly now: () => number;
  private readonly delayMs: number;
  private readonly frameMs: number;

  constructor(
    private readonly out: ProgressOutput,
    private readonly options: WaitIndicatorOptions = {},
  ) {
    this.timers = options.timers ?? realTimers;
    this.now = options.now ?? Date.now;
    this.delayMs = options.delayMs ?? 1000;
    this.frameMs = options.frameMs ?? 100;
  }

  /** A wait begins (or, when one is already running, goes on under a new name without restarting its clock). */
  wait(what: string): void {
    if (this.timer !== undefined || this.shown) {
      this.what = what;
      return;
    }
    this.what = what;
    this.startedAt = this.now();
    this.timer = this.timers.set(() => this.show(), this.delayMs);
  }

  /** The wait is over: output follows. Clears the spinner so that output starts on a clean line. */
  done(): void {
    if (this.timer !== undefined) this.timers.clear(this.timer);
    this.timer = undefined;
    if (this.shown && this.out.isTTY) this.out.write(CLEAR_LINE);
    this.shown = false;
  }

  private show(): void {
    this.timer = undefined;
    this.shown = true;
    if (!this.out.isTTY) {
      const seconds = Math.round((this.now() - this.startedAt) / 1000);
      const limit = this.options.limit ? `; ${this.options.limit}` : '';
      this.out.write(`  … ${this.what}: no answer yet after ${seconds} s${limit}\n`);
      return;
    }
    this.render();
  }

  private render(): void {
    const seconds = Math.floor((this.now() - this.startedAt) / 1000);
    const glyph = FRAMES[this.frame++ % FRAMES.length] ?? '';
    this.out.write(`${CLEAR_LINE}${glyph} ${this.what} ${seconds}s`);
    this.timer = this.timers.set(() => {
      this.timer = undefined;
      if (this.shown) this.render();
    }, this.frameMs);
  }
}
