/**
 * Who may talk to the agent. Deny by default: an empty `allowFrom` lets nobody in, `"*"` lets everyone in, and
 * entries are ids (exact) or `@username`s (see listNames). A stranger in a direct chat gets a pairing code the owner
 * can approve; in groups strangers are ignored, and the agent answers as `groupPolicy` says.
 */

export interface Sender {
  id: string;
  username?: string;
}

export interface AccessSettings {
  allowFrom: readonly string[];
  groupPolicy: 'mention' | 'open' | 'allowlist';
  groupAllowFrom: readonly string[];
}

export interface AccessRequest {
  sender: Sender;
  chatId: string;
  chatType: 'direct' | 'group';
  /** The bot was @mentioned or replied to. */
  mentioned?: boolean;
}

export type AccessDecision =
  | { action: 'accept' }
  /** A stranger in a direct chat: answer with a pairing code. */
  | { action: 'pair' }
  | { action: 'ignore'; reason: string };

/**
 * True when an `allowFrom`-style list names this sender. An entry matches the sender's id exactly (after trimming
 * the entry); it names a username only when written `@name`, so an id-looking entry never admits a user who chose
 * that id as username. Usernames compare ignoring ASCII case only: Unicode case folding would let look-alikes in
 * (the Kelvin sign K lower-cases to k).
 */
export function listNames(list: readonly string[], sender: Sender): boolean {
  const username = sender.username === undefined ? '' : asciiLower(sender.username.replace(/^@/, ''));
  return list.some((raw) => {
    const entry = raw.trim();
    if (entry === '') return false;
    if (entry === sender.id) return true;
    return username !== '' && entry.startsWith('@') && asciiLower(entry.slice(1)) === username;
  });
}

const asciiLower = (value: string) => value.replace(/[A-Z]/g, (letter) => letter.toLowerCase());

export function isAllowed(settings: AccessSettings, sender: Sender, paired: (senderId: string) => boolean): boolean {
  return settings.allowFrom.includes('*') || listNames(settings.allowFrom, sender) || paired(sender.id);
}

/** Owners are named in `allowFrom` itself (not via `"*"`, not paired): only they manage pairing from a chat. */
export function isOwner(settings: AccessSettings, sender: Sender): boolean {
  return listNames(
    settings.allowFrom.filter((entry) => entry !== '*'),
    sender,
  );
}

export function decideAccess(
  settings: AccessSettings,
  request: AccessRequest,
  paired: (senderId: string) => boolean,
): AccessDecision {
  const allowed = isAllowed(settings, request.sender, paired);
  if (request.chatType === 'direct') return allowed ? { action: 'accept' } : { action: 'pair' };
  if (!allowed) return { action: 'ignore', reason: `sender ${request.sender.id} is not in allowFrom` };
  switch (settings.groupPolicy) {
    case 'open':
      return { action: 'accept' };
    case 'allowlist':
      return settings.groupAllowFrom.includes(request.chatId)
        ? { action: 'accept' }
        : { action: 'ignore', reason: `group ${request.chatId} is not in groupAllowFrom` };
    default:
      return request.mentioned ? { action: 'accept' } : { action: 'ignore', reason: 'not mentioned' };
  }
}

/** A short description of an allowFrom list for status output. */
export function describeAllowFrom(list: readonly string[]): string {
  if (list.includes('*')) return 'everyone (*)';
  if (list.length === 0) return 'nobody yet (pair with a code, or add ids to allowFrom)';
  const shown = list.slice(0, 4).join(', ');
  return list.length > 4 ? `${shown} and ${list.length - 4} more` : shown;
}

/** Whether the agent may write to a chat on its own (the `message` tool); a refusal says why. */
export type ChatAdmission = { ok: true } | { ok: false; why: string };

/** What a channel knows about a chat it did not just receive from. */
export interface ChatFacts {
  /** The person a direct chat with this id is with, when the id names them (a Telegram user id, an address). */
  directWith?: Sender;
  /** People whose messages in this chat were accepted since the channel started, and in what kind of chat. */
  seen: readonly { sender: Sender; chatType: 'direct' | 'group' }[];
}

/**
 * A chat the access rules admit as it stands now: `"*"`, a group in groupAllowFrom, or a chat whose person
 * (direct) or one of whose admitted senders is still let in by allowFrom / pairing / groupPolicy.
 */
export function admitsChat(
  settings: AccessSettings,
  chatId: string,
  facts: ChatFacts,
  paired: (senderId: string) => boolean,
): ChatAdmission {
  if (settings.allowFrom.includes('*') || settings.groupAllowFrom.includes(chatId)) return { ok: true };
  const people = [
    ...(facts.directWith ? [{ sender: facts.directWith, chatType: 'direct' as const }] : []),
    ...facts.seen,
  ];
  const admitted = people.some(
    ({ sender, chatType }) =>
      decideAccess(settings, { sender, chatId, chatType, mentioned: true }, paired).action === 'accept',
  );
  if (admitted) return { ok: true };
  return {
    ok: false,
    why:
      `chat ${JSON.stringify(chatId)} is not one the access rules admit: no one allowed (allowFrom, pairing) has ` +
      'written from it and it is not in groupAllowFrom. Give the exact chat id of a chat the user wrote from',
  };
}

/** The senders admitted per chat, newest last: a few per chat, a bounded number of chats. */
export class SeenChats {
  private readonly chats = new Map<string, Map<string, { sender: Sender; chatType: 'direct' | 'group' }>>();

  constructor(
    private readonly maxChats = 5000,
    private readonly maxSendersPerChat = 20,
  ) {}

  add(chatId: string, sender: Sender, chatType: 'direct' | 'group'): void {
    const senders = this.chats.get(chatId) ?? new Map();
    this.chats.delete(chatId);
    senders.delete(sender.id);
    senders.set(sender.id, { sender, chatType });
    if (senders.size > this.maxSendersPerChat) senders.delete(senders.keys().next().value ?? '');
    this.chats.set(chatId, senders);
    if (this.chats.size > this.maxChats) this.chats.delete(this.chats.keys().next().value ?? '');
  }

  of(chatId: string): { sender: Sender; chatType: 'direct' | 'group' }[] {
    return [...(this.chats.get(chatId)?.values() ?? [])];
  }
}
