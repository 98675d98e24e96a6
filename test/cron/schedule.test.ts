import { describe, expect, it } from 'vitest';
import {
  describeSchedule,
  formatInstant,
  nextRunAt,
  parseAtTime,
  toStoredSchedule,
  validateSchedule,
} from '../../src/cron/schedule.js';
import { CronError } from '../../src/cron/types.js';

const ms = Date.parse;
const iso = (value: number | null) => (value === null ? null : new Date(value).toISOString());

function successiveRuns(expr: string, tz: string, fromIso: string, count: number): string[] {
  const schedule = toStoredSchedule({ kind: 'cron', expr, tz });
  const out: string[] = [];
  let now = ms(fromIso);
  for (let i = 0; i < count; i++) {
    now = nextRunAt(schedule, { nowMs: now })!;
    out.push(iso(now)!);
  }
  return out;
}

describe('nextRunAt', () => {
  it('keeps 09:00 Berlin wall time across the March DST change (CET → CEST)', () => {
    // 2026-03-29 is the last Sunday of March: 09:00 is 08:00Z before and 07:00Z from that day on.
    expect(successiveRuns('0 9 * * *', 'Europe/Berlin', '2026-03-27T12:00:00Z', 3)).toEqual([
      '2026-03-28T08:00:00.000Z',
      '2026-03-29T07:00:00.000Z',
      '2026-03-30T07:00:00.000Z',
    ]);
  });

  it('keeps 09:00 Berlin wall time across the October DST change (CEST → CET)', () => {
    expect(successiveRuns('0 9 * * *', 'Europe/Berlin', '2026-10-24T12:00:00Z', 2)).toEqual([
      '2026-10-25T08:00:00.000Z',
      '2026-10-26T08:00:00.000Z',
    ]);
  });

  it('runs a job in the spring-forward gap once, at the first valid time, and a repeated hour once', () => {
    expect(successiveRuns('30 2 * * *', 'Europe/Berlin', '2026-03-28T12:00:00Z', 1)).toEqual([
      '2026-03-29T01:00:00.000Z', // 03:00 CEST
    ]);
    expect(successiveRuns('30 2 * * *', 'Europe/Berlin', '2026-10-24T12:00:00Z', 2)).toEqual([
      '2026-10-25T00:30:00.000Z',
      '2026-10-26T01:30:00.000Z',
    ]);
  });

  it('uses the default timezone for a cron job stored without tz', () => {
    const schedule = toStoredSchedule({ kind: 'cron', expr: '0 9 * * *' });
    const next = nextRunAt(schedule, { nowMs: ms('2026-06-01T00:00:00Z'), defaultTimezone: 'America/New_York' });
    expect(iso(next)).toBe('2026-06-01T13:00:00.000Z');
  });

  it('keeps every-jobs on their grid and skips missed slots to one run', () => {
    const schedule = toStoredSchedule({ kind: 'every', everyMs: 60_000 });
    expect(nextRunAt(schedule, { nowMs: 1_000 })).toBe(61_000);
    expect(nextRunAt(schedule, { nowMs: 61_500, previousDueMs: 61_000 })).toBe(121_000);
    expect(nextRunAt(schedule, { nowMs: 10 * 60_000 + 5, previousDueMs: 61_000 })).toBe(601_000);
  });

  it('returns the at-time for one-off jobs', () => {
    expect(nextRunAt(toStoredSchedule({ kind: 'at', atMs: 42 }), { nowMs: 0 })).toBe(42);
  });
});

describe('validateSchedule', () => {
  const check = (expr: string, tz?: string) => () =>
    validateSchedule(toStoredSchedule({ kind: 'cron', expr, ...(tz ? { tz } : {}) }));

  it('rejects bad expressions with a clear message and a hint', () => {
    expect(check('61 * * * *')).toThrow(/Invalid cron expression '61 \* \* \* \*': Invalid value for minute/);
    expect(check('0 9 * *')).toThrow(CronError);
    expect(check('0 0 9 * * *')).toThrow(/requires exactly 5 parts/);
    try {
      check('nonsense')();
    } catch (err) {
      expect((err as CronError).hint).toMatch(/5 fields/);
    }
  });

  it('rejects unknown timezones', () => {
    expect(check('0 9 * * *', 'Mars/Olympus')).toThrow("Unknown timezone 'Mars/Olympus'.");
  });

  it('rejects intervals under a second', () => {
    expect(() => validateSchedule(toStoredSchedule({ kind: 'every', everyMs: 10 }))).toThrow(/at least 1 second/);
  });

  it('accepts valid schedules', () => {
    expect(check('0 9 * * 1-5', 'Europe/Berlin')).not.toThrow();
    expect(check('@daily')).not.toThrow();
  });
});

describe('parseAtTime', () => {
  it('reads naive times in the agent timezone, DST included', () => {
    expect(iso(parseAtTime('2026-03-28T09:00', 'Europe/Berlin'))).toBe('2026-03-28T08:00:00.000Z');
    expect(iso(parseAtTime('2026-03-29 09:00:30', 'Europe/Berlin'))).toBe('2026-03-29T07:00:30.000Z');
    expect(iso(parseAtTime('2026-07-01T09:00', 'UTC'))).toBe('2026-07-01T09:00:00.000Z');
  });

  it('honours Z and explicit offsets', () => {
    expect(iso(parseAtTime('2026-03-28T09:00:00Z', 'Europe/Berlin'))).toBe('2026-03-28T09:00:00.000Z');
    expect(iso(parseAtTime('2026-03-28T09:00:00+05:30', 'UTC'))).toBe('2026-03-28T03:30:00.000Z');
    expect(iso(parseAtTime('2026-03-28T09:00-0200', 'UTC'))).toBe('2026-03-28T11:00:00.000Z');
  });

  it('rejects what is not a date-time', () => {
    expect(() => parseAtTime('tomorrow 9am', 'UTC')).toThrow(/Invalid time 'tomorrow 9am'/);
    expect(() => parseAtTime('2026-02-30T09:00', 'UTC')).toThrow(/no such date/);
    expect(() => parseAtTime('2026-02-01', 'UTC')).toThrow(CronError);
  });
});

describe('wording', () => {
  it('describes schedules in words', () => {
    expect(describeSchedule(toStoredSchedule({ kind: 'every', everyMs: 7_200_000 }), 'UTC')).toBe('every 2 hours');
    expect(describeSchedule(toStoredSchedule({ kind: 'every', everyMs: 60_000 }), 'UTC')).toBe('every minute');
    expect(describeSchedule(toStoredSchedule({ kind: 'cron', expr: '0 9 * * *', tz: 'Europe/Berlin' }), 'UTC')).toBe(
      'every day at 09:00 (Europe/Berlin)',
    );
    expect(describeSchedule(toStoredSchedule({ kind: 'cron', expr: '30 7 * * 1-5' }), 'UTC')).toBe(
      'on weekdays at 07:30 (UTC)',
    );
    expect(describeSchedule(toStoredSchedule({ kind: 'cron', expr: '0 9 1 * *' }), 'UTC')).toBe(
      "cron '0 9 1 * *' (UTC)",
    );
    expect(describeSchedule(toStoredSchedule({ kind: 'at', atMs: ms('2026-03-29T07:00:00Z') }), 'Europe/Berlin')).toBe(
      'once at 2026-03-29 09:00 (Europe/Berlin)',
    );
    expect(formatInstant(ms('2026-01-02T03:04:00Z'), 'UTC')).toBe('2026-01-02 03:04');
  });
});
