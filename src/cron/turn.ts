/** The agent turn a due cron job runs, the same in the gateway and in `nanobot cron run` without one. */
import { type CronJob, isBoundJob, jobModelPreset } from './types.js';

export interface CronTurn {
  channel: string;
  chatId: string;
  sessionKey: string;
  modelPreset?: string;
  content: string;
}

/** An answer that means "nothing worth sending" (the turn's prompt asks for exactly this). */
export const NOTHING_TO_REPORT = /^\s*nothing to report\.?\s*$/i;

/** The turn for a bound agent job, or undefined for one that cannot run (unbound, system). */
export function cronTurn(job: CronJob): CronTurn | undefined {
  const { originChannel: channel, originChatId: chatId, sessionKey } = job.payload;
  if (!isBoundJob(job) || !channel || !chatId || !sessionKey) return undefined;
  const preset = jobModelPreset(job);
  return {
    channel,
    chatId,
    sessionKey,
    ...(preset ? { modelPreset: preset } : {}),
    content:
      `[Scheduled task "${job.name}"] ${job.payload.message}\n\n` +
      'This runs on a schedule, not from a message. If there is nothing worth telling the user, answer exactly: nothing to report.',
  };
}
