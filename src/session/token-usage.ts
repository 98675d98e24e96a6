/**
 * Token usage per day, in nanobot's file and shape (`<dataDir>/webui/token-usage.json`: `{schema_version: 1, days:
 * {"YYYY-MM-DD": {prompt_tokens, completion_tokens, cached_tokens, total_tokens, provider_tokens, requests,
 * provider_requests, sources: {user|api|cron|dream|system: {…}}}}, updated_at}`), so a home nanobot wrote shows its
 * history and both write the same file. Each finished turn adds its provider-reported usage to the day it ended on
 * (in `agents.defaults.timezone`); the per-session totals stay in each session's `token_stats`.
 */
import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { writeFileAtomic } from '../util/fs.js';

export const TOKEN_USAGE_FILE = 'token-usage.json';
const MAX_FILE_BYTES = 512 * 1024;
const MAX_DAYS = 400;
const TOKEN_KEYS = [
  'prompt_tokens',
  'completion_tokens',
  'cached_tokens',
  'total_tokens',
  'provider_tokens',
  'estimated_tokens',
] as const;
const REQUEST_KEYS = ['requests', 'provider_requests', 'estimated_requests'] as const;
const SOURCES = new Set(['user', 'api', 'cron', 'dream', 'system']);

type Counter = (typeof TOKEN_KEYS)[number] | (typeof REQUEST_KEYS)[number];
export type UsageRow = Record<Counter, number>;
export interface DayRow extends UsageRow {
  date: string;
  sources: Record<string, UsageRow>;
}
export interface TokenUsageState {
  schema_version: 1;
  days: Record<string, DayRow>;
  updated_at: string | null;
}

export function tokenUsagePath(dataDir: string): string {
  return join(dataDir, 'webui', TOKEN_USAGE_FILE);
}

const count = (value: unknown): number =>
  typeof value === 'number' && Number.isFinite(value) && value > 0 ? Math.floor(value) : 0;

function row(raw: unknown): UsageRow {
  const input = typeof raw === 'object' && raw !== null ? (raw as Record<string, unknown>) : {};
  const out = Object.fromEntries([...TOKEN_KEYS, ...REQUEST_KEYS].map((key) => [key, count(input[key])])) as UsageRow;
  if (out.total_tokens <= 0) out.total_tokens = out.prompt_tokens + out.completion_tokens;
  if (out.provider_tokens <= 0 && out.estimated_tokens <= 0) out.provider_tokens = out.total_tokens;
  if (out.requests > 0 && out.provider_requests <= 0 && out.estimated_requests <= 0)
    out.provider_requests = out.requests;
  return out;
}

/** nanobot's normalisation: unknown or broken rows are dropped, never fatal. */
export function normalizeTokenUsage(raw: unknown): TokenUsageState {
  const state: TokenUsageState = { schema_version: 1, days: {}, updated_at: null };
  if (typeof raw !== 'object' || raw === null) return state;
  const { days, updated_at: updatedAt } = raw as Record<string, unknown>;
  if (typeof updatedAt === 'string') state.updated_at = updatedAt;
  if (typeof days !== 'object' || days === null || Array.isArray(days)) return state;
  for (const [date, value] of Object.entries(days)
    .sort(([a], [b]) => a.localeCompare(b))
    .slice(-MAX_DAYS)) {
    if (!/^\d{4}-\d{2}-\d{2}$/.test(date) || Number.isNaN(Date.parse(`${date}T00:00:00Z`))) continue;
    if (typeof value !== 'object' || value === null) continue;
    const day = row(value);
    if (day.total_tokens <= 0 && day.requests <= 0) continue;
    const sources: Record<string, UsageRow> = {};
    const rawSources = (value as Record<string, unknown>).sources;
    if (typeof rawSources === 'object' && rawSources !== null) {
      for (const [source, sourceValue] of Object.entries(rawSources)) {
        const parsed = row(sourceValue);
        if (parsed.total_tokens <= 0 && parsed.requests <= 0) continue;
        const key = SOURCES.has(source) ? source : 'system';
        sources[key] = sources[key] ? add(sources[key], parsed) : parsed;
      }
    }
    if (Object.keys(sources).length === 0) sources.user = { ...day };
    state.days[date] = { date, ...day, sources };
  }
  return state;
}

function add(a: UsageRow, b: UsageRow): UsageRow {
  return Object.fromEntries([...TOKEN_KEYS, ...REQUEST_KEYS].map((key) => [key, a[key] + b[key]])) as UsageRow;
}

export async function readTokenUsage(dataDir: string): Promise<TokenUsageState> {
  const path = tokenUsagePath(dataDir);
  try {
    if ((await stat(path)).size > MAX_FILE_BYTES) return normalizeTokenUsage(undefined);
    return normalizeTokenUsage(JSON.parse(await readFile(path, 'utf8')));
  } catch {
    return normalizeTokenUsage(undefined);
  }
}

