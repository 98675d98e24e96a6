/**
 * Bot Framework activities as Teams posts them to the messaging endpoint: the fields the channel reads, validated
 * (everything else is passed over, as upstream does), and what a message means for the framework: who wrote it,
 * in which kind of conversation, whether it @mentions the bot (a `mention` entity naming the bot's id), and its
 * text with the bot's `<at>…</at>` removed and HTML entities decoded.
 */
import { z } from 'zod';

const id = z.string().min(1).max(1024);

const Account = z.looseObject({
  id,
  name: z.string().max(1024).optional(),
  aadObjectId: z.string().max(128).optional(),
});

export const Activity = z.looseObject({
  type: z.string().max(64),
  id: id.optional(),
  channelId: z.string().min(1).max(64),
  serviceUrl: z.string().min(1).max(2048),
  from: Account,
  recipient: Account,
  conversation: z.looseObject({
    id,
    conversationType: z.string().max(64).optional(),
    tenantId: z.string().max(128).optional(),
  }),
  text: z.string().max(200_000).optional(),
  replyToId: z.string().max(1024).optional(),
  entities: z
    .array(
      z.looseObject({
        type: z.string().max(128),
        mentioned: Account.optional(),
        text: z.string().max(2048).optional(),
      }),
    )
    .max(200)
    .optional(),
  attachments: z
    .array(
      z.looseObject({
        contentType: z.string().max(256),
        contentUrl: z.string().max(4_000_000).optional(),
        name: z.string().max(1024).optional(),
        content: z.unknown().optional(),
      }),
    )
    .max(50)
    .optional(),
  channelData: z.looseObject({ tenant: z.looseObject({ id: z.string().max(128) }).optional() }).nullish(),
});
export type Activity = z.infer<typeof Activity>;
export type ActivityAttachment = NonNullable<Activity['attachments']>[number];

/** What auth.ts compares with the token before the rest of the body is read. */
export const Envelope = z.looseObject({
  serviceUrl: z.string().min(1).max(2048),
  channelId: z.string().min(1).max(64),
});

/** Teams' conversation kinds: `personal` (1:1), `groupChat`, `channel` (a team's channel; each post is a thread). */
export function isPersonal(activity: Activity): boolean {
  const kind = activity.conversation.conversationType;
  return kind === undefined || kind === 'personal';
}

/** A channel post's conversation id is the channel's id with `;messageid=<root post>`: the thread it belongs to. */
export function splitConversationId(conversationId: string): { base: string; thread?: string } {
  const match = /^(.*);messageid=([^;]+)$/.exec(conversationId);
  return match?.[1] && match[2] ? { base: match[1], thread: match[2] } : { base: conversationId };
}

/** The tenant an activity comes from, where Teams says. */
export function tenantOf(activity: Activity): string | undefined {
  return activity.channelData?.tenant?.id ?? activity.conversation.tenantId;
}

/** The sender as upstream names them: the Entra object id when Teams gives it, else the Bot Framework id. */
export function senderIdOf(activity: Activity): string {
  return activity.from.aadObjectId?.trim() || activity.from.id;
}

/** Whether one of the activity's mention entities names the bot. */
export function mentionsBot(activity: Activity): boolean {
  return (activity.entities ?? []).some(
    (entity) => entity.type === 'mention' && entity.mentioned?.id === activity.recipient.id,
  );
}

/**
 * The text the user wrote: the bot's own `<at>Bot</at>` removed, other people's mentions as `@Name`, HTML entities
 * decoded, runs of spaces collapsed (line breaks kept).
 */
export function userText(activity: Activity): string {
  let text = activity.text ?? '';
  for (const entity of activity.entities ?? []) {
    if (entity.type === 'mention' && entity.mentioned?.id === activity.recipient.id && entity.text) {
      text = text.split(entity.text).join(' ');
    }
  }
  text = text.replace(/<at\b[^>]*>([\s\S]*?)<\/at>/gi, (_m, name: string) => `@${name.trim()}`);
  return decodeEntities(text)
    .replace(/\r\n?/g, '\n')
    .replace(/[^\S\n]+/g, ' ')
    .replace(/ *\n */g, '\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
}

const NAMED_ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: ' ' };

function decodeEntities(text: string): string {
  return text.replace(/&(#x[0-9a-f]{1,6}|#\d{1,7}|[a-z]{2,6});/gi, (entity, body: string) => {
    if (body.startsWith('#')) {
      const code = body[1] === 'x' || body[1] === 'X' ? Number.parseInt(body.slice(2), 16) : Number(body.slice(1));
      return Number.isInteger(code) && code > 0 && code <= 0x10ffff && !(code >= 0xd800 && code <= 0xdfff)
        ? String.fromCodePoint(code)
        : entity;
    }
    return NAMED_ENTITIES[body.toLowerCase()] ?? entity;
  });
}
