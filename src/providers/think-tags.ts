/**
 * Some models write their reasoning into the answer as `<think>…</think>` (Qwen3 or DeepSeek-R1 on a local server
 * without a reasoning parser, MiniMax without `reasoning_split`, Gemini's `<thought>`), and some local models print
 * tool calls as `<tool_call>{…}</tool_call>` text instead of calling. `InlineTagSplitter` separates both from the
 * answer while it streams: a tag split across chunks (`<thi` + `nk>`) is still recognised, because text that could be
 * the start of a tag is held back until the next chunk decides. A think block counts only at the start of the answer
 * (or right after another one), so an answer that merely mentions `<think>` stays as written.
 */
import { randomUUID } from 'node:crypto';
import type { ToolCall } from './types.js';

export type Segment = { kind: 'text' | 'reasoning' | 'tool_call'; text: string };

/** `<thought>` is how Gemini's OpenAI-compatible endpoint marks thoughts when `include_thoughts` is on. */
const THINK_TAGS: readonly (readonly [open: string, close: string])[] = [
  ['<think>', '</think>'],
  ['<thinking>', '</thinking>'],
  ['<thought>', '</thought>'],
];
const TOOL_OPEN = '<tool_call>';
const TOOL_CLOSE = '</tool_call>';

type Mode = 'start' | 'after-think' | 'reasoning' | 'text' | 'tool_call';

export class InlineTagSplitter {
  private mode: Mode = 'start';
  private closeTag = '';
  /** Received text not yet assigned to a segment. */
  private pending = '';
  /** The inside of an open `<tool_call>` so far. */
  private toolText = '';

  push(chunk: string): Segment[] {
    this.pending += chunk;
    const out: Segment[] = [];
    while (this.step(out)) {
      // Each step consumes input or changes mode; it returns false when it needs more text.
    }
    return out;
  }

  /** End of stream: whatever is held is released as what it turned out to be. */
  flush(): Segment[] {
    const out: Segment[] = [];
    const rest = this.pending;
    this.pending = '';
    if (this.mode === 'reasoning') emit(out, 'reasoning', rest);
    else if (this.mode === 'tool_call') emit(out, 'text', `${TOOL_OPEN}${this.toolText}${rest}`);
    else if (this.mode !== 'after-think') emit(out, 'text', rest);
    this.toolText = '';
    this.mode = 'text';
    return out;
  }

  private step(out: Segment[]): boolean {
    switch (this.mode) {
      case 'start':
      case 'after-think':
        return this.atStart();
      case 'reasoning': {
        const found = this.consumeUntil(this.closeTag);
        emit(out, 'reasoning', found.before);
        if (!found.closed) return false;
        this.mode = 'after-think';
        return true;
      }
      case 'tool_call': {
        const found = this.consumeUntil(TOOL_CLOSE);
        this.toolText += found.before;
        if (!found.closed) return false;
        emit(out, 'tool_call', this.toolText);
        this.toolText = '';
        this.mode = 'text';
        return true;
      }
      case 'text': {
        const found = this.consumeUntil(TOOL_OPEN);
        emit(out, 'text', found.before);
        if (!found.closed) return false;
        this.mode = 'tool_call';
        return true;
      }
    }
  }

  /** At the start of the answer: a think tag opens reasoning; anything else is answer text. */
  private atStart(): boolean {
    const trimmed = this.pending.trimStart();
    if (!trimmed) {
      // Whitespace before a possible tag waits; after a think block it is dropped.
      if (this.mode === 'after-think') this.pending = '';
      return false;
    }
    for (const [open, close] of THINK_TAGS) {
      if (trimmed.startsWith(open)) {
        this.pending = trimmed.slice(open.length);
        this.closeTag = close;
        this.mode = 'reasoning';
        return true;
      }
    }
    if (THINK_TAGS.some(([open]) => open.startsWith(trimmed))) return false;
    // The blank line models put between their thinking and the answer is not part of the answer.
    if (this.mode === 'after-think') this.pending = trimmed;
    this.mode = 'text';
    return true;
  }

  /** Takes pending text up to `tag` (consuming the tag), keeping back a tail that may be the tag's beginning. */
  private consumeUntil(tag: string): { before: string; closed: boolean } {
    const index = this.pending.indexOf(tag);
    if (index >= 0) {
      const before = this.pending.slice(0, index);
      this.pending = this.pending.slice(index + tag.length);
      return { before, closed: true };
    }
    const keep = partialTagLength(this.pending, tag);
    const before = this.pending.slice(0, this.pending.length - keep);
    this.pending = this.pending.slice(this.pending.length - keep);
    return { before, closed: false };
  }
}

function emit(out: Segment[], kind: Segment['kind'], text: string): void {
  if (!text) return;
  const last = out.at(-1);
  if (last?.kind === kind && kind !== 'tool_call') last.text += text;
  else out.push({ kind, text });
}

/** Length of the longest suffix of `text` that is a proper prefix of `tag`. */
function partialTagLength(text: string, tag: string): number {
  for (let length = Math.min(text.length, tag.length - 1); length > 0; length--) {
    if (tag.startsWith(text.slice(text.length - length))) return length;
  }
  return 0;
}

/**
 * A reply whose chat template opened the think block in the prompt carries only the closing tag:
 * "reasoning…</think>answer". Returns the two parts, or undefined when the text has no such shape.
 */
export function splitOrphanThinkClose(text: string): { reasoning: string; answer: string } | undefined {
  for (const [open, close] of THINK_TAGS) {
    const index = text.indexOf(close);
    if (index < 0 || text.slice(0, index).includes(open)) continue;
    return { reasoning: text.slice(0, index).trim(), answer: text.slice(index + close.length).trimStart() };
  }
  return undefined;
}

/**
 * Reads the inside of a `<tool_call>` block: `{"name", "arguments"}`, optionally fenced as ```json, nested as
 * `{"tool_call": …}` or `{"function": {…}}`. Undefined when it is not a call (the text then stays in the answer).
 */
export function parseTextToolCall(inner: string): ToolCall | undefined {
  const unfenced = inner
    .trim()
    .replace(/^```(?:json)?\s*\n?/i, '')
    .replace(/\n?```$/, '');
  let payload: unknown;
  try {
    payload = JSON.parse(unfenced);
  } catch {
    return undefined;
  }
  let record = asRecord(payload);
  record = asRecord(record?.tool_call) ?? record;
  const fn = asRecord(record?.function) ?? record;
  const name = fn?.name;
  if (typeof name !== 'string' || !name.trim()) return undefined;
  const rawArguments = fn?.arguments ?? record?.arguments ?? fn?.parameters ?? {};
  const id =
    typeof record?.id === 'string' && record.id ? record.id : `call_${randomUUID().replace(/-/g, '').slice(0, 24)}`;
  return {
    id,
    type: 'function',
    function: { name, arguments: typeof rawArguments === 'string' ? rawArguments : JSON.stringify(rawArguments) },
  };
}

function asRecord(value: unknown): Record<string, unknown> | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;
}
