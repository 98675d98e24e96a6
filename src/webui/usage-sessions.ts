/**
 * Settings › Usage, per session (ours; nanobot's usage route is per day only):
 *   GET /api/webui/usage/sessions   each session's `metadata.token_stats` (what /status reports as "Tokens this
 *                                   session"), newest first: every channel, cron and Dream session, not only chats.
 * Cost is there only for the calls a price in agents.defaults.modelPrices covered; `priced` says whether any is set.
 */
import { type TokenStats, tokenStats } from '../agent/commands/token-stats.js';
import { usageSource } from '../session/token-usage.js';
import { sessionTitle } from '../session/types.js';
import type { WebuiApiModule } from './api.js';

/** Loading a session reads its whole file: the newest ones are what a user looks for. */
const MAX_SESSIONS = 100;

const hasUsage = (stats: TokenStats) => stats.total_tokens > 0 || stats.llm_calls > 0;

export const usageSessionsModule: WebuiApiModule = {
  routes: {
    'webui/usage/sessions': async ({ backend }) => {
      const prices = backend.config?.().loaded().config.agents.defaults.modelPrices ?? {};
      const summaries = (await backend.sessions().list())
        .sort((a, b) => b.updatedAt.localeCompare(a.updatedAt))
        .slice(0, MAX_SESSIONS);
      const sessions = [];
      for (const summary of summaries) {
        const session = await backend.sessions().load(summary.key);
        const stats = tokenStats(session);
        if (!hasUsage(stats)) continue;
        sessions.push({
          key: session.key,
          title: sessionTitle(session.metadata) ?? summary.preview ?? '',
          source: usageSource(session.key),
          updated_at: session.updatedAt,
          prompt_tokens: stats.total_prompt_tokens,
          completion_tokens: stats.total_completion_tokens,
          cached_tokens: stats.total_cached_tokens,
          total_tokens: stats.total_tokens,
          llm_calls: stats.llm_calls,
          cost_usd: stats.total_cost_usd,
        });
      }
      return { sessions, priced: Object.keys(prices).length > 0, limit: MAX_SESSIONS };
    },
  },
};
