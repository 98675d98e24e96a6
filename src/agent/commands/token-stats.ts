/**
 * Per-session token accounting in `session.metadata.token_stats` (nanobot's key and field names), so /status can
 * report what this conversation has cost across restarts. `total_cached_tokens` is ours, for the cache hit rate.
 */
import type { Usage } from '../../providers/types.js';
import type { Session } from '../../session/types.js';

export interface TokenStats {
  total_prompt_tokens: number;
  total_completion_tokens: number;
  total_tokens: number;
  llm_calls: number;
  /** Prompt tokens served from the provider's prompt cache. */
  total_cached_tokens: number;
}

export function tokenStats(session: Session): TokenStats {
  const raw = session.metadata.token_stats;
  const stored = typeof raw === 'object' && raw !== null ? (raw as Record<string, unknown>) : {};
  const count = (key: keyof TokenStats): number => {
    const value = stored[key];
    return typeof value === 'number' && Number.isFinite(value) ? value : 0;
  };
  return {
    total_prompt_tokens: count('total_prompt_tokens'),
    total_completion_tokens: count('total_completion_tokens'),
    total_tokens: count('total_tokens'),
    llm_calls: count('llm_calls'),
    total_cached_tokens: count('total_cached_tokens'),
  };
}

/** Adds one turn's usage (over `llmCalls` model requests) to the session's totals. */
export function recordUsage(session: Session, usage: Usage, llmCalls: number): void {
  const stats = tokenStats(session);
  stats.total_prompt_tokens += usage.promptTokens;
  stats.total_completion_tokens += usage.completionTokens;
  stats.total_tokens += usage.promptTokens + usage.completionTokens;
  stats.llm_calls += llmCalls;
  stats.total_cached_tokens += usage.cachedTokens ?? 0;
  session.metadata.token_stats = stats;
}
