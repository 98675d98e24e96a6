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
  ids: Set<string>;
  results: Map<string, ChatMessage>;
  /** Non-tool messages seen after the assistant message; they are emitted after its results. */
  deferred: ChatMessage[];
}

/**
 * Returns a repaired copy: each assistant message with tool calls is directly followed by exactly one result per
 * call, in call order. Input messages are never modified; every returned message is a fresh shallow copy.
 */
export function repairToolPairing(messages: readonly ChatMessage[]): {
  messages: ChatMessage[];
  report: PairingReport;
} {
  const report: PairingReport = {
    backfilledResults: 0,
    droppedOrphanResults: 0,
    droppedDuplicateResults: 0,
    droppedMalformedCalls: 0,
    droppedEmptyAssistants: 0,
    movedResults: 0,
  };
  const out: ChatMessage[] = [];
  let open: OpenCalls | undefined;

  const closeOpenCalls = () => {
    if (!open) return;
    for (const call of open.calls) {
      const result = open.results.get(call.id);
      if (result) {
        out.push(result);
        continue;
      }
      report.backfilledResults++;
      out.push({ role: 'tool', tool_call_id: call.id, name: call.function.name, content: MISSING_TOOL_RESULT });
    }
    for (const message of open.deferred) out.push(message);
    open = undefined;
  };

  for (const message of messages) {
    if (message.role === 'tool') {
      const id = message.tool_call_id;
      // Only the immediately preceding assistant message can own a result; anything else is an orphan.
      if (!open || id === undefined || !open.ids.has(id)) {
        report.droppedOrphanResults++;
      } else if (open.results.has(id)) {
        report.droppedDuplicateResults++;
      } else {
        if (open.deferred.length > 0) report.movedResults++;
        open.results.set(id, { ...message });
      }
      continue;
    }
    if (message.role !== 'assistant') {
      (open ? open.deferred : out).push({ ...message });
      continue;
    }
    closeOpenCalls();
    const calls = message.tool_calls ?? [];
    const valid = uniqueWellFormedCalls(calls);
    report.droppedMalformedCalls += calls.length - valid.length;
    if (valid.length === 0 && !hasContent(message.content)) {
      report.droppedEmptyAssistants++;
      continue;
    }
    const copy: ChatMessage = { ...message };
    // An empty tool_calls array is itself rejected by OpenAI-style APIs, so the key goes.
    if (valid.length === 0) delete copy.tool_calls;
    else if (valid.length !== calls.length) copy.tool_calls = valid;
    out.push(copy);
    if (valid.length > 0) {
      open = { calls: valid, ids: new Set(valid.map((call) => call.id)), results: new Map(), deferred: [] };
    }
  }
  closeOpenCalls();
  return { messages: out, report };
}

// Stored calls are the same objects turn after turn, so each one's arguments are parsed once, not per request.
const wellFormedMemo = new WeakMap<ToolCall, boolean>();

/** A call a provider will accept on replay: an id, a non-empty name, and arguments that are a JSON object (or empty). */
export function isWellFormedToolCall(call: ToolCall): boolean {
  if (typeof call !== 'object' || call === null) return false;
  const memo = wellFormedMemo.get(call);
  if (memo !== undefined) return memo;
  const verdict = checkToolCall(call);
  wellFormedMemo.set(call, verdict);
  return verdict;
}

function checkToolCall(call: ToolCall): boolean {
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
  const seen = new Set<string>();
  const valid: ToolCall[] = [];
  for (const call of calls) {
    if (!isWellFormedToolCall(call) || seen.has(call.id)) continue;
    seen.add(call.id);
    valid.push(call);
  }
  return valid;
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
