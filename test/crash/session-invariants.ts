/**
 * Reads a nanobot JSONL session file line by line (keeping corrupt lines for the report) and checks the
 * invariants a crash must never break: no corrupt line, every user message once, every tool call answered once,
 * no orphan result, and nothing that was on disk at the crash lost. Also checks a model request's history.
 */
import { existsSync, readFileSync } from 'node:fs';

const RUNTIME_CONTEXT_SEPARATOR = '\n\n[Runtime Context - ';

export interface SessionLine {
  /** 1-based, as an editor shows it. */
  lineNumber: number;
  raw: string;
  value?: Record<string, unknown>;
  /** Why the line is not a JSON object. */
  problem?: string;
}

export interface StoredToolCall {
  id: string;
  name: string;
}

export interface StoredMessage {
  lineNumber: number;
  role: string;
  /** For user messages: the text the user typed (before the runtime context block). */
  userText?: string;
  toolCalls: StoredToolCall[];
  toolCallId?: string;
  content: unknown;
}

export interface SessionSnapshot {
  path: string;
  text: string;
  lines: SessionLine[];
  corrupt: SessionLine[];
  /** The effective metadata: the last metadata line wins. */
  metadata: Record<string, unknown>;
  messages: StoredMessage[];
}

export interface ToolResultOnDisk {
  toolCallId: string;
  content: unknown;
  /** Where it was seen: a transcript line or the runtime checkpoint. */
  source: string;
}

export interface Violation {
  /**
   * Identifies the defect in the file, so one duplicate is reported once and not again after every later kill;
   * defects of one follow-up turn carry the kill point in their key.
   */
  key: string;
  message: string;
  /** Session file lines to show (1-based). */
  lines: number[];
}

export function readSessionSnapshot(path: string): SessionSnapshot {
  const text = existsSync(path) ? readFileSync(path, 'utf8') : '';
  const lines: SessionLine[] = [];
  text.split('\n').forEach((raw, index) => {
    if (raw.trim() === '') return;
    const lineNumber = index + 1;
    try {
      const value: unknown = JSON.parse(raw);
      if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
        lines.push({ lineNumber, raw, value: value as Record<string, unknown> });
      } else lines.push({ lineNumber, raw, problem: 'valid JSON but not an object' });
    } catch (error) {
      lines.push({ lineNumber, raw, problem: `not JSON (${(error as Error).message})` });
    }
  });
  let metadata: Record<string, unknown> = {};
  const messages: StoredMessage[] = [];
  for (const line of lines) {
    const value = line.value;
    if (!value) continue;
    if (value._type === 'metadata') {
      metadata = isRecord(value.metadata) ? value.metadata : {};
    } else if (value._type === undefined && typeof value.role === 'string') {
      messages.push(toStoredMessage(value, line.lineNumber));
    }
  }
  return { path, text, lines, corrupt: lines.filter((line) => line.problem), metadata, messages };
}

/** The text a user typed, without the `[Runtime Context]` block nanobot appends. */
export function userTextOf(content: unknown): string {
  const text =
    typeof content === 'string'
      ? content
      : Array.isArray(content)
        ? content.map((part: unknown) => (isRecord(part) && typeof part.text === 'string' ? part.text : '')).join('')
        : '';
  const cut = text.indexOf(RUNTIME_CONTEXT_SEPARATOR);
  return (cut === -1 ? text : text.slice(0, cut)).trim();
}

/** Tool results durable in the file: transcript lines plus the completed results of a runtime checkpoint. */
export function toolResultsOnDisk(snapshot: SessionSnapshot): ToolResultOnDisk[] {
  const results: ToolResultOnDisk[] = snapshot.messages
    .filter((message) => message.role === 'tool' && message.toolCallId)
    .map((message) => ({
      toolCallId: message.toolCallId ?? '',
      content: message.content,
      source: `line ${message.lineNumber}`,
    }));
  collectToolResults(snapshot.metadata.runtime_checkpoint, (found) =>
    results.push({ ...found, source: 'metadata.runtime_checkpoint' }),
  );
  return results;
}

export interface SessionExpectations {
  /** User texts that reached the model, or belong to a turn that finished: each must be in the file exactly once. */
  userTextsOnce: string[];
  /** User texts of turns killed before the model call: missing is acceptable, a duplicate is not. */
  userTextsAtMostOnce: string[];
  /** Tool results that were on disk when the process was killed: each must still be there once, unchanged. */
  toolResultsAtCrash: ToolResultOnDisk[];
  /** Names the kill point in keys of violations that belong to this follow-up only. */
  killId: string;
}

