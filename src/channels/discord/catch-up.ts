/**
 * Catching up after a new gateway session. Discord replays missed events only when a session is resumed; after a
 * fresh IDENTIFY (the connection stayed down too long, or the gateway was rebuilt) whatever users wrote meanwhile is
 * never delivered. So the platform remembers the newest user message of each recent chat, and every new session
 * asks the REST API for the messages after it.
 */
import type { Client, Message } from 'discord.js';

/** One page of history: more than this written while disconnected is reported, not fetched. */
export const CATCH_UP_LIMIT = 100;

/** The newest user message seen per chat, for the most recently active chats. */
export class ChatCursors {
  private readonly cursors = new Map<string, string>();

  constructor(private readonly maxChats = 200) {}

  saw(chatId: string, messageId: string): void {
    const current = this.cursors.get(chatId);
    const newest = current !== undefined && compareIds(current, messageId) > 0 ? current : messageId;
    // Re-inserting keeps the map in order of activity, so the least active chat is forgotten first.
    this.cursors.delete(chatId);
    this.cursors.set(chatId, newest);
    if (this.cursors.size > this.maxChats) {
      const oldest = this.cursors.keys().next().value;
      if (oldest !== undefined) this.cursors.delete(oldest);
    }
  }

  /** A chat the bot can no longer read (removed from the server, channel deleted) is not asked again. */
  forget(chatId: string): void {
    this.cursors.delete(chatId);
  }

  entries(): [chatId: string, lastMessageId: string][] {
    return [...this.cursors.entries()];
  }
}

/** Messages in a chat after `after`, oldest first (at most CATCH_UP_LIMIT; `more` says whether some were left). */
export async function messagesAfter(
  client: Client,
  chatId: string,
  after: string,
): Promise<{ messages: Message[]; more: boolean }> {
  const channel = await client.channels.fetch(chatId);
  if (!channel?.isTextBased()) return { messages: [], more: false };
  const page = await channel.messages.fetch({ after, limit: CATCH_UP_LIMIT, cache: false });
  const messages = [...page.values()].sort((a, b) => compareIds(a.id, b.id));
  return { messages, more: page.size >= CATCH_UP_LIMIT };
}

/** Snowflakes order by time; compared as numbers (they outgrow doubles, hence BigInt). */
export function compareIds(a: string, b: string): number {
  try {
    const x = BigInt(a);
    const y = BigInt(b);
    return x < y ? -1 : x > y ? 1 : 0;
  } catch {
    return a.length - b.length || a.localeCompare(b);
  }
}
