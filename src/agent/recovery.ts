/**
 * Crash recovery: a turn that died mid-way left `pending_user_turn` (its user message is saved), and maybe a tool
 * round whose call is in the transcript with only some of its results (the loop appends a round as it goes). Before
 * the next turn, calls that never finished are answered as interrupted and the turn is closed — so the history stays
 * well-formed for every provider and nothing that was done is lost. A `runtime_checkpoint` in the metadata (the
 * round in flight, as earlier versions and upstream nanobot save it) is written into the transcript once first.
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

export const INTERRUPTED_REPLY = '(The previous turn was interrupted before it finished.)';
export const INTERRUPTED_TOOL_RESULT = 'Task interrupted before this tool finished.';

/** A tool round in flight, as a `runtime_checkpoint` records it. */
interface StoredCheckpoint {
  assistant: ChatMessage;
  completed: ChatMessage[];
}

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

  if (checkpoint) restoreCheckpoint(session, checkpoint, at);
  answerOpenCalls(session, at);
  if (pending && session.messages.at(-1)?.role !== 'assistant') {
    session.messages.push({ role: 'assistant', content: INTERRUPTED_REPLY, timestamp: at });
  }
  delete session.metadata.runtime_checkpoint;
  releaseTurn(session.metadata);
  return true;
}

/** Writes a checkpointed round into the transcript, unless it is there already (saved just before the crash). */
function restoreCheckpoint(session: Session, checkpoint: StoredCheckpoint, at: string): void {
  const calls = checkpoint.assistant.tool_calls ?? [];
  const known = new Set(session.messages.flatMap((m) => m.tool_calls?.map((c) => c.id) ?? []));
  const answered = new Set(
    session.messages.flatMap((m) => (m.role === 'tool' && m.tool_call_id ? [m.tool_call_id] : [])),
  );
  if (!calls.every((call) => known.has(call.id))) session.messages.push({ ...checkpoint.assistant });
  const done = new Map(checkpoint.completed.map((m) => [m.tool_call_id, m]));
  for (const call of calls) {
    if (answered.has(call.id)) continue;
    const result = done.get(call.id);
    session.messages.push(result ? { ...result } : interruptedResult(call, at));
  }
}

/** Answers, as interrupted, the calls of the transcript's last round that have no result (a crash mid-round). */
function answerOpenCalls(session: Session, at: string): void {
  const { messages } = session;
  let start = messages.length;
  while (start > 0 && messages[start - 1]?.role === 'tool') start--;
  const calls = messages[start - 1]?.tool_calls;
  if (!calls?.length) return;
  const answered = new Set(messages.slice(start).map((m) => m.tool_call_id));
  for (const call of calls) if (!answered.has(call.id)) messages.push(interruptedResult(call, at));
}

function interruptedResult(call: ToolCall, timestamp: string): ChatMessage {
  return { role: 'tool', tool_call_id: call.id, name: call.function.name, content: INTERRUPTED_TOOL_RESULT, timestamp };
}

/**
 * The stored checkpoint, if it has the expected shape (it comes from a file another version may have written):
 * `{assistant, completed}` (earlier nanobot-ts) or `{assistant_message, completed_tool_results}` (upstream).
 */
function readCheckpoint(value: unknown): StoredCheckpoint | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const record = value as Record<string, unknown>;
  const assistant = (record.assistant ?? record.assistant_message) as ChatMessage | undefined;
  const completed = record.completed ?? record.completed_tool_results;
  if (typeof assistant !== 'object' || assistant === null || assistant.role !== 'assistant') return undefined;
  if (!Array.isArray(assistant.tool_calls)) return undefined;
  const results = Array.isArray(completed) ? (completed as unknown[]) : [];
  return { assistant, completed: results.filter(isToolResult) };
}

function isToolResult(value: unknown): value is ChatMessage {
  return typeof value === 'object' && value !== null && (value as ChatMessage).role === 'tool';
}
