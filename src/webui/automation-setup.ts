/**
 * What our WebUI's Automations page needs beyond nanobot's automation API (which has no "add" and no heartbeat
 * settings; its jobs are made by the agent's cron tool):
 *   webui_request automation.create {message, schedule, chat_id, channel?, name?, agent?, model_preset?}
 *                                   → the full list again, plus the new job's `id`
 *   GET /api/webui/automations/heartbeat  → {heartbeat: {enabled, interval_s, keep_recent_messages}, timezone,
 *                                            file: {name, exists, content, max_bytes}, requires_restart}
 *   webui_request automation.heartbeat.update {enabled?, interval_s?, keep_recent_messages?}  (config.json)
 *   webui_request automation.heartbeat_file.update {content}                                   (HEARTBEAT.md)
 * A job is checked as `nanobot cron add` checks it (src/cron/add.ts) and saved through the running cron service;
 * settings go through the config writer the CLI uses; HEARTBEAT.md through the workspace-file layer (a planted
 * link is refused, never followed).
 */
import { z } from 'zod';
import type { WebUiBackend } from '../channels/websocket/backend.js';
import { newJobFrom } from '../cron/add.js';
import { CronError } from '../cron/types.js';
import { WorkspaceFs, WorkspaceFsError } from '../security/workspace-fs.js';
import { FileWriteError } from '../util/errors.js';
import { type ActionHandler, WebuiApiError, type WebuiApiModule } from './api.js';
import { allAutomations, describe, refuse, scheduleInput } from './automations.js';
import { configOf, objectAt } from './settings-write.js';

const HEARTBEAT_FILE = 'HEARTBEAT.md';
/** A task list, not a document: far more than anyone writes there, far less than would bloat every beat's prompt. */
export const HEARTBEAT_MAX_BYTES = 256 * 1024;
const WEBSOCKET = 'websocket';

const CreateSchema = z.looseObject({
  name: z.string().max(200).optional(),
  message: z.string().max(20_000),
  schedule: z.unknown(),
  channel: z
    .string()
    .regex(/^[a-z][a-z0-9_-]{0,39}(\.[A-Za-z0-9_-]{1,64})?$/, 'expected a channel name such as websocket or telegram')
    .optional(),
  // A chat id is opaque to us, but never holds control characters (it becomes part of the session key and logs).
  chat_id: z
    .string()
    .trim()
    .min(1, 'give the chat the job runs in')
    .max(256)
    .regex(/^[^\u0000-\u001f\u007f]+$/, 'no control characters'),
  agent: z.boolean().optional(),
  model_preset: z.string().max(200).optional(),
});

const HeartbeatSchema = z.looseObject({
  enabled: z.boolean().optional(),
  interval_s: z
    .int()
    .min(60, 'at least 60 seconds')
    .max(7 * 86_400, 'at most 7 days')
    .optional(),
  keep_recent_messages: z.int().min(0).max(1000).optional(),
});

const FileSchema = z.looseObject({ content: z.string() });

function parsed<T>(schema: z.ZodType<T>, payload: unknown): T {
  const result = schema.safeParse(payload);
  if (!result.success) refuse(400, describe(result.error));
  return result.data;
}

const create: ActionHandler = async ({ backend }, payload) => {
  const cron = backend.automations?.().cron;
  if (!cron) refuse(503, 'automation service unavailable: the cron service runs in `nanobot gateway`');
  const input = parsed(CreateSchema, payload);
  const { config } = configOf({ backend }).loaded();
  const timezone = config.agents.defaults.timezone;
  try {
    const job = await cron.add(
      newJobFrom(
        {
          name: input.name,
          message: input.message,
          schedule: () => {
            const schedule = scheduleInput(input.schedule);
            // As `nanobot cron add --cron` without --tz: the agent's timezone, written into the job.
            return schedule.kind === 'cron' && !schedule.tz ? { ...schedule, tz: timezone } : schedule;
          },
          channel: input.channel ?? WEBSOCKET,
          chatId: input.chat_id,
          agent: input.agent ?? true,
          modelPreset: input.model_preset,
        },
        Object.keys(config.modelPresets),
        {
          noMessage: 'message cannot be empty',
          noChat: 'give the chat the job runs in (chat_id)',
          name: 'name',
          model: 'model_preset',
          agent: 'agent: true',
        },
      ),
    );
    return { ...(await allAutomations(backend)), id: job.id };
  } catch (error) {
    if (error instanceof CronError) refuse(400, error.hint ? `${error.message} ${error.hint}` : error.message);
    throw error;
  }
};

