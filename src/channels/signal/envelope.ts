/**
 * What signal-cli says it received (`receive` notifications: `{envelope, account}`), validated and reduced to what
 * the channel needs: who wrote (phone number and/or UUID: Signal may hide the number), in which chat (a group, or
 * the person), the text with the bot's mentions taken out, the attachments signal-cli saved, and whether the bot
 * was addressed. Anything else (receipts, typing, reactions, calls, stories, sync messages of the account's other
 * devices, group updates) is not a message for the agent.
 */
import { z } from 'zod';

/** A phone number in international format (short ones too: some services have them). */
export const E164 = /^\+[1-9]\d{1,14}$/;
/** The same without its `+`, as people (and upstream's configs) often write it. */
const BARE_NUMBER = /^[1-9]\d{1,14}$/;
/** An ACI (a plain UUID) or a PNI service id. */
const SERVICE_ID = /^(?:PNI:)?[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** A group id: base64 of 32 bytes for today's groups, of 16 for legacy ones. */
const GROUP_ID = /^[A-Za-z0-9+/_-]{20,64}={0,2}$/;
/** The character Signal puts where a mention is. */
const MENTION_MARK = '\uFFFC';

const optionalText = z.string().nullish().catch(undefined);

const envelopeSchema = z.looseObject({
  source: optionalText,
  sourceNumber: optionalText,
  sourceUuid: optionalText,
  sourceName: optionalText,
  timestamp: z.number().int().nonnegative(),
  dataMessage: z.looseObject({}).nullish(),
});

const dataMessageSchema = z.looseObject({
  timestamp: z.number().int().nonnegative(),
  message: optionalText,
  mentions: z.array(z.unknown()).nullish().catch(undefined),
  attachments: z.array(z.unknown()).nullish().catch(undefined),
  quote: z.unknown().optional(),
  groupInfo: z.looseObject({ groupId: z.string(), type: optionalText }).nullish(),
  reaction: z.unknown().optional(),
  remoteDelete: z.unknown().optional(),
  isExpirationUpdate: z.boolean().nullish().catch(undefined),
});

const mentionSchema = z.looseObject({
  number: optionalText,
  uuid: optionalText,
  start: z.number().int().min(0),
  length: z.number().int().min(1),
});

const attachmentSchema = z.looseObject({
  id: z.string(),
  contentType: optionalText,
  filename: optionalText,
  size: z.number().nonnegative().nullish().catch(undefined),
});

const quoteSchema = z.looseObject({
  id: z.number().int().nonnegative(),
  authorNumber: optionalText,
  authorUuid: optionalText,
  author: optionalText,
});

export const notificationSchema = z.looseObject({ envelope: z.unknown().optional(), account: optionalText });

export interface SignalPerson {
  number?: string;
  /** Lower case. */
  uuid?: string;
}

export interface SignalAttachmentInfo {
  /** The file name signal-cli saved it under, in its attachments directory. */
  id: string;
  contentType?: string;
  filename?: string;
  size?: number;
}

export interface SignalMessage {
  timestamp: number;
  sender: SignalPerson & { name?: string };
  groupId?: string;
  /** The text, the bot's own mentions removed and other people's written `@number`. */
  text: string;
  /** The bot was @mentioned, quoted (replied to) or named by number. */
  addressed: boolean;
  attachments: SignalAttachmentInfo[];
}

/** The bot's own identifiers, for telling its mentions and quotes apart. */
export class BotIdentity {
  private readonly ids = new Set<string>();

  constructor(readonly number: string) {
    this.add(number);
  }

  add(id: string | undefined): void {
    for (const variant of idVariants(id)) this.ids.add(variant);
  }

  is(person: SignalPerson | undefined): boolean {
    if (!person) return false;
    return [person.number, person.uuid].some((id) => idVariants(id).some((variant) => this.ids.has(variant)));
  }

  get uuid(): string | undefined {
    return [...this.ids].find((id) => SERVICE_ID.test(id));
  }
}

/** The spellings an id is matched by: as given, lower case, and a phone number with and without its `+`. */
export function idVariants(id: string | undefined | null): string[] {
  const raw = id?.trim() ?? '';
  if (!raw) return [];
  const variants = [raw, raw.toLowerCase()];
  if (E164.test(raw)) variants.push(raw.slice(1));
  else if (BARE_NUMBER.test(raw)) variants.push(`+${raw}`);
  return [...new Set(variants)];
}

export function personOf(number: unknown, uuid: unknown): SignalPerson {
  const person: SignalPerson = {};
  if (typeof number === 'string' && E164.test(number.trim())) person.number = number.trim();
  if (typeof uuid === 'string' && SERVICE_ID.test(uuid.trim())) person.uuid = uuid.trim().toLowerCase();
  return person;
}

/** A direct chat's id: the phone number where Signal shows it (as nanobot names Signal chats), else the UUID. */
export function chatIdOf(person: SignalPerson): string | undefined {
  return person.number ?? person.uuid;
}

/** How signal-cli addresses a chat id: a person (number or UUID) or a group. */
export function recipientOf(chatId: string): { recipient: string[] } | { groupId: string } {
  const id = chatId.trim();
  if (E164.test(id) || SERVICE_ID.test(id)) return { recipient: [id] };
  if (BARE_NUMBER.test(id)) return { recipient: [`+${id}`] };
  if (GROUP_ID.test(id)) return { groupId: id };
  throw new Error(`"${chatId}" is neither a Signal phone number, a UUID nor a group id`);
}

export function isPersonId(chatId: string): boolean {
  const id = chatId.trim();
  return E164.test(id) || BARE_NUMBER.test(id) || SERVICE_ID.test(id);
}

/** The person a direct chat id names (a number with or without `+`, or a UUID). */
export function personOfChat(chatId: string): SignalPerson {
  const id = chatId.trim();
  if (BARE_NUMBER.test(id)) return personOf(`+${id}`, undefined);
  return E164.test(id) ? personOf(id, undefined) : personOf(undefined, id);
}

/** A receive notification → the message for the agent, or undefined (with why, for the debug log). */
export function readNotification(raw: unknown, bot: BotIdentity): { message: SignalMessage } | { skip: string } {
  const notification = notificationSchema.safeParse(raw);
  if (!notification.success || notification.data.envelope === undefined) return { skip: 'not a receive notification' };
  const envelope = envelopeSchema.safeParse(notification.data.envelope);
  if (!envelope.success) return { skip: 'an envelope signal-cli did not fill in' };
  const { sourceNumber, source, sourceUuid, sourceName, dataMessage } = envelope.data;
  const sender = personOf(sourceNumber ?? (source && E164.test(source) ? source : undefined), sourceUuid);
  if (!sender.number && !sender.uuid) return { skip: 'no sender' };
  if (bot.is(sender)) return { skip: 'from the bot’s own account' };
  if (!dataMessage) return { skip: 'not a data message (receipt, typing, sync, call or story)' };
  const data = dataMessageSchema.safeParse(dataMessage);
  if (!data.success) return { skip: 'a data message signal-cli did not fill in' };
  const { message, reaction, remoteDelete, isExpirationUpdate, groupInfo } = data.data;
  if (reaction || remoteDelete || isExpirationUpdate) return { skip: 'a reaction, deletion or timer change' };
  if (groupInfo && (groupInfo.type === 'UPDATE' || !GROUP_ID.test(groupInfo.groupId)))
    return { skip: 'a group update' };
  const attachments = (data.data.attachments ?? []).flatMap((item) => {
    const parsed = attachmentSchema.safeParse(item);
    if (!parsed.success) return [];
    const { id, contentType, filename, size } = parsed.data;
    return [
      {
        id,
        ...(contentType ? { contentType } : {}),
        ...(filename ? { filename } : {}),
        ...(typeof size === 'number' ? { size } : {}),
      },
    ];
  });
  const { text, mentioned } = withMentions(message ?? '', data.data.mentions ?? [], bot);
  if (!text.trim() && attachments.length === 0) return { skip: 'nothing to read (a sticker, a poll or empty)' };
  const quote = quoteSchema.safeParse(data.data.quote);
  const quotesBot =
    quote.success && bot.is(personOf(quote.data.authorNumber ?? quote.data.author, quote.data.authorUuid));
  const named = idVariants(bot.number).some((id) => id.startsWith('+') && (message ?? '').includes(id));
  return {
    message: {
      timestamp: data.data.timestamp,
      sender: { ...sender, ...(sourceName?.trim() ? { name: sourceName.trim().slice(0, 100) } : {}) },
      ...(groupInfo ? { groupId: groupInfo.groupId } : {}),
      text,
      addressed: mentioned || quotesBot || named,
      attachments,
    },
  };
}

/**
 * Signal writes each mention as U+FFFC plus a range naming whom. The bot's own are removed (the agent reads what was
 * said to it); other people's become `@+number` (or `@uuid`), so the agent knows who was meant. Ranges are UTF-16
 * code units, as JavaScript strings count.
 */
export function withMentions(text: string, rawMentions: readonly unknown[], bot: BotIdentity) {
  const mentions = rawMentions
    .flatMap((raw) => {
      const parsed = mentionSchema.safeParse(raw);
      return parsed.success ? [parsed.data] : [];
    })
    .filter((m) => m.start + m.length <= text.length)
    .sort((a, b) => b.start - a.start);
  let mentioned = false;
  let out = text;
  let lastStart = Number.POSITIVE_INFINITY;
  for (const mention of mentions) {
    // Overlapping ranges are a malformed message: the first (from the end) wins.
    if (mention.start + mention.length > lastStart) continue;
    lastStart = mention.start;
    const person = personOf(mention.number, mention.uuid);
    const isBot = bot.is(person);
    mentioned ||= isBot;
    const span = out.slice(mention.start, mention.start + mention.length);
    const name = person.number ?? person.uuid;
    const replacement = isBot ? '' : span.includes(MENTION_MARK) && name ? `@${name}` : span;
    out = out.slice(0, mention.start) + replacement + out.slice(mention.start + mention.length);
  }
  return { text: out.trim(), mentioned };
}

/** The framework's message id for a Signal message: its timestamp and author, which together name it in Signal. */
export function messageIdOf(timestamp: number, author: SignalPerson): string {
  return `${timestamp}:${author.uuid ?? author.number ?? ''}`;
}

/** The timestamp and author of a message id (for quoting and reactions), or undefined for an id that is not one. */
export function parseMessageId(id: string): { timestamp: number; author: string } | undefined {
  const colon = id.indexOf(':');
  if (colon < 1) return undefined;
  const timestamp = Number(id.slice(0, colon));
  const author = id.slice(colon + 1);
  if (!Number.isSafeInteger(timestamp) || !(E164.test(author) || SERVICE_ID.test(author))) return undefined;
  return { timestamp, author };
}
