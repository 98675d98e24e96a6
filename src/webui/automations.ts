/**
 * Automations in nanobot's WebUI shapes (nanobot/webui/session_automations.py; the client is webui/src/lib/api.ts):
 *   GET /api/webui/automations                 every chat's cron jobs and local triggers, with details
 *   GET /api/sessions/<key>/automations         one chat's (sessions-api.ts answers it with `sessionAutomations`)
 *   webui_request automation.{enable,disable,delete,run,update} {id, values?} → the full list again
 * Changes go through the gateway's running cron service and the trigger store (both lock the files they write), so
 * the scheduler sees them at once; `run` fires the job as its schedule would, and its answer goes to its chat.
 */
import { z } from 'zod';
import type { WebUiBackend } from '../channels/websocket/backend.js';
import type { CronJobEdit, CronService } from '../cron/service.js';
import { CronError, type CronJob, isBoundJob, isProtectedJob, type ScheduleInput } from '../cron/types.js';
import type { LocalTrigger, LocalTriggerStore } from '../triggers/local-store.js';
import { errorMessage } from '../util/errors.js';
import type { Logger } from '../util/log.js';
import { type ActionHandler, WebuiApiError, type WebuiApiModule } from './api.js';

/** What the automations API acts through; the gateway's backend gives both, a bare channel neither. */
export interface AutomationServices {
  cron?: CronService;
  triggers?: LocalTriggerStore;
  log?: Logger;
}

type Row = Record<string, unknown>;
type SessionInfo = ReadonlyMap<string, { title: string; preview: string }>;
const WEBSOCKET = 'websocket';
/** nanobot shows this many recent runs per job. */
const HISTORY_SHOWN = 5;

function services(backend: WebUiBackend): AutomationServices {
  return backend.automations?.() ?? {};
}

async function cronJobs(backend: WebUiBackend): Promise<CronJob[]> {
  const { cron } = services(backend);
  return cron ? cron.list() : backend.cronJobs();
}

async function triggers(backend: WebUiBackend): Promise<LocalTrigger[]> {
  return (await services(backend).triggers?.list()) ?? [];
}

/** One chat's automations (nanobot's session_automation_jobs): bound cron jobs and triggers of that session. */
export async function sessionAutomationRows(backend: WebUiBackend, sessionKey: string): Promise<Row[]> {
  const jobs = (await cronJobs(backend)).filter((job) => isBoundJob(job) && job.payload.sessionKey === sessionKey);
  const local = (await triggers(backend)).filter((trigger) => trigger.sessionKey === sessionKey);
  return [...jobs.map((job) => cronRow(job)), ...local.map((trigger) => triggerRow(trigger))];
}

/**
 * Removes one chat's automations before the chat is deleted (nanobot's `session.delete` with `delete_automations`),
 * through the running services; without them nothing can be removed and the delete is refused.
 */
export async function removeSessionAutomations(backend: WebUiBackend, sessionKey: string): Promise<void> {
  const { cron, triggers: store } = services(backend);
  const jobs = (await cronJobs(backend)).filter((job) => isBoundJob(job) && job.payload.sessionKey === sessionKey);
  const local = (await triggers(backend)).filter((trigger) => trigger.sessionKey === sessionKey);
  if (jobs.length && !cron) refuse(503, 'automation service unavailable');
  for (const job of jobs) await cron?.remove(job.id);
  for (const trigger of local) await store?.delete(trigger.id);
}

/** Every automation with details (nanobot's all_automations_payload): `{jobs: SessionAutomationJob[]}`. */
export async function allAutomations(backend: WebUiBackend): Promise<{ jobs: Row[] }> {
  const sessions: Map<string, { title: string; preview: string }> = new Map();
  for (const summary of await backend.sessions().list())
    sessions.set(summary.key, { title: summary.title ?? '', preview: summary.preview ?? '' });
  const jobs = (await cronJobs(backend)).map((job) => cronRow(job, sessions));
  const local = (await triggers(backend)).map((trigger) => triggerRow(trigger, sessions));
  return { jobs: [...jobs, ...local] };
}

/** A cron job as nanobot's SessionAutomationJob; `sessions` given = the detailed form of the all-chats list. */
export function cronRow(job: CronJob, sessions?: SessionInfo): Row {
  const row: Row = {
    id: job.id,
    name: job.name,
    enabled: job.enabled,
    schedule: {
      kind: job.schedule.kind,
      at_ms: job.schedule.atMs ?? null,
      every_ms: job.schedule.everyMs ?? null,
      expr: job.schedule.expr ?? null,
      tz: job.schedule.tz ?? null,
    },
    payload: { message: job.payload.message },
    state: { next_run_at_ms: job.state.nextRunAtMs ?? null, last_status: job.state.lastStatus ?? null, pending: false },
  };
  if (!sessions) return row;
  const { state } = job;
  return {
    ...row,
    protected: isProtectedJob(job),
    delete_after_run: job.deleteAfterRun,
    created_at_ms: job.createdAtMs,
    updated_at_ms: job.updatedAtMs,
    payload: { message: job.payload.message, kind: job.payload.kind },
    state: {
      ...(row.state as Row),
      last_run_at_ms: state.lastRunAtMs ?? null,
      last_error: state.lastError ?? null,
      run_history: state.runHistory.slice(-HISTORY_SHOWN).map((run) => ({
        run_at_ms: run.runAtMs,
        status: run.status,
        duration_ms: run.durationMs,
        error: run.error ?? null,
      })),
    },
    origin: originOf(job.payload.originChannel, job.payload.originChatId, undefined, sessions),
  };
}

