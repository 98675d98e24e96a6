/**
 * `message`: proactive sends to the current chat or another channel/chat, with attachments and buttons.
 * Rate-limited per session so a looping model cannot flood a chat. Another chat must be one its channel's access
 * rules admit (a prompt-injected model must not write to strangers): the surface passes that check in.
 */
import { existsSync } from 'node:fs';
import { z } from 'zod';
import type { OutboundMessage } from '../bus/types.js';
import type { PathPolicy } from '../security/workspace.js';
import { defineTool, fail, ok } from './types.js';

/** The surface's answer for a target that is not the current chat (the gateway asks the channel). */
export type MessageTargetCheck = (channel: string, chatId: string) => { ok: true } | { ok: false; why: string };

export interface MessageToolOptions {
  /** Delivers the message (the bus's `publishOutbound`). */
  send: (message: OutboundMessage) => void;
  /** Attachments must be readable under this policy. */
  policy: PathPolicy;
  /** `tools.maxSessionMessagesPerMinute` (nanobot: 6). */
  maxPerMinute?: number;
  now?: () => number;
  /** Whether another chat than the current one may be written to; without it only the current chat can. */
  allowTarget?: MessageTargetCheck;
}

const parameters = z.object({
  content: z.string().min(1).describe('The message text.'),
  channel: z.string().optional().describe('Target channel (e.g. telegram); defaults to the current one.'),
  chat_id: z.string().optional().describe('Target chat id; defaults to the current chat.'),
  media: z.array(z.string()).max(10).optional().describe('Paths of files to attach.'),
  buttons: z
    .array(z.array(z.string().min(1)))
    .optional()
    .describe('Quick-reply buttons, as rows of labels.'),
});

export function createMessageTool(options: MessageToolOptions) {
  const maxPerMinute = options.maxPerMinute ?? 6;
  const now = options.now ?? Date.now;
  const sent = new Map<string, number[]>();

  return defineTool({
    name: 'message',
    description:
      'Send a message to the user now (before your final answer), or to another chat. Use it for progress updates ' +
      'on long tasks, for files (media), or to reach a different channel/chat. Your final answer is delivered anyway.',
    parameters,
    async execute(args, ctx) {
      const channel = args.channel ?? ctx.channel;
      const chatId = args.chat_id ?? ctx.chatId;
      if (!channel || !chatId)
        return fail('No target: give channel and chat_id (there is no current chat in this context).');

      // A send to the chat the turn came from stays in the thread the user wrote in (metadata as channels read it).
      const sameChat = channel === ctx.channel && chatId === ctx.chatId;
      if (!sameChat) {
        const verdict = options.allowTarget?.(channel, chatId) ?? {
          ok: false,
          why: 'here only the current chat can be messaged (other chats are reached through `nanobot gateway`)',
        };
        if (!verdict.ok) return fail(`Not sent to ${channel}:${chatId}: ${verdict.why}.`);
      }

      const key = ctx.sessionKey ?? `${channel}:${chatId}`;
      const recent = (sent.get(key) ?? []).filter((t) => now() - t < 60_000);
      if (recent.length >= maxPerMinute) {
        return fail(
          `Rate limit: at most ${maxPerMinute} messages per minute from one session. Put the rest in your answer.`,
        );
      }

      const media: string[] = [];
      for (const path of args.media ?? []) {
        const resolved = options.policy.resolve(path, 'read');
        if (!resolved.ok) return fail(resolved.error);
        if (!existsSync(resolved.path)) return fail(`Attachment not found: ${path}`);
        media.push(resolved.path);
      }
      options.send({
        channel,
        chatId,
        content: args.content,
        ...(media.length ? { media } : {}),
        ...(args.buttons?.length ? { buttons: args.buttons } : {}),
        ...(sameChat && ctx.threadId ? { metadata: { thread_id: ctx.threadId } } : {}),
      });
      recent.push(now());
      sent.set(key, recent);
      const extras = media.length ? ` with ${media.length} attachment${media.length > 1 ? 's' : ''}` : '';
      return ok(`Message sent to ${channel}:${chatId}${extras}.`);
    },
  });
}