export function checkSessionFile(snapshot: SessionSnapshot, expect: SessionExpectations): Violation[] {
  const violations: Violation[] = [];
  const add = (key: string, message: string, lines: number[] = []) => violations.push({ key, message, lines });

  if (snapshot.text !== '' && !snapshot.text.endsWith('\n')) {
    add(`${expect.killId}:no-final-newline`, 'the file does not end with a newline (an unfinished write)', [
      snapshot.lines.at(-1)?.lineNumber ?? 0,
    ]);
  }
  for (const line of snapshot.corrupt) {
    add(`corrupt:${line.raw.slice(0, 120)}`, `corrupt line ${line.lineNumber}: ${line.problem}`, [line.lineNumber]);
  }
  const first = snapshot.lines[0];
  if (first?.value?._type !== 'metadata') {
    add('first-line-not-metadata', 'line 1 is not the metadata line', [first?.lineNumber ?? 1]);
  }
  for (const marker of ['pending_user_turn', 'turn_owner', 'runtime_checkpoint']) {
    if (snapshot.metadata[marker] !== undefined) {
      add(
        `${expect.killId}:leftover-${marker}`,
        `metadata still has ${marker} after a finished turn: ${JSON.stringify(snapshot.metadata[marker]).slice(0, 300)}`,
      );
    }
  }

  const userLines = new Map<string, number[]>();
  for (const message of snapshot.messages) {
    if (message.role !== 'user' || message.userText === undefined) continue;
    userLines.set(message.userText, [...(userLines.get(message.userText) ?? []), message.lineNumber]);
  }
  for (const text of expect.userTextsOnce) {
    const found = userLines.get(text) ?? [];
    if (found.length === 0) add(`user-missing:${text}`, `user message "${text}" is missing`);
    else if (found.length > 1) {
      add(`user-duplicate:${text}`, `user message "${text}" appears ${found.length} times (lines ${found})`, found);
    }
  }
  for (const text of expect.userTextsAtMostOnce) {
    const found = userLines.get(text) ?? [];
    if (found.length > 1) {
      add(`user-duplicate:${text}`, `user message "${text}" appears ${found.length} times (lines ${found})`, found);
    }
  }

  const callLines = new Map<string, number[]>();
  const resultLines = new Map<string, StoredMessage[]>();
  for (const message of snapshot.messages) {
    for (const call of message.toolCalls)
      callLines.set(call.id, [...(callLines.get(call.id) ?? []), message.lineNumber]);
    if (message.role === 'tool') {
      const id = message.toolCallId ?? '(no tool_call_id)';
      resultLines.set(id, [...(resultLines.get(id) ?? []), message]);
    }
  }
  for (const [id, lines] of callLines) {
    if (lines.length > 1) add(`call-duplicate:${id}`, `tool call ${id} is stored ${lines.length} times`, lines);
    const results = resultLines.get(id) ?? [];
    if (results.length === 0) add(`result-missing:${id}`, `tool call ${id} (line ${lines[0]}) has no result`, lines);
    if (results.length > 1) {
      const at = results.map((result) => result.lineNumber);
      add(`result-duplicate:${id}`, `tool call ${id} has ${results.length} results (lines ${at})`, [...lines, ...at]);
    }
    const firstCall = Math.min(...lines);
    const early = results.filter((result) => result.lineNumber < firstCall);
    if (early.length > 0) {
      add(`result-before-call:${id}`, `a result for ${id} comes before its call`, [
        firstCall,
        early[0]?.lineNumber ?? 0,
      ]);
    }
  }
  for (const [id, results] of resultLines) {
    if (callLines.has(id)) continue;
    const at = results.map((result) => result.lineNumber);
    add(`result-orphan:${id}`, `tool result for ${id} (line ${at}) has no tool call`, at);
  }

  for (const durable of expect.toolResultsAtCrash) {
    const now = resultLines.get(durable.toolCallId) ?? [];
    const same = now.filter((result) => JSON.stringify(result.content) === JSON.stringify(durable.content));
    if (same.length !== 1) {
      add(
        `durable-result:${durable.toolCallId}`,
        `tool result ${durable.toolCallId} was on disk at the crash (${durable.source}: ${preview(durable.content)}) ` +
          `but is now present ${same.length} times unchanged (${now.length} results in all: ` +
          `${now.map((result) => `line ${result.lineNumber}: ${preview(result.content)}`).join('; ') || 'none'})`,
        now.map((result) => result.lineNumber),
      );
    }
  }
  return violations;
}

