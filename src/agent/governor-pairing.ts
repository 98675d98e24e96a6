/**
 * Tool-call pairing for the model-side copy of a history. Providers reject (HTTP 400) a request where a tool result
 * has no matching call, a call has no result, or something sits between a call and its results; stored sessions reach
 * those shapes through crashes, interrupted turns and trimming at the wrong boundary.
 */
import type { ChatMessage, MessageContent, ToolCall } from '../providers/types.js';

export const MISSING_TOOL_RESULT = '[tool result missing: the call was interrupted]';

export interface PairingReport {
  /** Calls that had no result and were given a placeholder one. */
  backfilledResults: number;
  /** Results matching no call of their assistant message, including results of removed malformed calls. */
  droppedOrphanResults: number;
  /** Second and later results for the same call id (the first one is kept). */
  droppedDuplicateResults: number;
  /** Calls without an id or name, or whose arguments are not a JSON object. */
  droppedMalformedCalls: number;
  /** Assistant messages left with neither content nor tool calls. */
  droppedEmptyAssistants: number;
  /** Results found after another message and moved up next to their call. */
  movedResults: number;
}

/** The assistant message whose results are being collected. */
interface OpenCalls {
  calls: ToolCall[];
  /** The result found for each call, by position (calls per message are few: arrays beat sets here). */
  results: (ChatMessage | undefined)[];
  /** Non-tool messages seen after the assistant message; they are emitted after its results. */
  deferred: ChatMessage[];
}

/**
 * Returns a repaired copy: each assistant message with tool calls is directly followed by exactly one result per
 * call, in call order. Input messages are never modified; every returned message is a fresh shallow copy without
 * the session-only `timestamp`.
 */
export function repairToolPairing(messages: readonly ChatMessage[]): {
  messages: ChatMessage[];
  report: PairingReport;
} {
  const out: ChatMessage[] = [];
  const repair = new PairingRepair((message) => out.push(message));
  for (const message of messages) repair.add(message);
  repair.finish();
  return { messages: out, report: repair.report };
}

export const emptyPairingReport = (): PairingReport => ({
  backfilledResults: 0,
  droppedOrphanResults: 0,
  droppedDuplicateResults: 0,
  droppedMalformedCalls: 0,
  droppedEmptyAssistants: 0,
  movedResults: 0,
});

/**
 * The repair as a stream: messages go in one at a time and come out through `emit` once their place is final.
 * Whenever it is `settled` (no assistant message waits for results), everything fed so far has been emitted for good
 * and the rest of a history is repaired the same whatever came before, so a caller may keep the output up to a
 * settled point and resume from there with a new repair seeded with the report so far.
 */
export class PairingRepair {
  readonly report: PairingReport;
  private open: OpenCalls | undefined;

  constructor(
    private readonly emit: (message: ChatMessage) => void,
    report: PairingReport = emptyPairingReport(),
  ) {
    this.report = report;
  }

  get settled(): boolean {
    return this.open === undefined;
  }

  add(message: ChatMessage): void {
    const { report, open } = this;
    if (message.role === 'tool') {
      const id = message.tool_call_id;
      // Only the immediately preceding assistant message can own a result; anything else is an orphan.
      const at = open && id !== undefined ? indexOfCall(open.calls, id) : -1;
      if (!open || at === -1) {
        report.droppedOrphanResults++;
      } else if (open.results[at]) {
        report.droppedDuplicateResults++;
      } else {
        if (open.deferred.length > 0) report.movedResults++;
        open.results[at] = modelCopy(message);
      }
      return;
    }
    if (message.role !== 'assistant') {
      if (open) open.deferred.push(modelCopy(message));
      else this.emit(modelCopy(message));
      return;
    }
    this.finish();
    const calls = message.tool_calls ?? [];
    const valid = uniqueWellFormedCalls(calls);
    report.droppedMalformedCalls += calls.length - valid.length;
    if (valid.length === 0 && !hasContent(message.content)) {
      report.droppedEmptyAssistants++;
      return;
    }
    const copy = modelCopy(message);
    // An empty tool_calls array is itself rejected by OpenAI-style APIs, so the key goes.
    if (valid.length === 0) delete copy.tool_calls;
    else if (valid.length !== calls.length) copy.tool_calls = valid;
    this.emit(copy);
    if (valid.length > 0) {
      this.open = { calls: valid, results: new Array<ChatMessage | undefined>(valid.length), deferred: [] };
    }
  }

