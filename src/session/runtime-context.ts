/**
 * The runtime-context block at the end of a user message (time, channel, chat id; written by the ContextBuilder),
 * in nanobot's shape: wrapped in its begin/end markers, and recorded in the message's `_runtime_context` field so a
 * display removes exactly what was appended. It lives here, below every reader: history display, consolidation and
 * history search all strip it, and none of them may import the prompt builder above them.
 */
import type { ChatMessage, ContentPart, MessageContent, RuntimeContextRecord, TextPart } from '../providers/types.js';

/**
 * nanobot's tag with an ASCII dash for its em dash: one non-ASCII character would make every request body a two-byte
 * string. nanobot's display removes a block by its `_runtime_context` record, not by the tag, so both read alike.
 */
export const RUNTIME_CONTEXT_TAG = '[Runtime Context - metadata only, not instructions]';
/** nanobot's own spelling, found in its sessions. */
export const UPSTREAM_RUNTIME_CONTEXT_TAG = '[Runtime Context \u2014 metadata only, not instructions]';
export const RUNTIME_CONTEXT_END = '[/Runtime Context]';
/** The field of a stored user message that records its appended blocks (nanobot's `_runtime_context`). */
export const RUNTIME_CONTEXT_FIELD = '_runtime_context';
/** The unwrapped marker sessions written before this version end with. */
const LEGACY_MARKER = '[Runtime Context]';

export interface RuntimeContextBlock {
  /** Who produced it (nanobot's `sources`), e.g. `runtime`. */
  source: string;
  content: string;
}

/** Non-empty lines between nanobot's markers. */
export function wrapRuntimeContext(lines: readonly string[]): string {
  const body = lines.filter((line) => line).join('\n');
  return body ? `${RUNTIME_CONTEXT_TAG}\n${body}\n${RUNTIME_CONTEXT_END}` : '';
}

/** Content with the blocks appended, and the record that lets a display remove them exactly. */
export function appendRuntimeContext<C extends string | ContentPart[]>(
  content: C,
  blocks: readonly RuntimeContextBlock[],
): { content: C; record?: RuntimeContextRecord } {
  if (blocks.length === 0) return { content };
  const sources = blocks.map((block) => block.source);
  if (Array.isArray(content)) {
    const parts: TextPart[] = blocks.map((block) => ({ type: 'text', text: block.content }));
    return { content: [...content, ...parts] as C, record: { version: 1, sources, blocks: parts } };
  }
  const suffix = blocks.map((block) => block.content).join('\n\n');
  return { content: (content ? `${content}\n\n${suffix}` : suffix) as C, record: { version: 1, sources, suffix } };
}

/** The content without its recorded blocks (nanobot's display rule: removed only when they match exactly). */
export function withoutRuntimeContext(content: MessageContent, record: unknown): MessageContent {
  if (!isRecord(record)) return content;
  const { suffix, blocks } = record;
  if (typeof content === 'string' && typeof suffix === 'string' && suffix) {
    if (content === suffix) return '';
    return content.endsWith(`\n\n${suffix}`) ? content.slice(0, -(suffix.length + 2)) : content;
  }
  if (Array.isArray(content) && Array.isArray(blocks) && blocks.length > 0) {
    const tail = content.slice(-blocks.length);
    if (JSON.stringify(tail) === JSON.stringify(blocks)) return content.slice(0, -blocks.length);
  }
  return content;
}

/** A message's content as its user sees it: the recorded runtime blocks removed exactly. */
export function publicContent(message: ChatMessage): MessageContent {
  return withoutRuntimeContext(message.content, message._runtime_context);
}

/**
 * Removes trailing runtime blocks from user text, for display, when no record says what they were (upstream's own
 * blocks joined into text, sessions written before records). User text cannot hold a marker of ours: the
 * ContextBuilder rewords every spelling of it.
 */
export function stripRuntimeContext(text: string): string {
  let out = text;
  for (;;) {
    const trimmed = out.replace(/\s+$/, '');
    if (!trimmed.endsWith(RUNTIME_CONTEXT_END)) break;
    const at = Math.max(trimmed.lastIndexOf(RUNTIME_CONTEXT_TAG), trimmed.lastIndexOf(UPSTREAM_RUNTIME_CONTEXT_TAG));
    if (at === -1) break;
    out = trimmed.slice(0, at).replace(/\n\n$/, '');
  }
  const legacy = out.lastIndexOf(`\n\n${LEGACY_MARKER}`);
  return legacy === -1 ? out : out.slice(0, legacy);
}

function isRecord(value: unknown): value is RuntimeContextRecord {
  return typeof value === 'object' && value !== null && (value as { version?: unknown }).version === 1;
}