/**
 * The messages of one OpenAI-wire request: every assistant tool call must be followed, before any other message,
 * by exactly one result; no result may stand without its call.
 */
export function checkRequestHistory(messages: unknown[], killId: string): Violation[] {
  const violations: Violation[] = [];
  const add = (what: string, message: string) =>
    violations.push({ key: `${killId}:request:${what}`, message: `follow-up request: ${message}`, lines: [] });
  let open = new Set<string>();
  let openedAt = -1;
  messages.forEach((raw, index) => {
    const message = isRecord(raw) ? raw : {};
    const role = String(message.role);
    if (role === 'tool') {
      const id = String(message.tool_call_id);
      if (!open.has(id)) {
        add(
          `orphan-${index}`,
          `message ${index} is a tool result for ${id}, which is not an unanswered call just before`,
        );
      }
      open.delete(id);
      return;
    }
    if (open.size > 0) {
      add(
        `unanswered-${openedAt}`,
        `calls ${[...open].join(', ')} of message ${openedAt} have no result before message ${index}`,
      );
    }
    open = new Set(toolCallsOf(message).map((call) => call.id));
    openedAt = index;
  });
  if (open.size > 0)
    add(`unanswered-${openedAt}`, `calls ${[...open].join(', ')} of message ${openedAt} are never answered`);
  return violations;
}

/** Lines of the file around the given ones (and its tail), numbered, long lines shortened. */
export function excerpt(snapshot: SessionSnapshot, focus: number[], tail = 8): string {
  const all = snapshot.text.split('\n');
  const total = all.at(-1) === '' ? all.length - 1 : all.length;
  const wanted = new Set<number>();
  for (const line of focus) for (let n = line - 2; n <= line + 2; n++) if (n >= 1 && n <= total) wanted.add(n);
  for (let n = Math.max(1, total - tail + 1); n <= total; n++) wanted.add(n);
  const numbers = [...wanted].sort((a, b) => a - b).slice(-60);
  const out: string[] = [];
  let previous = 0;
  for (const n of numbers) {
    if (n > previous + 1) out.push('     …');
    const marker = focus.includes(n) ? '>' : ' ';
    out.push(`${marker}${String(n).padStart(4)}| ${shorten(all[n - 1] ?? '', 220)}`);
    previous = n;
  }
  return `${snapshot.path} (${total} lines)\n${out.join('\n')}`;
}

function toStoredMessage(value: Record<string, unknown>, lineNumber: number): StoredMessage {
  const role = String(value.role);
  return {
    lineNumber,
    role,
    ...(role === 'user' ? { userText: userTextOf(value.content) } : {}),
    toolCalls: toolCallsOf(value),
    ...(typeof value.tool_call_id === 'string' ? { toolCallId: value.tool_call_id } : {}),
    content: value.content,
  };
}

function toolCallsOf(message: Record<string, unknown>): StoredToolCall[] {
  if (!Array.isArray(message.tool_calls)) return [];
  return message.tool_calls.map((call: unknown) => {
    const record = isRecord(call) ? call : {};
    const fn = isRecord(record.function) ? record.function : {};
    return { id: String(record.id), name: String(fn.name) };
  });
}

/** Finds `{ role: 'tool', tool_call_id }` objects anywhere inside a checkpoint, whatever its exact shape. */
function collectToolResults(value: unknown, found: (result: { toolCallId: string; content: unknown }) => void): void {
  if (Array.isArray(value)) {
    for (const item of value) collectToolResults(item, found);
    return;
  }
  if (!isRecord(value)) return;
  if (value.role === 'tool' && typeof value.tool_call_id === 'string') {
    found({ toolCallId: value.tool_call_id, content: value.content });
    return;
  }
  for (const child of Object.values(value)) collectToolResults(child, found);
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function preview(content: unknown): string {
  return shorten(typeof content === 'string' ? content : JSON.stringify(content), 80);
}

function shorten(text: string, max: number): string {
  const flat = text.replace(/\n/g, '\\n');
  return flat.length > max ? `${flat.slice(0, max)}…` : flat;
}
