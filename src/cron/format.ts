/**
 * nanobot's cron formats, field for field: a job as `jobs.json` holds it (camelCase, nanobot's key order) and as
 * `action.jsonl` holds it (the snake_case dataclass dump nanobot's CLI appends, read back with strict keyword
 * arguments, so a key nanobot does not know there makes it drop the whole line). Plus the migrations nanobot makes
 * when it loads a job, and ours: earlier versions of ours wrote plain reminders as `system_event` (nanobot's
 * protected system kind) and kept the model preset in a payload key of its own.
 */
import {
  type CronJob,
  hasLegacyDelivery,
  isBoundJob,
  NANOBOT_TS_META,
  SYSTEM_JOB_IDS,
  withOwnSettings,
} from './types.js';

/** nanobot's reason, word for word, so both show the same state for a job neither can run. */
export const UNBOUND_AGENT_JOB_REASON =
  'agent cron payload is missing bound session delivery context; recreate it from a chat session';
const MALFORMED_LEGACY_REASON = 'legacy cron payload is missing channel/to; recreate it from a chat session';

const KNOWN = {
  job: ['id', 'name', 'enabled', 'schedule', 'payload', 'state', 'createdAtMs', 'updatedAtMs', 'deleteAfterRun'],
  schedule: ['kind', 'atMs', 'everyMs', 'expr', 'tz'],
  payload: [
    'kind',
    'message',
    'deliver',
    'channel',
    'to',
    'channelMeta',
    'sessionKey',
    'originChannel',
    'originChatId',
    'originMetadata',
  ],
  state: ['nextRunAtMs', 'lastRunAtMs', 'lastStatus', 'lastError', 'runHistory'],
  record: ['runAtMs', 'status', 'durationMs', 'error'],
} as const;

const snake = (camel: string) => camel.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

function ordered(
  value: Record<string, unknown>,
  keys: readonly string[],
  fill: (key: string) => unknown,
  extras: boolean,
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const key of keys) out[key] = key in value && value[key] !== undefined ? value[key] : fill(key);
  if (!extras) return out;
  // Fields this version does not know (a newer nanobot's) survive; snake_case twins of known keys do not.
  const known = new Set<string>([...keys, ...keys.map(snake)]);
  for (const [key, item] of Object.entries(value)) if (!known.has(key) && item !== undefined) out[key] = item;
  return out;
}

const DEFAULTS: Record<string, unknown> = {
  enabled: true,
  message: '',
  deliver: false,
  kind: 'agent_turn',
  runHistory: [],
  createdAtMs: 0,
  updatedAtMs: 0,
  deleteAfterRun: false,
  durationMs: 0,
};
const fillFor = (key: string): unknown => {
  if (key === 'channelMeta' || key === 'originMetadata') return {};
  return key in DEFAULTS ? DEFAULTS[key] : null;
};

/** One job as nanobot's jobs.json writes it: every field, nanobot's order, nulls explicit; unknown fields kept. */
export function toStoredJob(job: CronJob): Record<string, unknown> {
  const state = job.state as Record<string, unknown>;
  return ordered(
    {
      ...job,
      schedule: ordered(job.schedule, KNOWN.schedule, fillFor, true),
      payload: ordered(job.payload, KNOWN.payload, fillFor, true),
      state: ordered(
        { ...state, runHistory: job.state.runHistory.map((r) => ordered(r, KNOWN.record, fillFor, true)) },
        KNOWN.state,
        fillFor,
        true,
      ),
    },
    KNOWN.job,
    fillFor,
    true,
  );
}

function toSnake(value: Record<string, unknown>, keys: readonly string[]): Record<string, unknown> {
  const camel = ordered(value, keys, fillFor, false);
  return Object.fromEntries(Object.entries(camel).map(([key, item]) => [snake(key), item]));
}

/** One job as nanobot's `dataclasses.asdict` dumps it into action.jsonl: exactly its fields, nothing more. */
export function toActionParams(job: CronJob): Record<string, unknown> {
  return {
    ...toSnake(job as Record<string, unknown>, KNOWN.job),
    schedule: toSnake(job.schedule, KNOWN.schedule),
    payload: toSnake(job.payload, KNOWN.payload),
    state: {
      ...toSnake(job.state, KNOWN.state),
      run_history: job.state.runHistory.map((record) => toSnake(record, KNOWN.record)),
    },
  };
}

/**
 * The migrations nanobot applies when it loads a job, and ours, in place. Returns true when the job changed (a
 * running gateway saves it back). Runs on every load, so it must be idempotent.
 */
export function migrateJob(job: CronJob, nowMs: number): boolean {
  let changed = migrateOwnFormat(job);
  if (job.payload.kind === 'agent_turn' && hasLegacyDelivery(job)) {
    migrateLegacyDelivery(job, nowMs);
    changed = true;
  }
  return changed;
}

/** Our earlier versions: reminders as `system_event` with a message, and `payload.modelPreset`. */
function migrateOwnFormat(job: CronJob): boolean {
  const payload = job.payload as CronJob['payload'] & { modelPreset?: unknown };
  const oldReminder =
    payload.kind === 'system_event' && !SYSTEM_JOB_IDS.includes(job.id) && payload.message.trim() !== '';
  const oldPreset = 'modelPreset' in payload;
  if (!oldReminder && !oldPreset) return false;
  const preset = typeof payload.modelPreset === 'string' && payload.modelPreset ? payload.modelPreset : undefined;
  const own = payload.originMetadata?.[NANOBOT_TS_META];
  const settings = typeof own === 'object' && own !== null ? (own as { reminder?: boolean }) : {};
  payload.originMetadata = withOwnSettings(payload.originMetadata, {
    reminder: oldReminder || settings.reminder === true,
    ...(preset ? { modelPreset: preset } : {}),
  });
  if (oldReminder) payload.kind = 'agent_turn';
  delete payload.modelPreset;
  return true;
}

/** nanobot's migration of a pre-session job (`deliver`/`channel`/`to`) to a session-bound one. */
function migrateLegacyDelivery(job: CronJob, nowMs: number): void {
  const p = job.payload;
  if (!p.channel || !p.to) {
    Object.assign(p, { deliver: false, channel: null, to: null, channelMeta: {} });
    disable(job, MALFORMED_LEGACY_REASON);
    return;
  }
  p.sessionKey = p.sessionKey || `${p.channel}:${p.to}`;
  p.originChannel = p.originChannel || p.channel;
  p.originChatId = p.originChatId || p.to;
  if (!p.originMetadata || !Object.keys(p.originMetadata).length) p.originMetadata = { ...(p.channelMeta ?? {}) };
  Object.assign(p, { deliver: false, channel: null, to: null, channelMeta: {} });
  job.updatedAtMs = Math.max(job.updatedAtMs, nowMs);
}

function disable(job: CronJob, reason: string): void {
  job.enabled = false;
  job.state.nextRunAtMs = null;
  job.state.lastStatus = 'error';
  job.state.lastError = reason;
}

/**
 * What nanobot's running gateway does with an agent job that has no chat: disable it, with its reason. Returns true
 * when the job changed (a job already disabled that way is left alone).
 */
export function enforceBinding(job: CronJob, nowMs: number): boolean {
  if (job.payload.kind !== 'agent_turn' || isBoundJob(job)) return false;
  const s = job.state;
  if (!job.enabled && s.nextRunAtMs == null && s.lastStatus === 'error' && s.lastError) return false;
  disable(job, UNBOUND_AGENT_JOB_REASON);
  job.updatedAtMs = Math.max(job.updatedAtMs, nowMs);
  return true;
}
