/**
 * The shape of `<workspace>/cron/jobs.json`, nanobot's format: `{"version":1,"jobs":[…]}` with camelCase fields.
 * Objects are loose so fields this version does not know (nanobot's legacy `deliver`/`to`, anything newer) survive a
 * load/save round trip.
 */
import { z } from 'zod';
import { UserError } from '../util/errors.js';

/**
 * nanobot's protected system jobs (`payload.kind: "system_event"`), which its gateway registers and runs by name. Our
 * gateway runs Dream and the heartbeat with its own services, so these are shown but never run from jobs.json.
 */
export const SYSTEM_JOB_IDS: readonly string[] = ['dream', 'heartbeat'];
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

/** Our own per-job settings, kept in `originMetadata` (a free map in nanobot's format, which its readers keep). */
export const NANOBOT_TS_META = 'nanobotTs';

export const CronPayloadSchema = z.looseObject({
  /**
   * nanobot's two kinds: `agent_turn` (every user job: a turn in the chat session it is bound to) and `system_event`
   * (a protected system job, run by name: dream, heartbeat).
   */
  kind: z.enum(['system_event', 'agent_turn']).default('agent_turn'),
  message: z.string().default(''),
  /** nanobot's legacy delivery fields (before jobs were bound to a session); migrated on load, as nanobot does. */
  deliver: z.boolean().nullish(),
  channel: optionalString,
  to: optionalString,
  channelMeta: z.record(z.string(), z.unknown()).nullish(),
  sessionKey: optionalString,
  originChannel: optionalString,
  originChatId: optionalString,
  originMetadata: z.record(z.string(), z.unknown()).nullish(),
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

/** A user job is always bound to a chat session (nanobot refuses to run one that is not). */
export interface PayloadInput {
  message: string;
  /** Deliver `message` verbatim, without a model call (ours; nanobot runs every job as an agent turn). */
  reminder?: boolean;
  sessionKey: string;
  originChannel: string;
  originChatId: string;
  /** A `modelPresets` name the agent turn runs with (ours). */
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

/** Where a job reports to: nanobot's origin fields. */
export function jobOrigin(job: CronJob): { channel: string; chatId: string } | undefined {
  const { originChannel: channel, originChatId: chatId } = job.payload;
  return channel && chatId ? { channel, chatId } : undefined;
}

/** nanobot's protected system jobs: shown, never removed or edited by a user, run by name. */
export function isProtectedJob(job: Pick<CronJob, 'payload'>): boolean {
  return job.payload.kind === 'system_event';
}

/** nanobot's rule for a job that can run: an agent turn with a session and a chat, and no legacy delivery fields. */
export function isBoundJob(job: CronJob): boolean {
  const p = job.payload;
  if (p.kind !== 'agent_turn' || !p.sessionKey || !p.originChannel || !p.originChatId) return false;
  return !hasLegacyDelivery(job);
}

export function hasLegacyDelivery(job: CronJob): boolean {
  const p = job.payload;
  return Boolean(p.deliver || p.channel || p.to || (p.channelMeta && Object.keys(p.channelMeta).length));
}

interface OwnSettings {
  reminder?: boolean;
  modelPreset?: string;
}

function ownSettings(job: CronJob): OwnSettings {
  const raw = job.payload.originMetadata?.[NANOBOT_TS_META];
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) return {};
  const { reminder, modelPreset } = raw as Record<string, unknown>;
  return {
    ...(reminder === true ? { reminder: true } : {}),
    ...(typeof modelPreset === 'string' && modelPreset ? { modelPreset } : {}),
  };
}

/** A plain reminder: its message goes to the chat verbatim (ours; nanobot runs it as an agent turn). */
export function isReminder(job: CronJob): boolean {
  return job.payload.kind === 'agent_turn' && ownSettings(job).reminder === true;
}

export function jobModelPreset(job: CronJob): string | undefined {
  return ownSettings(job).modelPreset;
}

/** `originMetadata` carrying our settings (none: the metadata as given). */
export function withOwnSettings(
  metadata: Record<string, unknown> | null | undefined,
  settings: OwnSettings,
): Record<string, unknown> {
  const rest = { ...(metadata ?? {}) };
  delete rest[NANOBOT_TS_META];
  const own = {
    ...(settings.reminder ? { reminder: true } : {}),
    ...(settings.modelPreset ? { modelPreset: settings.modelPreset } : {}),
  };
  return Object.keys(own).length ? { ...rest, [NANOBOT_TS_META]: own } : rest;
}