/** A local trigger as nanobot lists it: kind `local_trigger`, schedule kind `local`, run by its CLI command. */
export function triggerRow(trigger: LocalTrigger, sessions?: SessionInfo): Row {
  const command = `nanobot trigger ${trigger.id} "message"`;
  const row: Row = {
    id: trigger.id,
    name: trigger.name,
    enabled: trigger.enabled,
    kind: 'local_trigger',
    schedule: { kind: 'local', at_ms: null, every_ms: null, expr: null, tz: null },
    payload: { kind: 'local_trigger', message: trigger.lastMessage || command, command },
    state: { next_run_at_ms: null, last_status: trigger.lastStatus ?? null, pending: false },
  };
  if (!sessions) return row;
  return {
    ...row,
    protected: false,
    delete_after_run: false,
    created_at_ms: trigger.createdAtMs ?? null,
    updated_at_ms: trigger.updatedAtMs ?? null,
    state: {
      ...(row.state as Row),
      last_run_at_ms: trigger.lastRunAtMs ?? null,
      last_error: trigger.lastError ?? null,
      run_history: (trigger.runHistory ?? []).slice(-HISTORY_SHOWN).map((run) => ({
        run_at_ms: run.runAtMs ?? 0,
        status: run.status,
        duration_ms: 0,
        error: run.error ?? null,
      })),
    },
    origin: originOf(trigger.channel, trigger.chatId, trigger.sessionKey, sessions),
    trigger: { id: trigger.id, command },
  };
}

/** Where the automation answers: a WebUI chat with its title and preview, another channel by name only. */
function originOf(
  channel: string | null | undefined,
  chatId: string | null | undefined,
  sessionKey: string | null | undefined,
  sessions: SessionInfo,
): Row | null {
  if (!channel || !chatId) return null;
  if (channel !== WEBSOCKET) return { channel, title: '', preview: '' };
  const key = sessionKey || `${channel}:${chatId}`;
  const info = sessions.get(key);
  return { session_key: key, channel, chat_id: chatId, title: info?.title ?? '', preview: info?.preview ?? '' };
}

// ── actions ──────────────────────────────────────────────────────────────────────────────────────────────────

const TargetSchema = z.looseObject({ id: z.unknown().optional(), job_id: z.unknown().optional() });
const positiveInt = z.number().int().positive();
const ScheduleSchema = z.discriminatedUnion('kind', [
  z.looseObject({ kind: z.literal('every'), every_ms: positiveInt }),
  z.looseObject({
    kind: z.literal('cron'),
    expr: z.string().trim().min(1).max(200),
    tz: z.string().trim().max(100).nullish(),
  }),
  z.looseObject({ kind: z.literal('at'), at_ms: positiveInt }),
]);
/** Longer than any name or prompt a user types; more is a mistake (or a flood) and would bloat jobs.json. */
const MAX_NAME = 200;
const MAX_MESSAGE = 20_000;
const ValuesSchema = z.looseObject({
  name: z.string().trim().min(1, 'name cannot be empty').max(MAX_NAME).optional(),
  message: z.string().trim().min(1, 'message cannot be empty').max(MAX_MESSAGE).optional(),
  schedule: z.unknown().optional(),
});

function targetId(payload: Readonly<Record<string, unknown>>): string {
  const { id, job_id } = TargetSchema.parse(payload);
  const raw = typeof id === 'string' && id.trim() ? id : job_id;
  if (typeof raw !== 'string' || !raw.trim()) throw new WebuiApiError(400, 'missing automation id');
  return raw.trim();
}

export function refuse(status: number, message: string): never {
  throw new WebuiApiError(status, message);
}

type Verb = 'enable' | 'disable' | 'delete' | 'run' | 'update';

function action(verb: Verb): ActionHandler {
  return async ({ backend }, payload) => {
    const { cron, triggers: store, log } = services(backend);
    if (!cron && !store) refuse(503, 'automation service unavailable');
    const id = targetId(payload);
    const trigger = await store?.get(id);
    try {
      if (trigger && store) await triggerAction(store, trigger, verb, payload);
      else if (cron) await cronAction(cron, id, verb, payload, log);
      else refuse(404, 'automation not found');
    } catch (error) {
      if (error instanceof CronError) refuse(400, error.hint ? `${error.message} ${error.hint}` : error.message);
      throw error;
    }
    return allAutomations(backend);
  };
}

