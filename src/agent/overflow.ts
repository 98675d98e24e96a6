/**
 * When the provider says a request overflowed its context window (the token estimate fell short: a tokenizer that
 * differs from ours, a window smaller than configured), the turn is not failed and the model is not switched: the
 * older half of the visible history is archived (summarised into history.jsonl, as consolidation does) and the turn
 * is tried once more.
 */
import type { Consolidator } from '../memory/consolidator.js';
import type { Session } from '../session/types.js';

/**
 * Archives the visible history before the turn's own user message (at `currentUser`) up to the user message nearest
 * its middle, or all of it when it holds one earlier turn. Returns false when there was nothing to archive.
 */
export async function compactAfterOverflow(
  consolidator: Consolidator,
  session: Session,
  currentUser: number,
  signal?: AbortSignal,
): Promise<boolean> {
  const start = session.lastConsolidated;
  if (currentUser <= start) return false;
  const earlierTurns: number[] = [];
  for (let i = start + 1; i < currentUser; i++) if (session.messages[i]?.role === 'user') earlierTurns.push(i);
  const end = earlierTurns[Math.floor(earlierTurns.length / 2)] ?? currentUser;
  await consolidator.runExclusive(session.key, () => consolidator.archiveThrough(session, end, signal));
  return session.lastConsolidated > start;
}
