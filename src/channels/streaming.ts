/**
 * A reply that streams into the chat by editing its message as the model writes, at most once per interval (the
 * platforms rate-limit edits, and fewer edits flicker less). The final text is written into the same message(s):
 * nothing is deleted and re-sent, so there is no flicker and no duplicate at the end. When the text outgrows one
 * message, the overflow continues in new messages and earlier ones are re-cut as the split moves.
 */
import { errorMessage } from '../util/errors.js';
import { type Logger, logFailure } from '../util/log.js';
import type { ChatPlatform, OutgoingPart, ReplyTarget, SendOptions } from './platform.js';

export interface MessageStreamOptions {
  platform: ChatPlatform;
  target: ReplyTarget;
  /** Markdown → the rendered parts it is sent as. */
  render: (markdown: string) => OutgoingPart[];
  intervalMs: number;
  log: Logger;
  now?: () => number;
}

interface SentMessage {
  id: string;
  text: string;
}

export class MessageStream {
  private markdown = '';
  private readonly sent: SentMessage[] = [];
  private timer?: NodeJS.Timeout;
  private lastShown = Number.NEGATIVE_INFINITY;
  private dirty = false;
  private queue: Promise<void> = Promise.resolve();
  private readonly now: () => number;

  constructor(private readonly options: MessageStreamOptions) {
    this.now = options.now ?? Date.now;
  }

  /** True once something reached the chat. */
  get started(): boolean {
    return this.sent.length > 0;
  }

  append(delta: string): void {
    this.markdown += delta;
    this.dirty = true;
    if (this.timer) return;
    const wait = Math.max(0, this.lastShown + this.options.intervalMs - this.now());
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.enqueue(() => this.showProgress()).catch(logFailure(this.options.log, 'a streamed edit failed'));
    }, wait);
    this.timer.unref?.();
  }

  /** Writes the final text (the authoritative reply; defaults to what was streamed) and ends the stream. */
  finish(finalMarkdown?: string, options?: SendOptions): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (finalMarkdown !== undefined) this.markdown = finalMarkdown;
    return this.enqueue(async () => {
      await this.show(this.markdown, options);
      const { platform, target } = this.options;
      if (this.sent.length > 0)
        await platform.finishStream?.(
          target,
          this.sent.map((message) => message.id),
        );
    });
  }

  /** Stops pending edits without writing anything more (the channel is going away). */
  cancel(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  private enqueue(task: () => Promise<void>): Promise<void> {
    const run = this.queue.then(task);
    this.queue = run.catch(() => undefined);
    return run;
  }

  /** An intermediate edit: a failure is logged and the next edit (or the final one) tries again. */
  private async showProgress(): Promise<void> {
    if (!this.dirty) return;
    this.dirty = false;
    this.lastShown = this.now();
    try {
      await this.show(this.markdown);
    } catch (err) {
      this.options.log.warn(`stream edit in ${this.options.target.chatId} failed: ${errorMessage(err)}`);
    }
  }

  private async show(markdown: string, options?: SendOptions): Promise<void> {
    const { platform, target } = this.options;
    const parts = this.options.render(markdown);
    for (const [i, part] of parts.entries()) {
      const last = i === parts.length - 1;
      const extras = last && options?.buttons ? options : undefined;
      const existing = this.sent[i];
      if (!existing) {
        const id = await platform.sendText(i === 0 ? target : withoutQuote(target), part, {
          ...extras,
          streaming: true,
        });
        this.sent.push({ id, text: part.text });
      } else if (existing.text !== part.text || extras) {
        await platform.editText?.(withoutQuote(target), existing.id, part, extras);
        existing.text = part.text;
      }
    }
    // The final text can be shorter than what was streamed (a retried model call): empty the extra messages.
    for (const extra of this.sent.slice(Math.max(parts.length, 1))) {
      if (extra.text === '…') continue;
      await platform.editText?.(withoutQuote(target), extra.id, { text: '…', markdown: '…' });
      extra.text = '…';
    }
  }
}

function withoutQuote(target: ReplyTarget): ReplyTarget {
  const { replyTo: _quote, ...rest } = target;
  return rest;
}
