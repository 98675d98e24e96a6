/**
 * What keeps the email channel from answering where it should not: mail that was unread long before the channel
 * was first enabled (an existing inbox is not answered retroactively), and too many mails from one sender (mail
 * loops with other robots, floods).
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { writeFileAtomic } from '../../util/fs.js';

/** Unread mail older than the first connection minus this margin (clock skew, a test mail sent just before) is old. */
export const OLD_MAIL_MARGIN_MS = 60 * 60 * 1000;

/**
 * When this account's mailbox was first read (`<dataDir>/email/first-connected.json`, one entry per
 * account and folder); recorded now when it never was.
 */
export async function firstConnectedAt(dataDir: string, account: string, now = Date.now()): Promise<number> {
  const path = join(dataDir, 'email', 'first-connected.json');
  let known: Record<string, string> = {};
  try {
    const parsed: unknown = JSON.parse(await readFile(path, 'utf8'));
    if (parsed && typeof parsed === 'object') known = parsed as Record<string, string>;
  } catch {
    // Missing or unreadable: this is the first connection.
  }
  const recorded = Date.parse(known[account] ?? '');
  if (Number.isFinite(recorded)) return recorded;
  known[account] = new Date(now).toISOString();
  await writeFileAtomic(path, `${JSON.stringify(known, null, 2)}\n`, 0o600);
  return now;
}

/** At most `limit` distinct mails per sender within a sliding hour. */
export class SenderRateLimit {
  private readonly recent = new Map<string, { at: number; key: string }[]>();

  constructor(
    private readonly limit: () => number,
    private readonly windowMs = 60 * 60 * 1000,
  ) {}

  /** Counts this mail (`key`: its Message-ID, so a redelivery is not counted twice) unless the sender is over. */
  allow(sender: string, key: string, now = Date.now()): boolean {
    const entries = (this.recent.get(sender) ?? []).filter((entry) => now - entry.at < this.windowMs);
    if (entries.some((entry) => entry.key === key)) return true;
    if (entries.length >= this.limit()) {
      this.recent.set(sender, entries);
      return false;
    }
    entries.push({ at: now, key });
    this.recent.set(sender, entries);
    if (this.recent.size > 10_000) this.forgetIdle(now);
    return true;
  }

  private forgetIdle(now: number): void {
    for (const [sender, entries] of this.recent) {
      if (entries.every((entry) => now - entry.at >= this.windowMs)) this.recent.delete(sender);
    }
  }
}
