/**
 * `message`: proactive sends to the current chat or another channel/chat, with attachments and buttons.
 * Rate-limited per session so a looping model cannot flood a chat. Another chat must be one its channel's access
 * rules admit (a prompt-injected model must not write to strangers): the surface passes that check in.
 *
 * Channels open attachments later, by path, in their own time. A workspace path can be swapped for a link out by
 * then (the sandboxed shell writes there), so each attachment is opened, checked against the policy, and copied
 * into nanobot's media dir (outside the workspace, hidden from the sandbox); the channel gets the copy's path.
 */
import fs from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import type { OutboundMessage } from '../bus/types.js';
import { policyCheck } from '../security/checked-open.js';
import { copyCheckedFile } from '../security/checked-read.js';
import type { PathPolicy } from '../security/workspace.js';
import { openFailure } from './filesystem/open-failure.js';
import { defineTool, fail, ok } from './types.js';

/** The surface's answer for a target that is not the current chat (the gateway asks the channel). */
export type MessageTargetCheck = (channel: string, chatId: string) => { ok: true } | { ok: false; why: string };

/** Copies older than this are deleted when the next one is made (channels send within minutes). */
const KEEP_COPIES_MS = 7 * 24 * 60 * 60 * 1000;

export interface MessageToolOptions {
  /** Delivers the message (the bus's `publishOutbound`). */
  send: (message: OutboundMessage) => void;
  /** Attachments must be readable under this policy. */
  policy: PathPolicy;
  /** Where attachments are copied for the channels (`<dataDir>/media/outbound`); must lie outside the workspace. */
  mediaDir: string;
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
      for (const requested of args.media ?? []) {
        const resolved = options.policy.resolve(requested, 'read');
        if (!resolved.ok) return fail(resolved.error);
        if (!fs.statSync(resolved.path, { throwIfNoEntry: false })?.isFile()) {
          return fail(`Attachment not found: ${requested} (give the path of a file).`);
        }
        try {
          media.push(
            await copyCheckedFile(resolved.path, policyCheck(options.policy, 'read'), options.mediaDir, now()),
          );
        } catch (error) {
          return fail(openFailure(error, requested, `Attachment not found: ${requested}`));
        }
      }
      if (media.length > 0) pruneCopies(options.mediaDir, now());
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

/** Deletes copies older than a week (nanobot's own directory, outside the workspace). */
function pruneCopies(mediaDir: string, at: number): void {
  for (const entry of fs.readdirSync(mediaDir, { withFileTypes: true })) {
    const made = Number(entry.name.split('-')[0]);
    if (!entry.isDirectory() || !Number.isFinite(made) || at - made < KEEP_COPIES_MS) continue;
    fs.rmSync(path.join(mediaDir, entry.name), { recursive: true, force: true });
  }
}
