/** The usage API's answers: per day (`settings/usage`, nanobot's) and per session (`webui/usage/sessions`, ours). */
export interface UsageDay {
  date: string;
  prompt_tokens: number;
  completion_tokens: number;
  cached_tokens: number;
  total_tokens: number;
  requests: number;
}

export interface UsageReport {
  days: UsageDay[];
  total_tokens_30d: number;
  requests_30d: number;
  active_days_30d: number;
  current_streak_days: number;
  peak_day_tokens: number;
}

export interface SessionUsage {
  key: string;
  title: string;
  source: 'user' | 'cron' | 'dream' | 'api' | 'system';
  updated_at: string;
  prompt_tokens: number;
  completion_tokens: number;
  cached_tokens: number;
  total_tokens: number;
  llm_calls: number;
  cost_usd: number;
}

export interface SessionsUsage {
  sessions: SessionUsage[];
  /** agents.defaults.modelPrices has at least one price. */
  priced: boolean;
  limit: number;
}
