/**
 * Crash recovery: a turn that died mid-way left `pending_user_turn` (its user message is saved) and maybe a
 * `runtime_checkpoint` (the tool round in flight). Before the next turn, the finished part is written into the
 * transcript once, calls that never finished are answered as interrupted, and the turn is closed — so the history
 * stays well-formed for every provider and nothing that was done is lost.
 */
import type { ChatMessage, ToolCall } from '../providers/types.js';
import type { Session } from '../session/types.js';
import type { RuntimeCheckpoint } from './runner.js';

export const INTERRUPTED_REPLY = '(The previous turn was interrupted before it finished.)';
export const INTERRUPTED_TOOL_RESULT = 'Task interrupted before this tool finished.';

/** Repairs `session` in place; returns true when anything changed. */
export function restoreInterruptedTurn(session: Session, now = new Date()): boolean {
  const checkpoint = readCheckpoint(session.metadata.runtime_checkpoint);
  const pending = session.metadata.pending_user_turn === true;
  if (!checkpoint && !pending && session.metadata.runtime_checkpoint === undefined) return false;
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
  delete session.metadata.pending_user_turn;
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
