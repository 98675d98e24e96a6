/**
 * `nanobot cron list | add | remove ID | run ID`: edits `<workspace>/cron/jobs.json` directly. A running gateway
 * watches the file, so a job added here fires there without a restart.
 */
import { describeSchedule, formatInstant, parseAtTime } from '../../cron/schedule.js';
import { CronService } from '../../cron/service.js';
import {
  CronError,
  type CronJob,
  type CronRunHandler,
  isProtectedJob,
  jobOrigin,
  type ScheduleInput,
} from '../../cron/types.js';
import type { GlobalOptions } from '../main.js';
import { setup } from '../setup.js';

export interface CronCliFlags {
  name?: string;
  message?: string;
  /** Seconds, or a number with s/m/h/d. */
  every?: string;
  cron?: string;
  tz?: string;
  at?: string;
  channel?: string;
  chatId?: string;
  /** Run the message as an agent turn instead of delivering it verbatim. */
  agent?: boolean;
  /** A `modelPresets` name the agent task runs with. */
  model?: string;
}

export interface CronCliDeps {
  /** Executes a job for `cron run`. Default: prints reminders; agent turns are refused (they need the agent). */
  runJob?: CronRunHandler;
  out?: (line: string) => void;
  env?: NodeJS.ProcessEnv;
}

const USAGE =
  'nanobot cron list | add --message M (--every S | --cron EXPR [--tz TZ] | --at ISO) [--name N] ' +
  '[--channel C --chat-id ID] [--agent [--model PRESET]] | remove ID | run ID';

export async function runCron(
  subcommand: string,
  args: string[],
  opts: GlobalOptions & CronCliFlags,
  deps: CronCliDeps = {},
): Promise<void> {
  const out = deps.out ?? ((line: string) => process.stdout.write(`${line}\n`));
  const { loaded } = await setup(opts, deps.env);
  const timezone = loaded.config.agents.defaults.timezone;
  const service = new CronService({
    workspace: loaded.workspace,
    timezone,
    onRun: deps.runJob ?? printReminder(out),
  });

  switch (subcommand) {
    case 'list':
      return listJobs(service, timezone, out);
    case 'add':
      return addJob(service, timezone, opts, out, Object.keys(loaded.config.modelPresets));
    case 'remove': {
      const id = requireId(args, 'remove');
      const job = await service.get(id);
      if (!job) throw new CronError(`No cron job with id '${id}'.`, 'See the ids with `nanobot cron list`.');
      if (isProtectedJob(job))
        throw new CronError(
          `'${job.name}' is a system job and cannot be removed.`,
          'Disable it in the config instead.',
        );
      await service.remove(id);
      out(`Removed ${id} '${job.name}'.`);
      return;
    }
    case 'run': {
      const id = requireId(args, 'run');
      const job = await service.get(id);
      if (!job) throw new CronError(`No cron job with id '${id}'.`, 'See the ids with `nanobot cron list`.');
      if (job.payload.kind === 'agent_turn' && !deps.runJob)
        throw new CronError(
          `'${job.name}' is an agent task; running it needs the agent.`,
          'It runs on schedule inside `nanobot gateway`.',
        );
      const result = await service.runNow(id);
      if (result.status === 'error')
        throw new CronError(`Job '${job.name}' failed: ${result.error ?? 'unknown error'}`);
      out(`Ran ${id} '${job.name}': ${result.status}.`);
      return;
    }
    default:
      throw new CronError(`Unknown cron command '${subcommand}'.`, `Usage: ${USAGE}`);
  }
}

function printReminder(out: (line: string) => void): CronRunHandler {
  return async (job) => {
    const origin = jobOrigin(job);
    out(origin ? `[${origin.channel}:${origin.chatId}] ${job.payload.message}` : job.payload.message);
    return { status: 'ok' };
  };
}

function requireId(args: string[], command: string): string {
  const id = args[0]?.trim();
  if (!id) throw new CronError(`cron ${command} needs a job id.`, 'See the ids with `nanobot cron list`.');
  return id;
}

