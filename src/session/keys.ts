/**
 * Session keys. A chat's conversation is `channel:chat_id` unless the message names its own (a thread, a
 * trigger). With `agents.defaults.unifiedSession` (nanobot's single-user, many-devices mode) every chat message
 * without its own key joins one conversation, `unified:default`, as in nanobot.
 */
export const UNIFIED_SESSION_KEY = 'unified:default';

export function sessionKeyFor(
  message: { channel: string; chatId: string; sessionKey?: string | undefined },
  unifiedSession = false,
): string {
  if (message.sessionKey) return message.sessionKey;
  return unifiedSession ? UNIFIED_SESSION_KEY : `${message.channel}:${message.chatId}`;
}