/** The calendar day of `now` in `timeZone` (UTC when the zone is unknown). */
export function localDay(now: Date, timeZone?: string): string {
  const format = (zone: string) =>
    new Intl.DateTimeFormat('en-CA', { timeZone: zone, year: 'numeric', month: '2-digit', day: '2-digit' }).format(now);
  try {
    return format(timeZone || 'UTC');
  } catch {
    return format('UTC');
  }
}

/** nanobot's source of a session: dream, cron (and heartbeat), api, system, or a user's chat. */
export function usageSource(sessionKey: string): string {
  if (sessionKey.startsWith('dream:')) return 'dream';
  if (sessionKey === 'heartbeat' || sessionKey.startsWith('cron:')) return 'cron';
  if (sessionKey.startsWith('api:')) return 'api';
  if (sessionKey.startsWith('system:')) return 'system';
  return 'user';
}

export interface RecordedUsage {
  promptTokens: number;
  completionTokens: number;
  cachedTokens?: number;
  /** Model requests the turn made. */
  requests: number;
}

const queues = new Map<string, Promise<unknown>>();

/** Adds one turn's usage to its day; writes one at a time per file (atomic replace, 0600). */
export function recordTokenUsage(
  dataDir: string,
  sessionKey: string,
  usage: RecordedUsage,
  options: { timeZone?: string; now?: Date } = {},
): Promise<void> {
  const total = count(usage.promptTokens) + count(usage.completionTokens);
  if (total <= 0) return Promise.resolve();
  const path = tokenUsagePath(dataDir);
  const run = async () => {
    const state = await readTokenUsage(dataDir);
    const date = localDay(options.now ?? new Date(), options.timeZone);
    const turn = row({
      prompt_tokens: usage.promptTokens,
      completion_tokens: usage.completionTokens,
      cached_tokens: usage.cachedTokens ?? 0,
      total_tokens: total,
      provider_tokens: total,
      requests: Math.max(1, usage.requests),
      provider_requests: Math.max(1, usage.requests),
    });
    const day = state.days[date];
    const source = usageSource(sessionKey);
    const sources = { ...(day?.sources ?? {}) };
    sources[source] = sources[source] ? add(sources[source], turn) : turn;
    state.days[date] = { date, ...(day ? add(day, turn) : turn), sources };
    const kept = Object.keys(state.days).sort().slice(-MAX_DAYS);
    state.days = Object.fromEntries(kept.map((key) => [key, state.days[key] as DayRow]));
    state.updated_at = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
    const text = `${JSON.stringify(state, null, 2)}\n`;
    if (text.length > MAX_FILE_BYTES) return;
    await writeFileAtomic(path, text, 0o600);
  };
  const next = (queues.get(path) ?? Promise.resolve()).then(run, run);
  const settled = next.catch(() => undefined);
  queues.set(path, settled);
  void settled.then(() => {
    if (queues.get(path) === settled) queues.delete(path);
  });
  return next;
}

/** nanobot's `usage` payload (`GET /api/settings/usage`): the days of the last year and its streak counters. */
export function tokenUsagePayload(state: TokenUsageState, options: { timeZone?: string; now?: Date } = {}) {
  const today = localDay(options.now ?? new Date(), options.timeZone);
  const dayOffset = (days: number) => {
    const at = new Date(`${today}T00:00:00Z`);
    at.setUTCDate(at.getUTCDate() - days);
    return at.toISOString().slice(0, 10);
  };
  const rows = Object.values(state.days).sort((a, b) => a.date.localeCompare(b.date));
  const within = (from: string) => rows.filter((day) => day.date >= from && day.date <= today);
  const last30 = within(dayOffset(29));
  const active = new Set(rows.filter((day) => day.total_tokens > 0).map((day) => day.date));
  let current = 0;
  while (active.has(dayOffset(current))) current += 1;
  let longest = 0;
  let running = 0;
  let previous: string | undefined;
  for (const date of [...active].sort()) {
    running = previous && nextDay(previous) === date ? running + 1 : 1;
    longest = Math.max(longest, running);
    previous = date;
  }
  const sum = (list: DayRow[], key: Counter) => list.reduce((total, day) => total + day[key], 0);
  return {
    days: within(dayOffset(370)),
    total_tokens: sum(rows, 'total_tokens'),
    total_tokens_30d: sum(last30, 'total_tokens'),
    total_tokens_365d: sum(within(dayOffset(364)), 'total_tokens'),
    peak_day_tokens: rows.reduce((peak, day) => Math.max(peak, day.total_tokens), 0),
    current_streak_days: current,
    longest_streak_days: longest,
    active_days_30d: last30.filter((day) => day.total_tokens > 0).length,
    requests_30d: sum(last30, 'requests'),
    updated_at: state.updated_at,
  };
}

function nextDay(date: string): string {
  const at = new Date(`${date}T00:00:00Z`);
  at.setUTCDate(at.getUTCDate() + 1);
  return at.toISOString().slice(0, 10);
}
