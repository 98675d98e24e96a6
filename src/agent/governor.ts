/**
 * ContextGovernor: builds the model-side copy of a conversation before every model request. Deterministic and
 * LLM-free, and it never modifies the stored session. Steps, in order: repair tool-call pairing (dropping the
 * session-only `timestamp`), cut oversized tool results, clear old compactable tool results when over budget
 * (microcompact), then snip the oldest turns. The first two are remembered per conversation (governor-memo.ts).
 * Reasoning fields (`reasoning_content`, signed `thinking_blocks`) pass through untouched: providers need them
 * replayed byte-for-byte, and DeepSeek needs an empty `reasoning_content` kept as ''.
 */
import type { ChatMessage, MessageContent } from '../providers/types.js';
import { type GovernorMemo, prepareHistory } from './governor-memo.js';
import type { PairingReport } from './governor-pairing.js';

export { GovernorMemo, GovernorMemos } from './governor-memo.js';
export {
  findLegalStart,
  isLegalStart,
  isWellFormedToolCall,
  isWellPaired,
  MISSING_TOOL_RESULT,
  type PairingReport,
  repairToolPairing,
} from './governor-pairing.js';

/** Tools whose results can be re-obtained by calling again, so old ones are safe to clear. */
export const COMPACTABLE_TOOLS: ReadonlySet<string> = new Set([
  'read_file',
  'exec',
  'grep',
  'find_files',
  'list_dir',
  'web_fetch',
  'web_search',
]);
export const KEEP_RECENT_TOOL_RESULTS = 10;
export const DEFAULT_MAX_TOOL_RESULT_CHARS = 16_000;
/** Clearing a short result saves little and loses a cheap fact. */
const MICROCOMPACT_MIN_CHARS = 500;
/** An image costs roughly this many tokens whatever the size of its (base64) URL. */
const IMAGE_TOKENS = 1_000;
/** Role and separators each message adds on the wire. */
const MESSAGE_OVERHEAD_TOKENS = 4;

/** Estimates tokens for the given messages. The governor calls it with one message at a time. */
export type TokenEstimator = (messages: readonly ChatMessage[]) => number;

export interface GovernorOptions {
  /** Token budget for the messages (context window minus output and tool-definition reserve). Unset: no trimming. */
  budgetTokens?: number;
  /** A tool result longer than this (all its text parts together) is cut to head and tail. Default 16,000. */
  maxToolResultChars?: number;
  /** Default: characters / 4 per message. Called once per message so totals are kept incrementally. */
  estimateTokens?: TokenEstimator;
  /** Tools whose old results microcompact may clear. Default `COMPACTABLE_TOOLS`. */
  compactableTools?: ReadonlySet<string>;
  /** The most recent tool results (of any tool) that are never cleared. Default 10. */
  keepRecentToolResults?: number;
  /** This conversation's memo: the work on messages its last request had is reused (see governor-memo.ts). */
  memo?: GovernorMemo;
}

export interface GovernorReport extends PairingReport {
  truncatedResults: number;
  compactedResults: number;
  /** Messages dropped from the start of the history; worth logging, the model no longer sees them. */
  snippedMessages: number;
  /** Estimate after repair and truncation, before microcompact and snip. */
  estimatedTokensBefore: number;
  estimatedTokens: number;
  /** Still over budget: the last user turn alone does not fit. */
  overBudget: boolean;
}

export interface GovernedMessages {
  messages: ChatMessage[];
  report: GovernorReport;
}

/** Working copy with a per-message estimate, so trimming keeps a running total instead of re-estimating. */
interface Working {
  messages: ChatMessage[];
  tokens: number[];
  total: number;
}

export function prepareForModel(messages: readonly ChatMessage[], options: GovernorOptions = {}): GovernedMessages {
  const estimate = options.estimateTokens ?? estimateTokensByChars;
  const maxChars = options.maxToolResultChars ?? DEFAULT_MAX_TOOL_RESULT_CHARS;
  const tokensOf = options.estimateTokens ? (message: ChatMessage) => estimate([message]) : messageTokensByChars;
  // With a memo, the repair, truncation and counts of messages the last request already had are reused.
  const steps = { estimator: estimate, tokensOf, maxChars, cut: cutContent };
  const prepared = prepareHistory(messages, steps, options.memo);
  const { truncatedResults, ...pairing } = prepared.counts;
  const estimatedTokensBefore = prepared.total;
  const budget = options.budgetTokens;
  let compactedResults = 0;
  let snippedMessages = 0;
  let estimatedTokens = prepared.total;
  if (budget !== undefined && prepared.total > budget) {
    // The array is ours to change; the message objects are shared with later requests, so entries are replaced.
    const working: Working = { messages: prepared.messages, tokens: prepared.tokens.slice(), total: prepared.total };
    compactedResults = microcompact(working, budget, options, estimate);
    if (working.total > budget) snippedMessages = snipOldest(working, budget);
    estimatedTokens = working.total;
  }
  return {
    messages: prepared.messages,
    report: {
      ...pairing,
      truncatedResults,
      compactedResults,
      snippedMessages,
      estimatedTokensBefore,
      estimatedTokens,
      overBudget: budget !== undefined && estimatedTokens > budget,
    },
  };
}

/** Keeps the head and tail (errors and summaries tend to sit at the end) and says how much was cut. */
export function truncateToolResult(text: string, maxChars: number): string {
  if (text.length <= maxChars) return text;
  const headEnd = avoidSplittingPair(text, Math.floor(maxChars * 0.7));
  const tailStart = avoidSplittingPair(text, text.length - (maxChars - headEnd));
  const cut = tailStart - headEnd;
  return `${text.slice(0, headEnd)}\n\n[… ${cut} characters cut from the middle of this result to fit the context …]\n\n${text.slice(tailStart)}`;
}