async function listJobs(service: CronService, timezone: string, out: (line: string) => void): Promise<void> {
  const jobs = await service.list();
  if (!jobs.length) out('No cron jobs. Add one with `nanobot cron add --message … --every 3600`.');
  else {
    const rows = jobs.map((job) => describeRow(job, timezone));
    const widths = [0, 1, 2, 3].map((column) => Math.max(...rows.map((row) => row[column]?.length ?? 0)));
    const pad = (row: string[]) =>
      row
        .map((cell, column) => cell.padEnd(widths[column] ?? 0))
        .join('  ')
        .trimEnd();
    out(pad(['ID', 'NAME', 'SCHEDULE', `NEXT RUN (${timezone})`, 'KIND / TARGET / LAST']));
    for (const row of rows) out(pad(row));
  }
  for (const problem of service.problems()) out(`Warning: ${problem}`);
}

function describeRow(job: CronJob, timezone: string): string[] {
  const next = !job.enabled
    ? 'disabled'
    : job.state.nextRunAtMs != null
      ? formatInstant(job.state.nextRunAtMs, timezone)
      : '-';
  const origin = jobOrigin(job);
  const details = [
    job.payload.kind === 'system_event' ? 'reminder' : 'agent',
    job.payload.modelPreset ? `model ${job.payload.modelPreset}` : '',
    origin ? `${origin.channel}:${origin.chatId}` : 'no chat',
    job.state.lastStatus ? `last ${job.state.lastStatus}` : '',
  ].filter(Boolean);
  return [job.id, job.name, describeSchedule(job.schedule, timezone), next, details.join(', ')];
}

const DURATION_UNITS: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86_400 };

function parseEvery(text: string): number {
  const match = /^(\d+)\s*([smhd]?)$/i.exec(text.trim());
  const seconds = match ? Number(match[1]) * (DURATION_UNITS[(match[2] || 's').toLowerCase()] ?? 1) : 0;
  if (!seconds)
    throw new CronError(`Invalid --every '${text}'.`, 'Give seconds, or a number with s/m/h/d: 90, 30m, 2h.');
  return seconds * 1000;
}

function scheduleFromFlags(flags: CronCliFlags, timezone: string): ScheduleInput {
  const given = [flags.every, flags.cron, flags.at].filter((value) => value !== undefined).length;
  if (given !== 1) throw new CronError('Give exactly one of --every, --cron or --at.', `Usage: ${USAGE}`);
  if (flags.tz !== undefined && flags.cron === undefined) throw new CronError('--tz only applies to --cron.');
  if (flags.every !== undefined) return { kind: 'every', everyMs: parseEvery(flags.every) };
  if (flags.cron !== undefined) return { kind: 'cron', expr: flags.cron, tz: flags.tz ?? timezone };
  return { kind: 'at', atMs: parseAtTime(flags.at ?? '', timezone) };
}

async function addJob(
  service: CronService,
  timezone: string,
  flags: CronCliFlags,
  out: (line: string) => void,
  presets: string[],
): Promise<void> {
  const message = flags.message?.trim();
  if (!message) throw new CronError('cron add needs --message.', `Usage: ${USAGE}`);
  const modelPreset = flags.model?.trim();
  if (modelPreset && !flags.agent) throw new CronError('--model needs --agent (a reminder uses no model).');
  if (modelPreset && !presets.includes(modelPreset)) {
    throw new CronError(
      `No model preset '${modelPreset}'.`,
      presets.length ? `Use one of: ${presets.join(', ')}.` : 'Define it under "modelPresets" in the config.',
    );
  }
  if (Boolean(flags.channel) !== Boolean(flags.chatId))
    throw new CronError('Give --channel and --chat-id together.', 'e.g. --channel telegram --chat-id 123456');
  const schedule = scheduleFromFlags(flags, timezone);
  const target = flags.channel && flags.chatId ? { channel: flags.channel, chatId: flags.chatId } : undefined;
  const job = await service.add({
    name: flags.name?.trim() || message.slice(0, 30),
    schedule,
    payload: {
      kind: flags.agent ? 'agent_turn' : 'system_event',
      message,
      sessionKey: target ? `${target.channel}:${target.chatId}` : null,
      originChannel: target?.channel ?? null,
      originChatId: target?.chatId ?? null,
      ...(modelPreset ? { modelPreset } : {}),
    },
  });
  const next = job.state.nextRunAtMs != null ? formatInstant(job.state.nextRunAtMs, timezone) : '-';
  out(`Added ${job.id} '${job.name}': ${describeSchedule(job.schedule, timezone)}; next run ${next} (${timezone}).`);
  if (!target) out('Note: no --channel/--chat-id, so there is no chat to deliver it to.');
  out('A running gateway picks it up without a restart.');
}
