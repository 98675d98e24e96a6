/**
 * `nanobot cron list | add | remove ID | run ID`: edits `<workspace>/cron/jobs.json` directly. A running gateway
 * watches the file, so a job added here fires there without a restart.
 */
import { z } from 'zod';
import type { LoadedConfig } from '../../config/load.js';
import { type JobRequestWords, newJobFrom } from '../../cron/add.js';
import { describeSchedule, formatInstant, parseAtTime } from '../../cron/schedule.js';
import { CronService } from '../../cron/service.js';
import { cronTurn, NOTHING_TO_REPORT } from '../../cron/turn.js';
import {
  CronError,
  type CronJob,
  type CronRunHandler,
  type CronRunResult,
  isProtectedJob,
  isReminder,
  jobModelPreset,
  jobOrigin,
  type ScheduleInput,
} from '../../cron/types.js';
import { CRON_RUN_PATH } from '../../gateway/health.js';
import { type GatewayState, isProcessAlive, readState } from '../../gateway/state-file.js';
import { errorMessage } from '../../util/errors.js';
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
  /**
   * Executes a job for `cron run` when no gateway runs. Default: a reminder is printed; an agent job runs its turn
   * here, in its session (the answer is printed and kept there; only a gateway can send it to a chat).
   */
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
    onRun: deps.runJob ?? runHere(loaded, out),
  });

  switch (subcommand) {
    case 'list':
      return listJobs(service, timezone, out);
    case 'add':
      return addJob(service, timezone, opts, out, Object.keys(loaded.config.modelPresets));
    case 'remove': {
      const id = requireId(args, 'remove');
      const job = await service.remove(id);
      if (!job) throw new CronError(`No cron job with id '${id}'.`, 'See the ids with `nanobot cron list`.');
      out(`Removed ${id} '${job.name}'.`);
      return;
    }
    case 'run': {
      const id = requireId(args, 'run');
      const job = await service.get(id);
      if (!job) throw new CronError(`No cron job with id '${id}'.`, 'See the ids with `nanobot cron list`.');
      // A running gateway runs it (it owns jobs.json and the chats); otherwise it runs here.
      const gateway = deps.runJob ? undefined : runningGateway(loaded.dataDir);
      const result = gateway ? await runInGateway(gateway, id) : await service.runNow(id);
      const where = gateway ? ` in the gateway (pid ${gateway.pid})` : '';
      if (result.status === 'error')
        throw new CronError(`Job '${job.name}' failed${where}: ${result.error ?? 'unknown error'}`);
      out(`Ran ${id} '${job.name}'${where}: ${result.status}.`);
      return;
    }
    default:
      throw new CronError(`Unknown cron command '${subcommand}'.`, `Usage: ${USAGE}`);
  }
}

/** `cron run` without a gateway: a reminder is printed; an agent job runs its turn in its session, here. */
function runHere(loaded: LoadedConfig, out: (line: string) => void): CronRunHandler {
  return async (job) => {
    const origin = jobOrigin(job);
    if (isReminder(job)) {
      out(origin ? `[${origin.channel}:${origin.chatId}] ${job.payload.message}` : job.payload.message);
      return { status: 'ok' };
    }
    const turn = cronTurn(job);
    if (!turn) return { status: 'error', error: 'the job has no chat session to run in' };
    const { createAgent } = await import('../../app/agent.js');
    const agent = await createAgent(loaded, {});
    try {
      const output = await agent.loop.processMessage(turn);
      if (output.error) return { status: 'error', error: output.error.message };
      out(output.content);
      if (NOTHING_TO_REPORT.test(output.content)) return { status: 'silent' };
      if (turn.channel !== 'cli')
        out(
          `(Not sent to ${turn.channel}:${turn.chatId}: no gateway runs. The answer is kept in session ${turn.sessionKey}.)`,
        );
      return { status: 'ok' };
    } finally {
      await agent.shutdown();
    }
  };
}

/** The gateway running for this data dir, if any (its state file names a live pid). */
function runningGateway(dataDir: string): GatewayState | undefined {
  const state = readState(dataDir);
  return state && isProcessAlive(state.pid) ? state : undefined;
}