export function clearedToolResult(toolName: string): string {
  return `[old ${toolName} result cleared to save context; re-run the tool if needed]`;
}

/** The default estimator: characters / 4, plus a small per-message overhead. */
export function estimateTokensByChars(messages: readonly ChatMessage[]): number {
  let tokens = 0;
  for (const message of messages) tokens += messageTokensByChars(message);
  return tokens;
}

function messageTokensByChars(message: ChatMessage): number {
  let chars = contentChars(message.content) + (message.reasoning_content?.length ?? 0);
  for (const call of message.tool_calls ?? []) {
    chars += (call.function?.name?.length ?? 0) + (call.function?.arguments?.length ?? 0);
  }
  for (const block of message.thinking_blocks ?? []) {
    chars += block.type === 'thinking' ? block.thinking.length : block.data.length;
  }
  return Math.ceil(chars / 4) + MESSAGE_OVERHEAD_TOKENS;
}

/** Clears old compactable results, oldest first, until under budget. Returns how many were cleared. */
function microcompact(working: Working, budget: number, options: GovernorOptions, estimate: TokenEstimator): number {
  const compactable = options.compactableTools ?? COMPACTABLE_TOOLS;
  const keepRecent = options.keepRecentToolResults ?? KEEP_RECENT_TOOL_RESULTS;
  const { messages, tokens } = working;
  const toolIndices: number[] = [];
  messages.forEach((message, i) => {
    if (message.role === 'tool') toolIndices.push(i);
  });
  const candidates = toolIndices.slice(0, Math.max(0, toolIndices.length - keepRecent));
  let namesById: Map<string, string> | undefined;
  let cleared = 0;
  for (const i of candidates) {
    const message = messages[i];
    if (!message || contentChars(message.content) < MICROCOMPACT_MIN_CHARS) continue;
    // Results normally carry the tool name; older sessions may only have it on the call.
    if (message.name === undefined) namesById ??= toolNamesById(messages);
    const name = message.name ?? namesById?.get(message.tool_call_id ?? '');
    if (name === undefined || !compactable.has(name)) continue;
    const stub: ChatMessage = { ...message, content: clearedToolResult(name) };
    const stubTokens = estimate([stub]);
    const saved = (tokens[i] ?? 0) - stubTokens;
    if (saved <= 0) continue;
    messages[i] = stub;
    tokens[i] = stubTokens;
    working.total -= saved;
    cleared++;
    if (working.total <= budget) break;
  }
  return cleared;
}

/**
 * Drops the oldest messages after the leading system message(s), cutting only right before a user message (after
 * pairing repair that is always a legal start), and never past the last user message. Returns how many were dropped.
 */
function snipOldest(working: Working, budget: number): number {
  const { messages, tokens } = working;
  let start = 0;
  while (messages[start]?.role === 'system') start++;
  let lastUser = -1;
  for (let i = messages.length - 1; i >= start && lastUser < 0; i--) {
    if (messages[i]?.role === 'user') lastUser = i;
  }
  if (lastUser < 0) return 0;
  let cut = lastUser;
  let removed = 0;
  for (let i = start; i < lastUser; i++) {
    if (messages[i]?.role === 'user' && working.total - removed <= budget) {
      cut = i;
      break;
    }
    removed += tokens[i] ?? 0;
  }
  // The loop leaves `removed` as the cost of [start, cut) whichever way it ends.
  if (cut === start) return 0;
  messages.splice(start, cut - start);
  tokens.splice(start, cut - start);
  working.total -= removed;
  return cut - start;
}

function toolNamesById(messages: readonly ChatMessage[]): Map<string, string> {
  const names = new Map<string, string>();
  for (const message of messages) {
    for (const call of message.tool_calls ?? []) names.set(call.id, call.function.name);
  }
  return names;
}

function cutContent(content: MessageContent, maxChars: number): MessageContent {
  if (typeof content === 'string') return truncateToolResult(content, maxChars);
  if (!Array.isArray(content)) return content;
  // The limit is for the whole result: parts that each fit can still add up to too much.
  const cap = partCap(
    content.flatMap((part) => (part.type === 'text' ? [part.text.length] : [])),
    maxChars,
  );
  if (cap === undefined) return content;
  return content.map((part) =>
    part.type === 'text' && part.text.length > cap ? { ...part, text: truncateToolResult(part.text, cap) } : part,
  );
}

/**
 * The most characters each text part may keep so that together they fit `maxChars`: short parts stay whole and the
 * long ones share what is left equally. Undefined when everything fits already.
 */
function partCap(lengths: number[], maxChars: number): number | undefined {
  if (lengths.reduce((sum, n) => sum + n, 0) <= maxChars) return undefined;
  const sorted = [...lengths].sort((a, b) => a - b);
  let left = maxChars;
  for (const [i, length] of sorted.entries()) {
    const share = Math.floor(left / (sorted.length - i));
    if (length > share) return share;
    left -= length;
  }
  return undefined;
}

function contentChars(content: MessageContent): number {
  if (typeof content === 'string') return content.length;
  if (!Array.isArray(content)) return 0;
  let chars = 0;
  for (const part of content) chars += part.type === 'text' ? part.text.length : IMAGE_TOKENS * 4;
  return chars;
}

/** Moves a cut index back one if it would split a UTF-16 surrogate pair (an emoji, say) in two. */
function avoidSplittingPair(text: string, index: number): number {
  const before = text.charCodeAt(index - 1);
  const after = text.charCodeAt(index);
  const isPair = before >= 0xd800 && before <= 0xdbff && after >= 0xdc00 && after <= 0xdfff;
  return isPair ? index - 1 : index;
}
