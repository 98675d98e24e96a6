/**
 * Which history.jsonl entries a session's prompt may show under `# Recent History` (nanobot's rule): a chat sees
 * only the summaries of its own conversation, so one chat's past never leaks into another's prompt. Entries
 * without a session key (written by older versions) belong to no chat and are shown to none. With
 * `agents.defaults.unifiedSession` every channel is one conversation: all entries are shown but those of
 * internal sessions (cron jobs, Dream, heartbeat).
 */
import type { HistoryEntry } from './history.js';

const INTERNAL_PREFIXES = ['cron:', 'dream:'];
const INTERNAL_KEYS = new Set(['heartbeat']);

function isInternalSession(key: string | undefined): boolean {
  if (!key) return false;
  return INTERNAL_KEYS.has(key) || INTERNAL_PREFIXES.some((prefix) => key.startsWith(prefix));
}

/**
 * The filter for `sessionKey`'s prompt; undefined (every entry) when the prompt belongs to no session, as
 * nanobot's does.
 */
export function historyVisibleTo(
  sessionKey: string | undefined,
  unifiedSession: boolean,
): ((entry: HistoryEntry) => boolean) | undefined {
  if (sessionKey === undefined) return undefined;
  if (!unifiedSession) return (entry) => entry.session_key === sessionKey;
  return (entry) => entry.session_key === sessionKey || !isInternalSession(entry.session_key);
}
