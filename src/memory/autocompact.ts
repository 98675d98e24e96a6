/**
 * AutoCompact: a session nobody has talked to for `idleCompactAfterMinutes` is archived while it is quiet,
 * so the next message does not pay for (or wait on) a long context. Everything but a short replayable tail
 * is summarised through the Consolidator and `lastConsolidated` moves; messages stay in the session file.
 * The summary lands in `session.metadata._last_summary`, which the next turn's system prompt shows as
 * `[Archived Context Summary]`.
 */
import type { Session, SessionStore } from '../session/types.js';
import { type Logger, silentLogger } from '../util/log.js';
import type { Consolidator } from './consolidator.js';

export const KEEP_RECENT_MESSAGES = 8;

export interface SessionActivity {
  key: string;
  /** Last time the session changed (ISO string or Date). */
  lastActivity: string | Date;
}

export interface AutoCompactOptions {
  consolidator: Consolidator;
  sessions: SessionStore;
  idleCompactAfterMinutes: number;
  /** True while a turn of that session is queued or running. Must be synchronous and exact. */
  isActive: (sessionKey: string) => boolean;
  /** Sessions to consider; defaults to `sessions.list()` (key + updatedAt). */
  listSessions?: () => Promise<SessionActivity[]>;
  /** Which keys may be compacted at all; defaults to skipping archived (`…:archived:…`) and `dream:` sessions. */
  eligible?: (sessionKey: string) => boolean;
  keepRecentMessages?: number;
  /** For the optional timer: how often `tick` runs. */
  checkIntervalSeconds?: number;
  log?: Logger;
}

export interface CompactResult {
  key: string;
  archivedMessages: number;
  llmCalls: number;
}

export class AutoCompact {
  private readonly log: Logger;
  /** Sessions already compacted (or found to need nothing), with the activity time they had then. */
  private readonly settledAt = new Map<string, number>();
  private timer: NodeJS.Timeout | undefined;
  private ticking: Promise<CompactResult[]> | undefined;

  constructor(private readonly options: AutoCompactOptions) {
    this.log = options.log ?? silentLogger;
  }

  /** Compacts every eligible idle session; sessions are done one after another to keep LLM load flat. */
  async tick(now: Date = new Date()): Promise<CompactResult[]> {
    const idleMs = this.options.idleCompactAfterMinutes * 60_000;
    if (idleMs <= 0) return [];
    const sessions = await this.listSessions();
    const results: CompactResult[] = [];
    for (const { key, lastActivity } of sessions) {
      const activeAt = new Date(lastActivity).getTime();
      if (!Number.isFinite(activeAt) || now.getTime() - activeAt < idleMs) continue;
      if (!this.eligible(key) || this.settledAt.get(key) === activeAt) continue;
      // Checked and claimed in the same tick: a turn that starts later waits for the guard (settled()).
      if (this.options.isActive(key)) continue;
      try {
        const result = await this.options.consolidator.runExclusive(key, () => this.compact(key));
        if (result) results.push(result);
      } catch (error) {
        this.log.warn(`auto-compact of ${key} failed: ${error instanceof Error ? error.message : String(error)}`);
      }
    }
    return results;
  }

  /** Runs `tick` every `checkIntervalSeconds` on an unref'd timer (it never keeps the process alive). */
  start(): void {
    if (this.timer) return;
    const intervalMs = (this.options.checkIntervalSeconds ?? 60) * 1000;
    this.timer = setInterval(() => {
      if (this.ticking) return;
      this.ticking = this.tick().finally(() => {
        this.ticking = undefined;
      });
    }, intervalMs);
    this.timer.unref();
  }

  /** Stops the timer and waits for a tick in progress. */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    await this.ticking?.catch(() => undefined);
  }

  private async compact(key: string): Promise<CompactResult | undefined> {
    const session = await this.options.sessions.load(key);
    const end = replayableTailStart(session, this.options.keepRecentMessages ?? KEEP_RECENT_MESSAGES);
    const before = session.lastConsolidated;
    if (end <= before) {
      this.settledAt.set(key, new Date(session.updatedAt).getTime());
      return undefined;
    }
    const report = await this.options.consolidator.archiveThrough(session, end);
    await this.options.sessions.save(session);
    this.settledAt.set(key, new Date(session.updatedAt).getTime());
    this.log.info(`auto-compacted idle session ${key}: ${end - before} messages archived`);
    return { key, archivedMessages: session.lastConsolidated - before, llmCalls: report.llmCalls };
  }

  private async listSessions(): Promise<SessionActivity[]> {
    if (this.options.listSessions) return this.options.listSessions();
    const summaries = await this.options.sessions.list();
    return summaries.map(({ key, updatedAt }) => ({ key, lastActivity: updatedAt }));
  }

  private eligible(key: string): boolean {
    if (this.options.eligible) return this.options.eligible(key);
    // Subagent transcripts are records of finished work, not conversations: their report already reached the parent.
    return !key.includes(':archived:') && !key.startsWith('dream:') && !key.startsWith('subagent:');
  }
}

/**
 * Where the kept tail begins: about the last `keep` messages, starting at a user message so the tail is
 * a valid conversation on its own (no tool result without its call). Prefers a shorter tail over a longer
 * one; returns `lastConsolidated` when there is nothing to archive.
 */
export function replayableTailStart(session: Session, keep: number): number {
  const { messages, lastConsolidated } = session;
  const from = Math.max(lastConsolidated, messages.length - keep);
  for (let index = from; index < messages.length; index++) {
    if (messages[index]?.role === 'user') return index;
  }
  for (let index = from - 1; index > lastConsolidated; index--) {
    if (messages[index]?.role === 'user') return index;
  }
  return lastConsolidated;
}
