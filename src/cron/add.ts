/**
 * The checks a new user job passes before it is saved, shared by `nanobot cron add` and the WebUI's add form, so a
 * job added either way is the same job: a message, a chat to run in, a name that is not a system job's, a model
 * preset only for an agent task. The schedule is checked by the service when it adds the job.
 */
import { CHAT_IDS_HINT } from './service.js';
import { CronError, type NewCronJob, type ScheduleInput, SYSTEM_JOB_IDS } from './types.js';

export interface JobRequest {
  /** Default: the start of the message. */
  name?: string | undefined;
  message?: string | undefined;
  /** Called after the message, preset and chat checks (so errors come in the order the CLI has always given). */
  schedule: () => ScheduleInput;
  channel?: string | undefined;
  chatId?: string | undefined;
  /** Run the message as an agent turn; otherwise it is delivered verbatim (a reminder). */
  agent?: boolean | undefined;
  /** A `modelPresets` name the agent task runs with. */
  modelPreset?: string | undefined;
}

/** The caller's words for the error messages (its flags on the CLI, its fields in the WebUI). */
export interface JobRequestWords {
  noMessage: string;
  noChat: string;
  name: string;
  model: string;
  agent: string;
  usage?: string;
}

/** The job to add, or a CronError saying what is missing or wrong. `presets`: the config's modelPresets names. */
export function newJobFrom(request: JobRequest, presets: readonly string[], words: JobRequestWords): NewCronJob {
  const message = request.message?.trim();
  if (!message) throw new CronError(words.noMessage, words.usage);
  const modelPreset = request.modelPreset?.trim();
  if (modelPreset && !request.agent)
    throw new CronError(`${words.model} needs ${words.agent} (a reminder uses no model).`);
  if (modelPreset && !presets.includes(modelPreset)) {
    throw new CronError(
      `No model preset '${modelPreset}'.`,
      presets.length ? `Use one of: ${presets.join(', ')}.` : 'Define it under "modelPresets" in the config.',
    );
  }
  const channel = request.channel?.trim();
  const chatId = request.chatId?.trim();
  // nanobot runs a job only in the chat it is bound to; one without a chat would be disabled on load.
  if (!channel || !chatId) throw new CronError(words.noChat, CHAT_IDS_HINT);
  if (channel === 'cli' && !request.agent)
    throw new CronError(
      'A reminder cannot go to the `nanobot agent` chat (cli): no gateway channel reaches a terminal.',
      `Bind it to a chat channel (see \`nanobot sessions\`), or use ${words.agent}: the answer is kept in that session.`,
    );
  const schedule = request.schedule();
  const name = request.name?.trim() || message.slice(0, 30);
  if (SYSTEM_JOB_IDS.includes(name.toLowerCase()))
    throw new CronError(`'${name}' is reserved for a system job.`, `Choose another ${words.name}.`);
  return {
    name,
    schedule,
    payload: {
      reminder: !request.agent,
      message,
      sessionKey: `${channel}:${chatId}`,
      originChannel: channel,
      originChatId: chatId,
      ...(modelPreset ? { modelPreset } : {}),
    },
  };
}