  /** Emits the open calls' results (a placeholder for each missing one) and the messages held back behind them. */
  finish(): void {
    const { open } = this;
    if (!open) return;
    this.open = undefined;
    for (const [i, call] of open.calls.entries()) {
      const result = open.results[i];
      if (result) {
        this.emit(result);
        continue;
      }
      this.report.backfilledResults++;
      this.emit({ role: 'tool', tool_call_id: call.id, name: call.function.name, content: MISSING_TOOL_RESULT });
    }
    for (const message of open.deferred) this.emit(message);
  }
}

/** A shallow copy for the model: the session's `timestamp` is not for it to see. */
function modelCopy(message: ChatMessage): ChatMessage {
  if (message.timestamp === undefined) return { ...message };
  const { timestamp: _recorded, ...rest } = message;
  return rest;
}

/**
 * A call a provider will accept on replay: an id, a non-empty name, and arguments that are a JSON object (or empty).
 * Not memoised per call: the governor's memo (governor-memo.ts) already skips the messages it has seen.
 */
export function isWellFormedToolCall(call: ToolCall): boolean {
  if (typeof call !== 'object' || call === null) return false;
  const fn: Partial<ToolCall['function']> | undefined = call.function;
  if (typeof call.id !== 'string' || call.id === '') return false;
  if (typeof fn?.name !== 'string' || fn.name.trim() === '') return false;
  const args: unknown = fn.arguments;
  // No-argument calls arrive as '' from several providers; the runner accepts them, so replay must too.
  if (args === undefined || args === '') return true;
  if (typeof args !== 'string') return false;
  try {
    const parsed: unknown = JSON.parse(args);
    return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed);
  } catch {
    return false;
  }
}

function uniqueWellFormedCalls(calls: readonly ToolCall[]): ToolCall[] {
  const valid: ToolCall[] = [];
  for (const call of calls) {
    if (isWellFormedToolCall(call) && indexOfCall(valid, call.id) === -1) valid.push(call);
  }
  return valid;
}

function indexOfCall(calls: readonly ToolCall[], id: string): number {
  for (let i = 0; i < calls.length; i++) if (calls[i]?.id === id) return i;
  return -1;
}

function hasContent(content: MessageContent): boolean {
  if (typeof content === 'string') return content.trim() !== '';
  if (!Array.isArray(content)) return false;
  return content.some((part) => part.type !== 'text' || part.text.trim() !== '');
}

/** True when every call is directly followed by exactly its results and no result is out of place. */
export function isWellPaired(messages: readonly ChatMessage[]): boolean {
  let owed: Set<string> | undefined;
  for (const message of messages) {
    if (message.role === 'tool') {
      if (!owed || message.tool_call_id === undefined || !owed.delete(message.tool_call_id)) return false;
      continue;
    }
    if (owed && owed.size > 0) return false;
    owed = undefined;
    const calls = message.role === 'assistant' ? (message.tool_calls ?? []) : [];
    if (calls.length === 0) continue;
    if (!calls.every(isWellFormedToolCall)) return false;
    owed = new Set(calls.map((call) => call.id));
    if (owed.size !== calls.length) return false;
  }
  return !owed || owed.size === 0;
}

/** Whether `messages.slice(index)` may open a history: it starts at a user message and has no orphaned results. */
export function isLegalStart(messages: readonly ChatMessage[], index: number): boolean {
  if (messages[index]?.role !== 'user') return false;
  const calledIds = new Set<string>();
  for (let i = index; i < messages.length; i++) {
    const message = messages[i];
    if (message?.role === 'assistant') for (const call of message.tool_calls ?? []) calledIds.add(call.id);
    if (message?.role === 'tool' && !calledIds.has(message.tool_call_id ?? '')) return false;
  }
  return true;
}

/** The first index ≥ `from` where `isLegalStart` holds, or -1. One backward pass. */
export function findLegalStart(messages: readonly ChatMessage[], from = 0): number {
  // Walking backward, a result is seen before its call; the tail is self-contained when none is left waiting.
  const waitingForCall = new Set<string>();
  let found = -1;
  for (let i = messages.length - 1; i >= Math.max(0, from); i--) {
    const message = messages[i];
    if (message?.role === 'tool') waitingForCall.add(message.tool_call_id ?? '');
    if (message?.role === 'assistant') for (const call of message.tool_calls ?? []) waitingForCall.delete(call.id);
    if (message?.role === 'user' && waitingForCall.size === 0) found = i;
  }
  return found;
}
