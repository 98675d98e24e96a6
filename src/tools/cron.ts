/**
 * `cron`: schedule reminders and recurring tasks in the current chat (nanobot's parameters). A job is bound to the
 * chat it was created from; plain reminders are delivered verbatim without a model call, because routing them
 * through the LLM is how nanobot users lost reminders.
 */
import { z } from 'zod';
import { currentCronJob } from '../cron/context.js';
import { describeSchedule, formatInstant, parseAtTime } from '../cron/schedule.js';
import type { CronService } from '../cron/service.js';
import {
  type CronJob,
  isProtectedJob,
  isReminder,
  jobModelPreset,
  jobOrigin,
  type ScheduleInput,
  SYSTEM_JOB_IDS,
} from '../cron/types.js';
import { UserError } from '../util/errors.js';
import { defineTool, fail, ok, type ToolResult } from './types.js';

export interface CronToolOptions {
  service: CronService;
  /** The agent timezone (agents.defaults.timezone): naive `at` times and cron jobs without `tz` use it. */
  timezone: string;
  /** The configured `modelPresets` names an agent task may run with. */
  presets?: () => string[];
}

const parameters = z.object({
  action: z.enum(['add', 'list', 'remove']).describe('add a job, list jobs, or remove one.'),
  name: z.string().optional().describe('add: a short name for the job (default: the start of the message).'),
  message: z
    .string()
    .optional()
    .describe('add: for a reminder, the exact text the user gets; for deliver=agent, the instruction you get.'),
  every_seconds: z.number().int().positive().optional().describe('add: repeat every N seconds.'),
  cron_expr: z.string().optional().describe("add: 5-field cron expression, e.g. '0 9 * * 1-5' (09:00 on weekdays)."),
  tz: z.string().optional().describe("add: IANA timezone for cron_expr, e.g. 'Europe/Berlin'."),
  at: z.string().optional().describe("add: one time, ISO 8601, e.g. '2026-05-01T09:30'. The job deletes itself."),
  deliver: z
    .enum(['reminder', 'agent'])
    .optional()
    .describe('add: reminder (default) = send message as-is; agent = run message as a task for you.'),
  model: z
    .string()
    .optional()
    .describe('add, deliver=agent only: a model preset (from the config) for this task, when the user names one.'),
  job_id: z.string().optional().describe('remove: the id shown by list.'),
});

type CronArgs = z.infer<typeof parameters>;