async function triggerAction(
  store: LocalTriggerStore,
  trigger: LocalTrigger,
  verb: Verb,
  payload: Readonly<Record<string, unknown>>,
): Promise<void> {
  let changed: LocalTrigger | boolean | undefined = true;
  if (verb === 'enable' || verb === 'disable') changed = await store.change(trigger.id, { enabled: verb === 'enable' });
  else if (verb === 'delete') changed = await store.delete(trigger.id);
  else if (verb === 'run') refuse(409, 'local trigger requires a CLI message');
  else {
    const values = updateValues(payload);
    if ('message' in values || 'schedule' in values) refuse(400, 'local trigger updates only support name');
    const { name } = parseValues(values);
    if (name) changed = await store.change(trigger.id, { name });
  }
  if (!changed) refuse(404, 'automation not found');
}

async function cronAction(
  cron: CronService,
  id: string,
  verb: Verb,
  payload: Readonly<Record<string, unknown>>,
  log: Logger | undefined,
): Promise<void> {
  const job = await cron.get(id);
  if (!job) refuse(404, 'automation not found');
  if (isProtectedJob(job)) refuse(403, 'system automation is protected');
  if ((verb === 'enable' || verb === 'run') && !isBoundJob(job)) refuse(409, 'automation has no linked chat');
  let changed: CronJob | undefined = job;
  if (verb === 'enable' || verb === 'disable') changed = await cron.setEnabled(id, verb === 'enable');
  else if (verb === 'delete') changed = await cron.remove(id);
  else if (verb === 'run') {
    if (!job.enabled) refuse(409, 'automation is disabled');
    if (cron.isRunning(id)) refuse(409, 'automation is already running');
    // Fired, not awaited (a turn can take minutes): its answer reaches the chat the job is bound to.
    void cron.runNow(id).then(
      (result) => {
        if (result.status === 'error') log?.warn(`webui: run of automation ${id} failed: ${result.error ?? ''}`);
      },
      (error: unknown) => log?.warn(`webui: run of automation ${id} failed: ${errorMessage(error)}`),
    );
  } else {
    const edit = cronEdit(job, updateValues(payload));
    if (Object.keys(edit).length) changed = await cron.edit(id, edit);
  }
  if (!changed) refuse(404, 'automation not found');
}

/** `values` of an update: absent = nothing to change (as nanobot); anything but an object is refused. */
function updateValues(payload: Readonly<Record<string, unknown>>): Record<string, unknown> {
  if (!('values' in payload)) return {};
  const { values } = payload;
  if (typeof values !== 'object' || values === null || Array.isArray(values))
    refuse(400, 'invalid automation update payload');
  return values as Record<string, unknown>;
}

function parseValues(values: Record<string, unknown>): z.infer<typeof ValuesSchema> {
  const parsed = ValuesSchema.safeParse(values);
  if (!parsed.success) refuse(400, describe(parsed.error));
  return parsed.data;
}

function cronEdit(job: CronJob, values: Record<string, unknown>): CronJobEdit {
  const { name, message, schedule } = parseValues(values);
  const edit: CronJobEdit = {};
  if (name) edit.name = name;
  if (message) edit.payloadMessage = message;
  if (schedule !== undefined) {
    const wanted = scheduleInput(schedule);
    // The form sends the schedule back unchanged with every edit: a one-time job already due keeps its time.
    if (!sameSchedule(wanted, job)) edit.schedule = wanted;
  }
  return edit;
}

export function scheduleInput(raw: unknown): ScheduleInput {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) refuse(400, 'schedule must be an object');
  const parsed = ScheduleSchema.safeParse(raw);
  if (!parsed.success) refuse(400, `invalid schedule: ${describe(parsed.error)}`);
  const s = parsed.data;
  if (s.kind === 'every') return { kind: 'every', everyMs: s.every_ms };
  if (s.kind === 'at') return { kind: 'at', atMs: s.at_ms };
  return { kind: 'cron', expr: s.expr, tz: s.tz || null };
}

function sameSchedule(wanted: ScheduleInput, job: CronJob): boolean {
  const current = job.schedule;
  if (wanted.kind !== current.kind) return false;
  if (wanted.kind === 'at') return wanted.atMs === current.atMs;
  if (wanted.kind === 'every') return wanted.everyMs === current.everyMs;
  return wanted.expr === (current.expr ?? '') && (wanted.tz || null) === (current.tz || null);
}

export function describe(error: z.ZodError): string {
  return error.issues.map((issue) => `${issue.path.join('.') || 'value'}: ${issue.message}`).join('; ');
}

export const automationsModule: WebuiApiModule = {
  routes: { 'webui/automations': async ({ backend }) => allAutomations(backend) },
  actions: {
    'automation.enable': action('enable'),
    'automation.disable': action('disable'),
    'automation.delete': action('delete'),
    'automation.run': action('run'),
    'automation.update': action('update'),
  },
};
