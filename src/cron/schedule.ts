/**
 * Next-run arithmetic for the three schedule kinds, plus validation and wording. Cron expressions are parsed by
 * croner (5 fields, IANA timezones, DST-aware: a fixed-time job in a DST gap runs at the first valid time after it and
 * runs once when a wall time repeats). Nothing here reads the real clock: callers pass `nowMs`.
 */
import { Cron } from 'croner';
import { CronError, type CronSchedule, type ScheduleInput } from './types.js';

/** Shortest `every` interval accepted; anything faster is a bug or a flood. */
export const MIN_EVERY_MS = 1_000;

export function isValidTimezone(tz: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}

export function toStoredSchedule(input: ScheduleInput): CronSchedule {
  return {
    kind: input.kind,
    atMs: input.kind === 'at' ? input.atMs : null,
    everyMs: input.kind === 'every' ? input.everyMs : null,
    expr: input.kind === 'cron' ? input.expr.trim() : null,
    tz: input.kind === 'cron' ? (input.tz ?? null) : null,
  };
}

function parseCron(expr: string, tz: string | undefined): Cron {
  try {
    return new Cron(expr, { mode: '5-part', paused: true, ...(tz ? { timezone: tz } : {}) });
  } catch (err) {
    const detail = err instanceof Error ? err.message.replace(/^CronPattern:\s*/, '') : String(err);
    throw new CronError(
      `Invalid cron expression '${expr}': ${detail}`,
      "Use 5 fields: minute hour day-of-month month day-of-week, e.g. '0 9 * * 1-5' (09:00 on weekdays).",
    );
  }
}

/** Throws a CronError that says what is wrong with `schedule`; `defaultTimezone` stands in for a missing `tz`. */
export function validateSchedule(schedule: CronSchedule, defaultTimezone?: string): void {
  switch (schedule.kind) {
    case 'every': {
      const everyMs = schedule.everyMs;
      if (typeof everyMs !== 'number' || !Number.isFinite(everyMs) || everyMs < MIN_EVERY_MS)
        throw new CronError(`Invalid interval (${everyMs ?? 'none'} ms): it must be at least 1 second.`);
      return;
    }
    case 'at':
      if (typeof schedule.atMs !== 'number' || !Number.isFinite(schedule.atMs))
        throw new CronError('A one-time job needs a time (atMs).');
      return;
    case 'cron': {
      const expr = schedule.expr?.trim();
      if (!expr) throw new CronError('A cron job needs an expression.', "e.g. '0 9 * * *' for 09:00 every day.");
      const tz = schedule.tz ?? defaultTimezone;
      if (tz && !isValidTimezone(tz))
        throw new CronError(`Unknown timezone '${tz}'.`, "Use an IANA name such as 'Europe/Berlin' or 'UTC'.");
      parseCron(expr, tz);
      return;
    }
  }
}

export interface NextRunInput {
  nowMs: number;
  /** The due time that just fired; `every` jobs stay on its grid instead of drifting by each run's duration. */
  previousDueMs?: number | null;
  /** For cron jobs stored without `tz` (the agent timezone); else the host's local time. */
  defaultTimezone?: string;
}

/** The next instant the job should fire, or null when it never will again. Assumes a valid schedule. */
export function nextRunAt(schedule: CronSchedule, input: NextRunInput): number | null {
  const { nowMs, previousDueMs } = input;
  switch (schedule.kind) {
    case 'at':
      return schedule.atMs ?? null;
    case 'every': {
      const everyMs = schedule.everyMs;
      if (!everyMs || everyMs <= 0) return null;
      if (previousDueMs == null) return nowMs + everyMs;
      // Smallest previousDue + k·every that is in the future: one run after downtime, not one per missed slot.
      const steps = Math.max(1, Math.floor((nowMs - previousDueMs) / everyMs) + 1);
      return previousDueMs + steps * everyMs;
    }
    case 'cron': {
      if (!schedule.expr) return null;
      const cron = parseCron(schedule.expr, schedule.tz ?? input.defaultTimezone);
      return cron.nextRun(new Date(nowMs))?.getTime() ?? null;
    }
  }
}

const ISO_PATTERN =
  /^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,3})\d*)?)?\s*(Z|[+-]\d{2}(?::?\d{2})?)?$/i;

/**
 * Parses an ISO date-time. Values with `Z` or an offset are absolute; naive values are wall time in `timezone`
 * (nanobot: "naive values use the agent timezone").
 */
