/**
 * Durable delivery of answers. A chat surface saves each answer with a `pending_delivery` marker in the session's
 * metadata (in the same append as the answer, so one is never on disk without the other); once the chat platform
 * took it, `<sessions>/<key>.delivered` records that answer (atomic write, a file of its own so a turn running in the
 * same session can never write the marker back over it). After a crash the answers whose marker has no record are
 * delivered again, and a turn cut off before its answer was saved (still `pending_user_turn`, started from a chat)
 * gets a notice in that chat, recorded the same way. Upstream nanobot ignores both: it reads `*.jsonl` only and keeps unknown metadata keys as they are.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import { writeFileAtomic } from '../util/fs.js';
import type { Session, SessionStore } from './types.js';

export const PENDING_DELIVERY_KEY = 'pending_delivery';

/** Which answer of a session: its index and its timestamp (an index alone is reused after /new). */
export interface DeliveryRef {
  sessionKey: string;
  index: number;
  timestamp: string;
}

export interface PendingDelivery extends DeliveryRef {
  channel: string;
  chatId: string;
  content: string;
  /** The answer itself, or a notice that the turn of the user's message `index` was cut off before it answered. */
  kind: 'answer' | 'interrupted';
}

/** Sent for a user message whose turn was cut off (SIGKILL, power loss) before its answer was saved. */
export const INTERRUPTED_NOTICE =
  'Sorry, I was stopped before I could answer your last message (the server restarted). Please send it again.';

const Marker = z.object({
  channel: z.string(),
  chat_id: z.string(),
  index: z.number().int().nonnegative(),
  timestamp: z.string(),
});
const Record_ = z.object({ index: z.number(), timestamp: z.string() });

/**
 * Marks the session's last message (the answer just added) as to be delivered to `target`, or clears the marker
 * when there is nothing to deliver. Returns the answer's reference for the surface to report back once sent.
 */
export function markPendingDelivery(
  session: Session,
  target: { channel: string; chatId: string } | undefined,
): Omit<DeliveryRef, 'sessionKey'> | undefined {
  const index = session.messages.length - 1;
  const answer = session.messages[index];
  const text = typeof answer?.content === 'string' ? answer.content : '';
  if (!target || answer?.role !== 'assistant' || !text.trim() || !answer.timestamp) {
    delete session.metadata[PENDING_DELIVERY_KEY];
    return undefined;
  }
  const marker: z.infer<typeof Marker> = {
    channel: target.channel,
    chat_id: target.chatId,
    index,
    timestamp: answer.timestamp,
  };
  session.metadata[PENDING_DELIVERY_KEY] = marker;
  return { index, timestamp: answer.timestamp };
}

export class DeliveryLog {
  constructor(readonly dir: string) {}

  pathFor(key: string): string {
    return join(this.dir, `${Buffer.from(key, 'utf8').toString('base64url')}.delivered`);
  }

  async markDelivered(ref: DeliveryRef): Promise<void> {
    const line = JSON.stringify({ index: ref.index, timestamp: ref.timestamp });
    await writeFileAtomic(this.pathFor(ref.sessionKey), `${line}\n`, 0o600);
  }

  async isDelivered(ref: DeliveryRef): Promise<boolean> {
    const text = await readFile(this.pathFor(ref.sessionKey), 'utf8').catch(() => undefined);
    if (text === undefined) return false;
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      return false;
    }
    const record = Record_.safeParse(parsed);
    return record.success && record.data.index === ref.index && record.data.timestamp === ref.timestamp;
  }

  /** Answers that were saved for delivery and never recorded as delivered, oldest first. */
  async undelivered(store: SessionStore): Promise<PendingDelivery[]> {
    const out: PendingDelivery[] = [];
    for (const summary of await store.list()) {
      const session = await store.load(summary.key);
      const pending = this.pendingOf(session);
      if (pending && !(await this.isDelivered(pending))) out.push(pending);
    }
    return out.reverse();
  }

  private pendingOf(session: Session): PendingDelivery | undefined {
    return this.answerOf(session) ?? interruptedOf(session);
  }

  private answerOf(session: Session): PendingDelivery | undefined {
    const marker = Marker.safeParse(session.metadata[PENDING_DELIVERY_KEY]);
    if (!marker.success) return undefined;
    const { index, timestamp, channel, chat_id: chatId } = marker.data;
    const answer = session.messages[index];
    // The marker must name the very answer it was written with; anything else (a rewritten session) is stale.
    if (answer?.role !== 'assistant' || answer.timestamp !== timestamp || typeof answer.content !== 'string') {
      return undefined;
    }
    return { sessionKey: session.key, index, timestamp, channel, chatId, content: answer.content, kind: 'answer' };
  }
}

/**
 * A turn still marked pending (its user message saved, no answer after it) that a chat channel started: the
 * process that ran it is gone, so the chat is told. `last_channel` says where (`<channel>:<chat id>`).
 */
function interruptedOf(session: Session): PendingDelivery | undefined {
  if (session.metadata.pending_user_turn !== true) return undefined;
  const where = session.metadata.last_channel;
  if (typeof where !== 'string' || !where.includes(':')) return undefined;
  const index = session.messages.findLastIndex((message) => message.role === 'user');
  const user = session.messages[index];
  if (!user?.timestamp || session.messages.slice(index + 1).some((m) => m.role === 'assistant' && m.content)) {
    return undefined;
  }
  const split = where.indexOf(':');
  return {
    sessionKey: session.key,
    index,
    timestamp: user.timestamp,
    channel: where.slice(0, split),
    chatId: where.slice(split + 1),
    content: INTERRUPTED_NOTICE,
    kind: 'interrupted',
  };
}
