/**
 * The automations API's shapes as the page reads them (nanobot's SessionAutomationJob, src/webui/automations.ts),
 * and the time arithmetic the form needs: a wall time in a chosen timezone ⇄ the instant the gateway stores.
 */
export interface AutomationSchedule {
  kind: 'every' | 'cron' | 'at' | 'local';
  at_ms: number | null;
  every_ms: number | null;
  expr: string | null;
  tz: string | null;
}

export interface Automation {
  id: string;
  name: string;
  enabled: boolean;
  protected?: boolean;
  kind?: 'local_trigger';
  schedule: AutomationSchedule;
  payload: { message: string; kind?: string; command?: string };
  state: {
    next_run_at_ms: number | null;
    last_status: string | null;
    last_run_at_ms?: number | null;
    last_error?: string | null;
  };
  origin?: { session_key?: string; channel: string; chat_id?: string; title: string; preview: string } | null;
  trigger?: { id: string; command: string };
}

export interface AutomationsPayload {
  jobs: Automation[];
  /** automation.create: the new job's id. */
  id?: string;
}

export interface HeartbeatPayload {
  heartbeat: { enabled: boolean; interval_s: number; keep_recent_messages: number };
  timezone: string;
  file: { name: string; exists: boolean; content: string; max_bytes: number; problem: string | null };
  requires_restart: boolean;
}

/** What the add/edit form sends as `schedule` (the API's shape). */
export type ScheduleValue =
  | { kind: 'every'; every_ms: number }
  | { kind: 'cron'; expr: string; tz: string }
  | { kind: 'at'; at_ms: number };

/** Every IANA zone the browser knows, with UTC and the agent's own zone first. */
export function timezones(preferred: readonly string[]): string[] {
  const known = typeof Intl.supportedValuesOf === 'function' ? Intl.supportedValuesOf('timeZone') : [];
  return [...new Set([...preferred.filter(Boolean), 'UTC', ...known])];
}

function zoneParts(ms: number, tz: string): Record<string, number> {
  const parts = new Intl.DateTimeFormat('en-US', {
    timeZone: tz,
    hourCycle: 'h23',
    year: 'numeric',
    month: 'numeric',
    day: 'numeric',
    hour: 'numeric',
    minute: 'numeric',
    second: 'numeric',
  }).formatToParts(new Date(ms));
  const out: Record<string, number> = {};
  for (const part of parts) if (part.type !== 'literal') out[part.type] = Number(part.value);
  return out;
}

function offsetAt(ms: number, tz: string): number {
  const p = zoneParts(ms, tz);
  const asUtc = Date.UTC(p.year ?? 0, (p.month ?? 1) - 1, p.day ?? 1, p.hour ?? 0, p.minute ?? 0, p.second ?? 0);
  return asUtc - (ms - (((ms % 1000) + 1000) % 1000));
}

/** `2026-12-03T09:30` in `tz` → epoch ms (two passes settle a DST edge, as the gateway's own parser does). */
export function wallTimeToInstant(wall: string, tz: string): number | null {
  const match = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})$/.exec(wall);
  if (!match) return null;
  const [year, month, day, hour, minute] = match.slice(1).map(Number) as [number, number, number, number, number];
  const wallMs = Date.UTC(year, month - 1, day, hour, minute);
  const guess = wallMs - offsetAt(wallMs, tz);
  return wallMs - offsetAt(guess, tz);
}

/** Epoch ms → the `datetime-local` value of that instant in `tz`. */
export function instantToWallTime(ms: number, tz: string): string {
  const p = zoneParts(ms, tz);
  const two = (n: number | undefined) => String(n ?? 0).padStart(2, '0');
  return `${p.year}-${two(p.month)}-${two(p.day)}T${two(p.hour)}:${two(p.minute)}`;
}

export const UNITS = { minute: 60_000, hour: 3_600_000, day: 86_400_000 } as const;
export type IntervalUnit = keyof typeof UNITS;

/** An interval in the largest unit that divides it (90 minutes stay minutes). */
export function splitInterval(ms: number): { count: number; unit: IntervalUnit | 'second' } {
  for (const unit of ['day', 'hour', 'minute'] as const)
    if (ms % UNITS[unit] === 0) return { count: ms / UNITS[unit], unit };
  return { count: Math.round(ms / 1000), unit: 'second' };
}

/** The chat's session key, as the gateway names a WebUI chat's session. */
export const sessionKeyOf = (chatId: string) => `websocket:${chatId}`;
