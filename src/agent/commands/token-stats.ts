/**
 * Per-session token accounting in `session.metadata.token_stats` (nanobot's key and field names), so /status can
 * report what this conversation has cost across restarts. `total_cached_tokens` (cache hit rate),
 * `total_reasoning_tokens` and `total_cost_usd` (priced by agents.defaults.modelPrices) are ours.
 */
import { addUsage } from '../../providers/cost.js';
import type { Usage } from '../../providers/types.js';
import type { Session } from '../../session/types.js';

export interface TokenStats {
  total_prompt_tokens: number;
  total_completion_tokens: number;
  total_tokens: number;
  llm_calls: number;
  /** Prompt tokens served from the provider's prompt cache. */
  total_cached_tokens: number;
  /** Completion tokens spent on reasoning (part of total_completion_tokens). */
  total_reasoning_tokens: number;
  /** USD of the priced calls; calls of a model without a price add nothing. */
  total_cost_usd: number;
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
    total_reasoning_tokens: count('total_reasoning_tokens'),
    total_cost_usd: count('total_cost_usd'),
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
  stats.total_reasoning_tokens += usage.reasoningTokens ?? 0;
  stats.total_cost_usd += usage.costUsd ?? 0;
  // Written only once they count, so a session without reasoning or prices keeps nanobot's shape.
  const { total_reasoning_tokens, total_cost_usd, ...rest } = stats;
  session.metadata.token_stats = {
    ...rest,
    ...(total_reasoning_tokens ? { total_reasoning_tokens } : {}),
    ...(total_cost_usd ? { total_cost_usd } : {}),
  };
}

/** The usage of several model runs together (a turn that ran more than one round). */
export function sumUsage(usages: Usage[]): Usage {
  if (usages.length === 1 && usages[0]) return usages[0];
  const total: Usage = { promptTokens: 0, completionTokens: 0, cachedTokens: 0 };
  for (const usage of usages) addUsage(total, usage);
  return total;
}