/** Asks the running gateway to run the job (POST /cron/run with the token from its 0600 state file). */
async function runInGateway(state: GatewayState, id: string): Promise<CronRunResult> {
  if (!state.controlToken)
    throw new CronError(
      `The gateway running now (pid ${state.pid}) cannot run jobs on request (it predates \`cron run\` support).`,
      'Restart it (`nanobot gateway stop`, then start it again), then retry.',
    );
  const host = state.host.includes(':') ? `[${state.host}]` : state.host;
  let res: Response;
  try {
    res = await fetch(`http://${host}:${state.port}${CRON_RUN_PATH}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${state.controlToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({ id }),
      signal: AbortSignal.timeout(RUN_TIMEOUT_MS),
    });
  } catch (err) {
    throw new CronError(
      `The gateway (pid ${state.pid}) did not answer on ${host}:${state.port}: ${errorMessage(err)}.`,
      'Check it with `nanobot gateway status`.',
    );
  }
  const body = RunAnswer.safeParse(await res.json().catch(() => ({})));
  const answer = body.success ? body.data : {};
  if (res.status === 200 && answer.status) {
    const status = answer.status === 'error' || answer.status === 'silent' ? answer.status : 'ok';
    return { status, ...(answer.error ? { error: answer.error } : {}) };
  }
  throw new CronError(
    `The gateway refused to run '${id}': ${answer.error ?? `HTTP ${res.status}`}`,
    answer.hint ?? 'See `nanobot gateway logs`.',
  );
}

const RUN_TIMEOUT_MS = 15 * 60_000;
const RunAnswer = z.looseObject({
  status: z.string().optional(),
  error: z.string().optional(),
  hint: z.string().optional(),
});

function requireId(args: string[], command: string): string {
  const id = args[0]?.trim();
  if (!id) throw new CronError(`cron ${command} needs a job id.`, 'See the ids with `nanobot cron list`.');
  return id;
}

async function listJobs(service: CronService, timezone: string, out: (line: string) => void): Promise<void> {
  const jobs = await service.list();
  if (!jobs.length) out('No cron jobs. Add one with `nanobot cron add --message … --every 3600`.');
  else {
    // nanobot's system jobs last: their stored times are nanobot's, not when our services run them.
    const ordered = [...jobs.filter((job) => !isProtectedJob(job)), ...jobs.filter(isProtectedJob)];
    const rows = ordered.map((job) => describeRow(job, timezone));
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
  const next = isProtectedJob(job)
    ? '-'
    : !job.enabled
      ? 'disabled'
      : job.state.nextRunAtMs != null
        ? formatInstant(job.state.nextRunAtMs, timezone)
        : '-';
  const origin = jobOrigin(job);
  const preset = jobModelPreset(job);
  const details = isProtectedJob(job)
    ? [`system job (nanobot's); here the gateway's own ${job.name} service runs it`]
    : [
        isReminder(job) ? 'reminder' : 'agent',
        preset ? `model ${preset}` : '',
        origin ? `${origin.channel}:${origin.chatId}` : 'no chat',
        job.state.lastStatus ? `last ${job.state.lastStatus}` : '',
        !job.enabled && job.state.lastError ? job.state.lastError : '',
      ].filter(Boolean);
  return [job.id, job.name, describeSchedule(job.schedule, timezone), next, details.join(', ')];
}

const CLI_WORDS: JobRequestWords = {
  noMessage: 'cron add needs --message.',
  noChat: 'cron add needs --channel and --chat-id: the chat it runs in.',
  name: '--name',
  model: '--model',
  agent: '--agent',
  usage: `Usage: ${USAGE}`,
};

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
  const job = await service.add(
    newJobFrom(
      {
        name: flags.name,
        message: flags.message,
        schedule: () => scheduleFromFlags(flags, timezone),
        channel: flags.channel,
        chatId: flags.chatId,
        agent: flags.agent,
        modelPreset: flags.model,
      },
      presets,
      CLI_WORDS,
    ),
  );
  const next = job.state.nextRunAtMs != null ? formatInstant(job.state.nextRunAtMs, timezone) : '-';
  out(`Added ${job.id} '${job.name}': ${describeSchedule(job.schedule, timezone)}; next run ${next} (${timezone}).`);
  out("A running gateway (ours or nanobot's) picks it up without a restart.");
}
