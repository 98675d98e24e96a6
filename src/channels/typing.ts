/**
 * "typing…" while the agent works on a chat's message: platforms show it for ~5 s, so it is renewed every 4 s
 * until the first reply reaches the chat (or two minutes pass).
 */
import type { ReplyTarget } from './platform.js';

const RENEW_MS = 4_000;
const MAX_MS = 120_000;

export class TypingIndicator {
  private readonly timers = new Map<string, { timer: NodeJS.Timeout; until: number }>();

  constructor(private readonly show: (target: ReplyTarget) => Promise<void>) {}

  start(chatId: string, target: ReplyTarget): void {
    this.stop(chatId);
    const until = Date.now() + MAX_MS;
    const tick = () => void this.show(target).catch(() => {});
    tick();
    const timer = setInterval(() => {
      if (Date.now() > until) this.stop(chatId);
      else tick();
    }, RENEW_MS);
    timer.unref();
    this.timers.set(chatId, { timer, until });
  }

  stop(chatId: string): void {
    const entry = this.timers.get(chatId);
    if (!entry) return;
    clearInterval(entry.timer);
    this.timers.delete(chatId);
  }

  stopAll(): void {
    for (const chatId of [...this.timers.keys()]) this.stop(chatId);
  }
}
