/**
 * Crash recovery: a turn that died mid-way left `pending_user_turn` (its user message is saved) and maybe a
 * `runtime_checkpoint` (the tool round in flight). Before the next turn, the finished part is written into the
 * transcript once, calls that never finished are answered as interrupted, and the turn is closed — so the history
 * stays well-formed for every provider and nothing that was done is lost.
 *
 * A turn records its owner (`turn_owner`: pid + process start time) beside `pending_user_turn`. Another process on the
 * same session (a second `agent -m`, or one beside the gateway) finds the turn still owned by a live process and
 * leaves it alone: only a turn whose owner is gone (killed, crashed) or is this very process (whose per-session queue
 * says that turn is no longer running) is repaired. A turn with no recorded owner (older files, nanobot's) is too.
 */
import type { ChatMessage, ToolCall } from '../providers/types.js';
import type { Session } from '../session/types.js';
import {
  currentOwner,
  isCurrentProcess,
  ownerAlive,
  type ProcessOwner,
  processOwnerSchema,
} from '../util/process-owner.js';
import type { RuntimeCheckpoint } from './runner.js';

export const INTERRUPTED_REPLY = '(The previous turn was interrupted before it finished.)';
export const INTERRUPTED_TOOL_RESULT = 'Task interrupted before this tool finished.';

/** Marks a turn as started by this process (its user message is about to be saved). */
export function claimTurn(metadata: Record<string, unknown>): void {
  metadata.pending_user_turn = true;
  metadata.turn_owner = currentOwner();
}

/** The turn finished: nothing to repair. */
export function releaseTurn(metadata: Record<string, unknown>): void {
  delete metadata.pending_user_turn;
  delete metadata.turn_owner;
}

/** The live process that is still running this session's unfinished turn, if another one is. */
export function turnRunningElsewhere(session: Session): ProcessOwner | undefined {
  const owner = processOwnerSchema.safeParse(session.metadata.turn_owner);
  if (!owner.success || isCurrentProcess(owner.data) || !ownerAlive(owner.data)) return undefined;
  return owner.data;
}

/** Repairs `session` in place; returns true when anything changed. A turn another live process runs is left alone. */
export function restoreInterruptedTurn(session: Session, now = new Date()): boolean {
  const checkpoint = readCheckpoint(session.metadata.runtime_checkpoint);
  const pending = session.metadata.pending_user_turn === true;
  if (!checkpoint && !pending && session.metadata.runtime_checkpoint === undefined) return false;
  if (turnRunningElsewhere(session)) return false;
  const at = now.toISOString();

  if (checkpoint) {
    const calls = checkpoint.assistant.tool_calls ?? [];
    const known = new Set(session.messages.flatMap((m) => m.tool_calls?.map((c) => c.id) ?? []));
    const answered = new Set(
      session.messages.flatMap((m) => (m.role === 'tool' && m.tool_call_id ? [m.tool_call_id] : [])),
    );
    // The round may already be in the transcript (a crash between saving it and clearing the checkpoint).
    if (!calls.every((call) => known.has(call.id))) session.messages.push({ ...checkpoint.assistant });
    for (const call of calls) {
      if (answered.has(call.id)) continue;
      const done = checkpoint.completed.find((m) => m.tool_call_id === call.id);
      session.messages.push(done ? { ...done } : interruptedResult(call, at));
    }
  }
  if (pending && session.messages.at(-1)?.role !== 'assistant') {
    session.messages.push({ role: 'assistant', content: INTERRUPTED_REPLY, timestamp: at });
  }
  delete session.metadata.runtime_checkpoint;
  releaseTurn(session.metadata);
  return true;
}

function interruptedResult(call: ToolCall, timestamp: string): ChatMessage {
  return { role: 'tool', tool_call_id: call.id, name: call.function.name, content: INTERRUPTED_TOOL_RESULT, timestamp };
}

/** The stored checkpoint, if it has the expected shape (it comes from a file another version may have written). */
function readCheckpoint(value: unknown): RuntimeCheckpoint | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const { assistant, completed } = value as Partial<RuntimeCheckpoint>;
  if (typeof assistant !== 'object' || assistant === null || assistant.role !== 'assistant') return undefined;
  if (!Array.isArray(assistant.tool_calls)) return undefined;
  return { assistant, completed: Array.isArray(completed) ? completed : [], pending: [] };
}