export function parseAtTime(text: string, timezone: string): number {
  const match = ISO_PATTERN.exec(text.trim());
  const hint = "Use ISO 8601, e.g. '2026-05-01T09:30' (agent timezone) or '2026-05-01T09:30:00+02:00'.";
  if (!match) throw new CronError(`Invalid time '${text}'.`, hint);
  const [year, month, day, hour, minute, second, millis] = match.slice(1, 8).map((part) => Number(part ?? 0)) as [
    number,
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  const wallMs = Date.UTC(year, month - 1, day, hour, minute, second, millis);
  const check = new Date(wallMs);
  if (check.getUTCMonth() !== month - 1 || check.getUTCDate() !== day || hour > 23 || minute > 59 || second > 59)
    throw new CronError(`Invalid time '${text}': no such date or time.`, hint);
  const offset = match[8];
  if (offset === undefined) {
    if (!isValidTimezone(timezone)) throw new CronError(`Unknown timezone '${timezone}'.`);
    return zonedWallTimeToUtc(wallMs, timezone);
  }
  if (offset.toUpperCase() === 'Z') return wallMs;
  const sign = offset.startsWith('-') ? -1 : 1;
  const digits = offset.slice(1).replace(':', '');
  const offsetMinutes = Number(digits.slice(0, 2)) * 60 + Number(digits.slice(2) || 0);
  return wallMs - sign * offsetMinutes * 60_000;
}

/** Offset of `timezone` from UTC at `utcMs`, in ms (Berlin in summer: +2 h). */
function timezoneOffsetMs(utcMs: number, timezone: string): number {
  const parts = new Intl.DateTimeFormat('en-US', {
    timeZone: timezone,
    hourCycle: 'h23',
    year: 'numeric',
    month: 'numeric',
    day: 'numeric',
    hour: 'numeric',
    minute: 'numeric',
    second: 'numeric',
  }).formatToParts(new Date(utcMs));
  const field = (type: string) => Number(parts.find((part) => part.type === type)?.value ?? 0);
  const asUtc = Date.UTC(
    field('year'),
    field('month') - 1,
    field('day'),
    field('hour'),
    field('minute'),
    field('second'),
  );
  return asUtc - (utcMs - (((utcMs % 1000) + 1000) % 1000));
}

/** Wall time (given as if it were UTC) in `timezone` → the real instant. Two passes settle DST edges. */
export function zonedWallTimeToUtc(wallMs: number, timezone: string): number {
  const guess = wallMs - timezoneOffsetMs(wallMs, timezone);
  return wallMs - timezoneOffsetMs(guess, timezone);
}

/** `2026-03-29 09:00` in `timezone`. */
export function formatInstant(ms: number, timezone: string): string {
  const tz = isValidTimezone(timezone) ? timezone : 'UTC';
  return new Intl.DateTimeFormat('sv-SE', { timeZone: tz, dateStyle: 'short', timeStyle: 'short' }).format(ms);
}

function plural(count: number, unit: string): string {
  return count === 1 ? unit : `${count} ${unit}s`;
}

export function describeInterval(everyMs: number): string {
  const seconds = Math.round(everyMs / 1000);
  if (seconds % 86_400 === 0) return `every ${plural(seconds / 86_400, 'day')}`;
  if (seconds % 3600 === 0) return `every ${plural(seconds / 3600, 'hour')}`;
  if (seconds % 60 === 0) return `every ${plural(seconds / 60, 'minute')}`;
  return `every ${plural(seconds, 'second')}`;
}

const WEEKDAYS: Record<string, string> = {
  '1-5': 'on weekdays',
  '0,6': 'on weekends',
  '6,0': 'on weekends',
};

/** Short words for common cron shapes; anything else is shown as the expression. */
function describeCron(expr: string): string {
  const fields = expr.trim().split(/\s+/);
  const [minute, hour, dom, month, dow] = fields;
  const isNumber = (value: string | undefined) => value !== undefined && /^\d{1,2}$/.test(value);
  if (fields.length === 5 && isNumber(minute) && isNumber(hour) && dom === '*' && month === '*') {
    const time = `${hour!.padStart(2, '0')}:${minute!.padStart(2, '0')}`;
    if (dow === '*') return `every day at ${time}`;
    const days = WEEKDAYS[dow ?? ''];
    if (days) return `${days} at ${time}`;
  }
  const everyMinutes = /^\*\/(\d+)$/.exec(minute ?? '');
  if (fields.length === 5 && everyMinutes && [hour, dom, month, dow].every((field) => field === '*'))
    return `every ${plural(Number(everyMinutes[1]), 'minute')}`;
  return `cron '${expr}'`;
}

/** `every 2 hours`, `every day at 09:00 (Europe/Berlin)`, `once at 2026-05-01 09:30 (UTC)`. */
export function describeSchedule(schedule: CronSchedule, timezone: string): string {
  switch (schedule.kind) {
    case 'every':
      return schedule.everyMs ? describeInterval(schedule.everyMs) : 'every ? (no interval)';
    case 'cron':
      return `${describeCron(schedule.expr ?? '')} (${schedule.tz ?? timezone})`;
    case 'at':
      return schedule.atMs == null
        ? 'once (no time)'
        : `once at ${formatInstant(schedule.atMs, timezone)} (${timezone})`;
  }
}