function heartbeatFile(backend: WebUiBackend): WorkspaceFs {
  return new WorkspaceFs(configOf({ backend }).loaded().workspace);
}

/** A write the workspace-file layer or the disk refuses (a directory in its place, a full disk…), said plainly. */
function fileRefusal(error: unknown): never {
  const fix = 'Make it a plain file in the workspace.';
  if (error instanceof WorkspaceFsError) refuse(409, `${HEARTBEAT_FILE} cannot be written: ${error.message}. ${fix}`);
  if (error instanceof FileWriteError)
    refuse(507, `${HEARTBEAT_FILE} cannot be written: ${error.reason}; ${error.fix}.`);
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  if (code === 'EISDIR') refuse(409, `${HEARTBEAT_FILE} cannot be written: a directory is in its place. ${fix}`);
  if (typeof code === 'string') refuse(409, `${HEARTBEAT_FILE} cannot be written (${code}). ${fix}`);
  throw error;
}

async function heartbeatPayload(backend: WebUiBackend, requiresRestart = false): Promise<Record<string, unknown>> {
  const { config } = configOf({ backend }).loaded();
  const beat = config.gateway.heartbeat;
  let content: string | undefined;
  let problem: string | null = null;
  try {
    content = await heartbeatFile(backend).readTextIfExists(HEARTBEAT_FILE, { maxBytes: HEARTBEAT_MAX_BYTES });
  } catch (error) {
    if (!(error instanceof WorkspaceFsError)) throw error;
    // Shown instead of the text (never followed); saving puts a plain file in its place.
    problem = `${HEARTBEAT_FILE} cannot be read: ${error.message}. Saving replaces it with a plain file.`;
  }
  return {
    heartbeat: { enabled: beat.enabled, interval_s: beat.intervalS, keep_recent_messages: beat.keepRecentMessages },
    timezone: config.agents.defaults.timezone,
    file: {
      name: HEARTBEAT_FILE,
      exists: content !== undefined || problem !== null,
      content: content ?? '',
      max_bytes: HEARTBEAT_MAX_BYTES,
      problem,
    },
    requires_restart: requiresRestart,
  };
}

const updateHeartbeat: ActionHandler = async ({ backend }, payload) => {
  const wanted = parsed(HeartbeatSchema, payload);
  const before = configOf({ backend }).loaded().config.gateway.heartbeat;
  const changed =
    (wanted.enabled !== undefined && wanted.enabled !== before.enabled) ||
    (wanted.interval_s !== undefined && wanted.interval_s !== before.intervalS) ||
    (wanted.keep_recent_messages !== undefined && wanted.keep_recent_messages !== before.keepRecentMessages);
  let applied = true;
  if (changed) {
    ({ applied } = await configOf({ backend }).update((tree) => {
      const beat = objectAt(tree, 'gateway', 'heartbeat');
      if (wanted.enabled !== undefined) beat.enabled = wanted.enabled;
      if (wanted.interval_s !== undefined) beat.intervalS = wanted.interval_s;
      if (wanted.keep_recent_messages !== undefined) beat.keepRecentMessages = wanted.keep_recent_messages;
    }));
  }
  // The running heartbeat takes the new settings with the reload; a reload the gateway refused needs a restart.
  return heartbeatPayload(backend, !applied);
};

const updateFile: ActionHandler = async ({ backend }, payload) => {
  const { content } = parsed(FileSchema, payload);
  const bytes = Buffer.byteLength(content, 'utf8');
  if (bytes > HEARTBEAT_MAX_BYTES)
    throw new WebuiApiError(413, `${HEARTBEAT_FILE} is too large (${bytes} bytes; at most ${HEARTBEAT_MAX_BYTES})`);
  try {
    await heartbeatFile(backend).writeFileAtomic(HEARTBEAT_FILE, content);
  } catch (error) {
    fileRefusal(error);
  }
  return heartbeatPayload(backend);
};

export const automationSetupModule: WebuiApiModule = {
  routes: { 'webui/automations/heartbeat': async ({ backend }) => heartbeatPayload(backend) },
  actions: {
    'automation.create': create,
    'automation.heartbeat.update': updateHeartbeat,
    'automation.heartbeat_file.update': updateFile,
  },
};
