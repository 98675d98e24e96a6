/**
 * The keys every chat channel understands (`channels.<name>.*`), and how a channel block is validated.
 * A platform's schema extends `channelSettingsSchema` with its own keys (token, mode, …).
 */
import { z } from 'zod';
import { UserError } from '../util/errors.js';
import { importOnDemand } from '../util/on-demand.js';

/**
 * Ids and @usernames; numbers are accepted (Telegram ids are often written without quotes) unless JSON has already
 * rounded them: Discord/Slack-sized ids lose digits as numbers, and a rounded id would silently admit nobody.
 */
export const idList = z.array(
  z.union([z.string(), z.number()]).transform((id, ctx) => {
    if (typeof id === 'number' && !Number.isSafeInteger(id)) {
      ctx.addIssue({ code: 'custom', message: `id ${id} is too long to write as a number: put it in quotes` });
      return z.NEVER;
    }
    return String(id);
  }),
);

export const channelSettingsSchema = z.looseObject({
  enabled: z.boolean().default(false),
  /** Who may talk to the agent: ids or @usernames; `"*"` = everyone; empty = nobody (strangers can pair in DMs). */
  allowFrom: idList.default([]),
  /** Groups: answer when @mentioned or replied to (`mention`), to every message (`open`), or only in `groupAllowFrom`. */
  groupPolicy: z.enum(['mention', 'open', 'allowlist']).default('mention'),
  /** Group chat ids where the agent answers every message under `groupPolicy: "allowlist"`. */
  groupAllowFrom: idList.default([]),
  /** Stream replies into one message by editing it, where the platform can. */
  streaming: z.boolean().default(true),
  /** Seconds between stream edits (platforms rate-limit edits). */
  streamEditInterval: z.number().min(0.05).default(0.6),
  /** Send replies as replies to (quoting) the user's message. */
  replyToMessage: z.boolean().default(false),
  /** Largest attachment accepted from a user, in MB. */
  maxMediaMb: z.number().positive().default(20),
  /** Per-channel overrides of channels.sendProgress / sendToolHints / showReasoning. */
  sendProgress: z.boolean().optional(),
  sendToolHints: z.boolean().optional(),
  showReasoning: z.boolean().optional(),
});

export type ChannelSettings = z.infer<typeof channelSettingsSchema>;

/** The channel-wide switches from `channels.*` after per-channel overrides. */
export interface DeliverySwitches {
  sendProgress: boolean;
  sendToolHints: boolean;
  showReasoning: boolean;
}

/** Validates `channels.<name>`; errors name each key (`channels.telegram.mode: expected one of …`). */
export function parseChannelSettings<S>(name: string, block: unknown, schema: z.ZodType<S>): S {
  const result = schema.safeParse(block ?? {});
  if (result.success) return result.data;
  const problems = result.error.issues.slice(0, 6).map((issue) => {
    const path = ['channels', name, ...issue.path.map(String)].join('.');
    return `${path}: ${issue.message}`;
  });
  throw new UserError(
    `Invalid channels.${name} settings:\n  ${problems.join('\n  ')}`,
    `Fix channels.${name} in config.json (the README's Channels section lists the keys).`,
  );
}

/** A setup step the user must do before the channel can start (a missing token), as a UserError naming the key. */
export function requireSetting(name: string, key: string, value: unknown, hint: string): void {
  if (typeof value === 'string' ? value.trim() !== '' : value !== undefined && value !== null) return;
  throw new UserError(`channels.${name}.${key} is not set, so the ${name} channel cannot start.`, hint);
}

/**
 * A platform SDK, installed on demand (src/util/on-demand.ts): from next to nanobot or ~/.nanobot/packages; when it
 * is missing, a UserError naming it and `nanobot channels install <name>`.
 */
export function channelSdk<T>(
  name: string,
  displayName: string,
  specifier: string,
  direct: () => Promise<T>,
): Promise<T> {
  return importOnDemand({
    direct,
    specifier,
    feature: `The ${displayName} channel`,
    installWith: `nanobot channels install ${name}`,
  });
}
