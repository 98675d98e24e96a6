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