export function createCronTool(options: CronToolOptions) {
  const { service, timezone } = options;

  const describeJob = (job: CronJob): string => {
    if (isProtectedJob(job))
      return `- ${job.id} '${job.name}' (protected system job, run by the gateway's own ${job.name} service)`;
    const kind = isReminder(job) ? 'reminder' : 'agent task';
    const next =
      job.enabled && job.state.nextRunAtMs != null ? formatInstant(job.state.nextRunAtMs, timezone) : 'not scheduled';
    const origin = jobOrigin(job);
    const last = job.state.lastStatus ? `; last run: ${job.state.lastStatus}` : '';
    const target = origin ? ` → ${origin.channel}:${origin.chatId}` : '';
    const preset = jobModelPreset(job);
    const model = preset ? `, model ${preset}` : '';
    if (!job.enabled && job.state.lastError)
      return `- ${job.id} '${job.name}' (${kind}${target}${model}): disabled: ${job.state.lastError}`;
    return `- ${job.id} '${job.name}' (${kind}${target}${model}): ${describeSchedule(job.schedule, timezone)}; next: ${next}${last}`;
  };

  async function list(): Promise<ToolResult> {
    const jobs = await service.list();
    if (!jobs.length) return ok('No scheduled jobs.');
    return ok(`Scheduled jobs (times in ${timezone}):\n${jobs.map(describeJob).join('\n')}`);
  }

  async function remove(args: CronArgs): Promise<ToolResult> {
    if (!args.job_id) return fail('remove needs job_id (see action=list).');
    const job = await service.get(args.job_id);
    if (!job) return fail(`No job with id '${args.job_id}'. Use action=list to see the ids.`);
    if (isProtectedJob(job)) return fail(`'${job.name}' is a protected system job and cannot be removed.`);
    await service.remove(job.id);
    return ok(`Removed job ${job.id} '${job.name}'.`);
  }

  function scheduleFrom(args: CronArgs): ScheduleInput | string {
    const given = [args.every_seconds !== undefined, args.cron_expr !== undefined, args.at !== undefined];
    const count = given.filter(Boolean).length;
    if (count !== 1) return 'add needs exactly one of every_seconds, cron_expr or at.';
    if (args.tz !== undefined && args.cron_expr === undefined) return 'tz only applies to cron_expr.';
    if (args.every_seconds !== undefined) return { kind: 'every', everyMs: args.every_seconds * 1000 };
    if (args.cron_expr !== undefined) return { kind: 'cron', expr: args.cron_expr, tz: args.tz ?? timezone };
    return { kind: 'at', atMs: parseAtTime(args.at ?? '', timezone) };
  }

  async function add(args: CronArgs, ctx: { sessionKey?: string; channel?: string; chatId?: string }) {
    if (ctx.sessionKey?.startsWith('cron:') || currentCronJob())
      return fail('Cannot schedule jobs from inside a cron run. Report the result instead.');
    if (!ctx.channel || !ctx.chatId)
      return fail('Jobs can only be added from a chat (there is no current chat to deliver to).');
    const message = args.message?.trim();
    if (!message) return fail('add needs message.');
    const schedule = scheduleFrom(args);
    if (typeof schedule === 'string') return fail(schedule);
    const name = (args.name?.trim() || message).slice(0, 30);
    // nanobot's gateway runs a job named dream or heartbeat as that system job, whatever its kind.
    if (SYSTEM_JOB_IDS.includes(name.toLowerCase()))
      return fail(`'${name}' is reserved for a system job; choose another name.`);
    const deliver = args.deliver ?? 'reminder';
    if (deliver === 'reminder' && ctx.channel === 'cli')
      return fail(
        "A reminder cannot reach this terminal chat when it is due (the gateway has no terminal). Use deliver='agent' " +
          '(the answer is kept in this session), or add the reminder from a chat channel.',
      );
    const modelPreset = args.model?.trim();
    if (modelPreset) {
      if (deliver !== 'agent') return fail('model only applies to deliver=agent (a reminder uses no model).');
      const presets = options.presets?.() ?? [];
      if (!presets.includes(modelPreset)) {
        return fail(
          `No model preset '${modelPreset}'. ${presets.length ? `Available: ${presets.join(', ')}.` : 'None are configured.'}`,
        );
      }
    }
    const job = await service.add({
      name,
      schedule,
      payload: {
        reminder: deliver === 'reminder',
        message,
        sessionKey: ctx.sessionKey ?? `${ctx.channel}:${ctx.chatId}`,
        originChannel: ctx.channel,
        originChatId: ctx.chatId,
        ...(modelPreset ? { modelPreset } : {}),
      },
    });
    const next = job.state.nextRunAtMs != null ? formatInstant(job.state.nextRunAtMs, timezone) : '?';
    const what = deliver === 'reminder' ? 'reminder' : 'agent task';
    return ok(
      `Scheduled ${what} ${job.id} '${job.name}': ${describeSchedule(job.schedule, timezone)}; ` +
        `next run ${next} (${timezone}).`,
    );
  }

  return defineTool({
    name: 'cron',
    description:
      'Schedule reminders and recurring tasks for this chat. action=add needs message and exactly one of: ' +
      "every_seconds; cron_expr (5 fields, e.g. '0 9 * * *', with optional tz); at (ISO time, one-off, deletes " +
      `itself; without an offset it is read in ${timezone}). deliver='reminder' (default) sends message to this chat ` +
      'verbatim when due, with no model involved: use it for plain reminders ("stand up", "call Anna"). ' +
      "deliver='agent' gives message to you as a task when due, in this chat: use it only when work is needed then " +
      '(check something, summarize news); if there is nothing worth reporting, say so briefly and nothing is sent. ' +
      'action=list shows jobs with ids; action=remove needs job_id.',
    parameters,
    async execute(args, ctx) {
      try {
        if (args.action === 'list') return await list();
        if (args.action === 'remove') return await remove(args);
        return await add(args, ctx);
      } catch (err) {
        if (err instanceof UserError) return fail(err.hint ? `${err.message} ${err.hint}` : err.message);
        throw err;
      }
    },
  });
}
