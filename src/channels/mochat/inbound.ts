/**
 * What happens to one MoChat message on its way to the agent, as upstream does it: the agent's own messages are
 * skipped, a message id already handled in that session or panel is dropped (the socket, a catch-up and a notify
 * push may all bring the same message), and in panels the mention rules and the reply delay apply. With
 * `replyDelayMode: "non-mention"` a panel message that does not mention the agent waits up to replyDelayMs; the
 * waiting messages go to the agent together ("name: text" lines) when the time is up, or at once with the next
 * message that mentions it.
 */
import { randomUUID } from 'node:crypto';
import { errorMessage } from '../../util/errors.js';
import type { Logger } from '../../util/log.js';
import { listNames } from '../access.js';
import type { IncomingMessage } from '../platform.js';
import {
  type BufferedEntry,
  bufferedBody,
  contentText,
  epochMs,
  isObject,
  type MessageEvent,
  requiresMention,
  stringField,
  type TargetKind,
  wasMentioned,
  withoutMention,
} from './events.js';
import type { MochatSettings } from './index.js';

/** Ids remembered per session or panel (upstream's MAX_SEEN_MESSAGE_IDS). */
const MAX_SEEN = 2000;

interface Delayed {
  entries: BufferedEntry[];
  timer?: NodeJS.Timeout;
}

export interface InboundOptions {
  settings: () => MochatSettings;
  deliver(message: IncomingMessage): Promise<void>;
  /** The agent's own message echoed back (see own.ts): never taken as incoming, even without agentUserId. */
  isOwnMessage(targetId: string, messageId: string, author: string, text: string): boolean;
  log: Logger;
}

export class MochatInbound {
  private readonly seen = new Map<string, { set: Set<string>; order: string[] }>();
  private readonly delayed = new Map<string, Delayed>();

  constructor(private readonly options: InboundOptions) {}

  /** Marks a message id handled; true when it already was. */
  remember(key: string, messageId: string): boolean {
    let seen = this.seen.get(key);
    if (!seen) {
      seen = { set: new Set(), order: [] };
      this.seen.set(key, seen);
    }
    if (seen.set.has(messageId)) return true;
    seen.set.add(messageId);
    seen.order.push(messageId);
    while (seen.order.length > MAX_SEEN) seen.set.delete(seen.order.shift() as string);
    return false;
  }

  async process(targetId: string, event: MessageEvent, kind: TargetKind): Promise<void> {
    const settings = this.options.settings();
    const payload = event.payload;
    const author = stringField(payload, 'author');
    if (!author || (settings.agentUserId && author === settings.agentUserId)) return;
    const messageId = stringField(payload, 'messageId');
    if (this.options.isOwnMessage(targetId, messageId, author, contentText(payload.content))) return;
    const key = `${kind}:${targetId}`;
    if (messageId && this.remember(key, messageId)) return;

    const info = isObject(payload.authorInfo) ? payload.authorInfo : {};
    const groupId = stringField(payload, 'groupId');
    const mentioned = wasMentioned(payload, settings.agentUserId);
    const entry: BufferedEntry = {
      body: withoutMention(contentText(payload.content), settings.agentUserId) || '[empty message]',
      author,
      senderName: stringField(info, 'nickname', 'email'),
      senderUsername: stringField(info, 'agentId'),
      ...(epochMs(event.timestamp) !== undefined ? { timestamp: epochMs(event.timestamp) } : {}),
      messageId,
      groupId,
    };
    if (kind === 'session') return this.dispatch(targetId, kind, [entry], mentioned, false);

    const needsMention = groupId !== '' && requiresMention(settings, targetId, groupId);
    if (settings.replyDelayMode !== 'non-mention') {
      if (needsMention && !mentioned) return;
      return this.dispatch(targetId, kind, [entry], mentioned, !needsMention);
    }
    if (mentioned) return this.flush(key, targetId, kind, entry, true);
    // Only people allowFrom names are held for the next answer: a stranger's words never reach the agent this way.
    if (!settings.allowFrom.includes('*') && !listNames(settings.allowFrom, { id: author })) return;
    this.hold(key, targetId, kind, entry, needsMention);
  }

  /** Drops every waiting panel message (the channel stops). */
  clear(): void {
    for (const state of this.delayed.values()) clearTimeout(state.timer);
    this.delayed.clear();
  }

  private hold(key: string, targetId: string, kind: TargetKind, entry: BufferedEntry, needsMention: boolean): void {
    const state = this.delayed.get(key) ?? { entries: [] };
    this.delayed.set(key, state);
    state.entries.push(entry);
    clearTimeout(state.timer);
    state.timer = setTimeout(() => {
      state.timer = undefined;
      // Where a mention is required, what waited is dropped unless groupPolicy answers anything ("open").
      this.flush(key, targetId, kind, undefined, !needsMention).catch((err: unknown) =>
        this.options.log.warn(`handing waiting MoChat messages of ${key} to the agent failed: ${errorMessage(err)}`),
      );
    }, this.options.settings().replyDelayMs);
    state.timer.unref();
  }

  private async flush(
    key: string,
    targetId: string,
    kind: TargetKind,
    entry: BufferedEntry | undefined,
    addressed: boolean,
  ): Promise<void> {
    const state = this.delayed.get(key);
    if (state) {
      clearTimeout(state.timer);
      this.delayed.delete(key);
    }
    const entries = [...(state?.entries ?? []), ...(entry ? [entry] : [])];
    if (entries.length) await this.dispatch(targetId, kind, entries, entry !== undefined, addressed);
  }

  /** `addressed`: the framework takes it as directed at the agent (a mention, or a panel that needs none). */
  private async dispatch(
    targetId: string,
    kind: TargetKind,
    entries: BufferedEntry[],
    mentioned: boolean,
    addressed: boolean,
  ): Promise<void> {
    const last = entries.at(-1);
    if (!last) return;
    const isGroup = last.groupId !== '';
    await this.options.deliver({
      id: last.messageId || `${kind}:${targetId}:${randomUUID()}`,
      chatId: targetId,
      sender: { id: last.author, ...(last.senderName ? { name: last.senderName } : {}) },
      chatType: kind === 'session' ? 'direct' : 'group',
      text: bufferedBody(entries, isGroup) || '[empty message]',
      mentioned: mentioned || addressed,
      metadata: {
        mochat: {
          message_id: last.messageId,
          timestamp: last.timestamp ?? null,
          is_group: isGroup,
          group_id: last.groupId,
          sender_name: last.senderName,
          sender_username: last.senderUsername,
          target_kind: kind,
          was_mentioned: mentioned,
          buffered_count: entries.length,
        },
      },
    });
  }
}
