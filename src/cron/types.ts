/**
 * The shape of `<workspace>/cron/jobs.json`, nanobot's format: `{"version":1,"jobs":[…]}` with camelCase fields.
 * Objects are loose so fields this version does not know (nanobot's legacy `deliver`/`to`, anything newer) survive a
 * load/save round trip.
 */
import { z } from 'zod';
import { UserError } from '../util/errors.js';

/** Jobs the system owns; the `cron` tool and `nanobot cron remove` refuse to delete them. */
export const PROTECTED_JOB_NAMES: readonly string[] = ['dream', 'heartbeat'];
/** nanobot keeps this many run records per job. */
export const MAX_RUN_HISTORY = 20;

const optionalNumber = z.number().nullish();
const optionalString = z.string().nullish();

export const CronScheduleSchema = z.looseObject({
  kind: z.enum(['at', 'every', 'cron']),
  atMs: optionalNumber,
  everyMs: optionalNumber,
  expr: optionalString,
  tz: optionalString,
});

export const CronPayloadSchema = z.looseObject({
  /** `system_event`: deliver `message` as-is, no LLM. `agent_turn`: run `message` as an agent turn. */
  kind: z.enum(['system_event', 'agent_turn']).default('agent_turn'),
  message: z.string().default(''),
  sessionKey: optionalString,
  originChannel: optionalString,
  originChatId: optionalString,
  /** Agent tasks: the `modelPresets` entry this job's turns use instead of the session's model (ours). */
  modelPreset: optionalString,
});

export const CronRunRecordSchema = z.looseObject({
  runAtMs: z.number(),
  status: z.string(),
  durationMs: z.number().default(0),
  error: optionalString,
});

export const CronJobStateSchema = z.looseObject({
  nextRunAtMs: optionalNumber,
  lastRunAtMs: optionalNumber,
  lastStatus: optionalString,
  lastError: optionalString,
  runHistory: z.array(CronRunRecordSchema).default([]),
});

export const CronJobSchema = z.looseObject({
  id: z.string().min(1),
  name: z.string(),
  enabled: z.boolean().default(true),
  schedule: CronScheduleSchema,
  payload: CronPayloadSchema.prefault({}),
  state: CronJobStateSchema.prefault({}),
  createdAtMs: z.number().default(0),
  updatedAtMs: z.number().default(0),
  deleteAfterRun: z.boolean().default(false),
});

export type CronSchedule = z.infer<typeof CronScheduleSchema>;
export type CronPayload = z.infer<typeof CronPayloadSchema>;
export type CronRunRecord = z.infer<typeof CronRunRecordSchema>;
export type CronJobState = z.infer<typeof CronJobStateSchema>;
export type CronJob = z.infer<typeof CronJobSchema>;

/** A schedule as callers give it; stored with the other fields set to null, as nanobot writes them. */
export type ScheduleInput =
  | { kind: 'every'; everyMs: number }
  | { kind: 'cron'; expr: string; tz?: string | null }
  | { kind: 'at'; atMs: number };

export interface PayloadInput {
  kind: 'system_event' | 'agent_turn';
  message: string;
  sessionKey?: string | null;
  originChannel?: string | null;
  originChatId?: string | null;
  modelPreset?: string | null;
}

export interface NewCronJob {
  name: string;
  schedule: ScheduleInput;
  payload: PayloadInput;
  /** Default: true for `at` jobs, which run once. */
  deleteAfterRun?: boolean;
}

export type CronRunStatus = 'ok' | 'error' | 'silent';

/** What the runner reports; `silent` = the run had nothing worth telling the user (nothing was sent). */
export interface CronRunResult {
  status: CronRunStatus;
  error?: string;
}

/** Executes a job's payload. Called by the service with a copy of the job. */
export type CronRunHandler = (job: CronJob) => Promise<CronRunResult>;

/** A user-facing cron problem (bad schedule, unknown id, unreadable jobs.json). The CLI prints message + hint. */
export class CronError extends UserError {
  override name = 'CronError';
}

/** Where a job reports to: nanobot's origin fields, else the legacy `channel`/`to` pair. */
export function jobOrigin(job: CronJob): { channel: string; chatId: string } | undefined {
  const payload = job.payload as CronPayload & { channel?: unknown; to?: unknown };
  const channel = payload.originChannel ?? (typeof payload.channel === 'string' ? payload.channel : undefined);
  const chatId = payload.originChatId ?? (typeof payload.to === 'string' ? payload.to : undefined);
  return channel && chatId ? { channel, chatId } : undefined;
}

export function isProtectedJob(job: Pick<CronJob, 'id' | 'name'>): boolean {
  return PROTECTED_JOB_NAMES.includes(job.id) || PROTECTED_JOB_NAMES.includes(job.name);
}
