/**
 * Token estimation for budget decisions. A cheap over-estimate (ASCII chars / 3, one token per other
 * UTF-16 unit) answers most questions; the real tokenizer (gpt-tokenizer, loaded on first need: ~100 ms)
 * is consulted only when the cheap figure is close enough to the budget to matter. Per-message counts are
 * cached by message object, so a long session is not re-measured every turn. The real tokenizer only ever sees
 * bounded windows of a text (bounded-count.ts), so no input, however pathological, can stall the process.
 */
import type { ChatMessage, MessageContent } from '../providers/types.js';
import { boundedTokenCount, type CountLimits, type ExactCount } from './bounded-count.js';

export type EncodingName = 'cl100k_base' | 'o200k_base';

/** Flat cost of one image: providers bill images by size, ~1–1.6k tokens for a typical photo. */
export const IMAGE_TOKENS = 1600;
/** Role markers and separators around each message. */
const MESSAGE_OVERHEAD_TOKENS = 4;
/** Above this fraction of the budget the cheap estimate is replaced by a real count. */
const DEFAULT_PRECISE_ABOVE = 0.6;

export interface TokenEstimate {
  tokens: number;
  /** True when the figure came from the real tokenizer. */
  precise: boolean;
}

export interface TokenCounterOptions {
  encoding?: EncodingName;
  /** Fraction of the budget above which the real tokenizer is used; `Infinity` = cheap estimate only. */
  preciseAbove?: number;
  /** The exact tokenizer (default: gpt-tokenizer for `encoding`); it is only ever called on bounded windows. */
  tokenizer?: ExactCount;
  /** Window and cap for the exact tokenizer (default DEFAULT_COUNT_LIMITS). */
  limits?: CountLimits;
}

type CountFn = (text: string) => number;

interface CachedCount {
  cheap: number;
  precise?: number;
}

/** A deliberate over-estimate: real tokenizers average ~3.5–4 chars per token on English and code. */
export function estimateTextTokens(text: string): number {
  let ascii = 0;
  let other = 0;
  for (let i = 0; i < text.length; i++) {
    if (text.charCodeAt(i) < 0x80) ascii++;
    else other++;
  }
  return Math.ceil(ascii / 3) + other;
}

/** The text a message costs, in a stable order: content, reasoning, tool calls. Images are counted apart. */
export function messageText(message: ChatMessage): { text: string; images: number } {
  const pieces: string[] = [];
  const { text, images } = contentText(message.content);
  if (text) pieces.push(text);
  if (message.reasoning_content) pieces.push(message.reasoning_content);
  for (const block of message.thinking_blocks ?? []) {
    if (block.type === 'thinking') pieces.push(block.thinking);
  }
  for (const call of message.tool_calls ?? []) {
    pieces.push(call.id, call.function.name, call.function.arguments);
  }
  if (message.tool_call_id) pieces.push(message.tool_call_id);
  if (message.name) pieces.push(message.name);
  return { text: pieces.join('\n'), images };
}

export function contentText(content: MessageContent): { text: string; images: number } {
  if (content === null) return { text: '', images: 0 };
  if (typeof content === 'string') return { text: content, images: 0 };
  let images = 0;
  const texts: string[] = [];
  for (const part of content) {
    if (part.type === 'text') texts.push(part.text);
    else images++;
  }
  return { text: texts.join('\n'), images };
}

export class TokenCounter {
  private readonly cache = new WeakMap<ChatMessage, CachedCount>();
  private readonly encoding: EncodingName;
  private readonly preciseAbove: number;
  private readonly tokenizer: ExactCount | undefined;
  private readonly limits: CountLimits | undefined;
  private counter: Promise<CountFn> | undefined;

  constructor(options: TokenCounterOptions = {}) {
    this.encoding = options.encoding ?? 'cl100k_base';
    this.preciseAbove = options.preciseAbove ?? DEFAULT_PRECISE_ABOVE;
    this.tokenizer = options.tokenizer;
    this.limits = options.limits;
  }

  /** Cheap (over-)estimate of one message, cached. */
  cheapMessage(message: ChatMessage): number {
    return this.entry(message).cheap;
  }

  /** Cheap estimate of a list of messages (no tokenizer, never async). */
  cheapMessages(messages: readonly ChatMessage[]): number {
    let total = 0;
    for (const message of messages) total += this.entry(message).cheap;
    return total;
  }

  /**
   * Tokens of `messages` plus `extraTokens` (system prompt, tool schemas), judged against `budget`: the cheap
   * estimate when it is comfortably below the budget, the real count otherwise.
   */
  async countMessages(messages: readonly ChatMessage[], budget: number, extraTokens = 0): Promise<TokenEstimate> {
    const cheap = this.cheapMessages(messages) + extraTokens;
    if (cheap <= budget * this.preciseAbove) return { tokens: cheap, precise: false };
    const count = await this.loadCounter();
    let total = extraTokens;
    for (const message of messages) total += this.preciseMessage(message, count);
    return { tokens: total, precise: true };
  }

  /** One message's tokens with the real tokenizer (cached); loads the tokenizer on first use. */
  async preciseMessageTokens(message: ChatMessage): Promise<number> {
    return this.preciseMessage(message, await this.loadCounter());
  }

  /** Per-message size as the budget logic should see it: precise if already known, else the cheap figure. */
  knownMessageTokens(message: ChatMessage): number {
    const entry = this.entry(message);
    return entry.precise ?? entry.cheap;
  }

  async preciseText(text: string): Promise<number> {
    return (await this.loadCounter())(text);
  }

  private preciseMessage(message: ChatMessage, count: CountFn): number {
    const entry = this.entry(message);
    if (entry.precise === undefined) {
      const { text, images } = messageText(message);
      entry.precise = (text ? count(text) : 0) + images * IMAGE_TOKENS + MESSAGE_OVERHEAD_TOKENS;
    }
    return entry.precise;
  }

  private entry(message: ChatMessage): CachedCount {
    let entry = this.cache.get(message);
    if (!entry) {
      const { text, images } = messageText(message);
      entry = { cheap: estimateTextTokens(text) + images * IMAGE_TOKENS + MESSAGE_OVERHEAD_TOKENS };
      this.cache.set(message, entry);
    }
    return entry;
  }

  private loadCounter(): Promise<CountFn> {
    this.counter ??= this.boundedCounter();
    return this.counter;
  }

  private async boundedCounter(): Promise<CountFn> {
    const exact = this.tokenizer ?? (await loadEncoding(this.encoding));
    return (text) => boundedTokenCount(text, exact, this.limits);
  }
}

async function loadEncoding(name: EncodingName): Promise<ExactCount> {
  // Special-token text inside user content (e.g. "<|endoftext|>") must count as text, not throw.
  const options = { disallowedSpecial: new Set<string>() };
  if (name === 'o200k_base') {
    const { countTokens } = await import('gpt-tokenizer/encoding/o200k_base');
    return (text) => countTokens(text, options);
  }
  const { countTokens } = await import('gpt-tokenizer/encoding/cl100k_base');
  return (text) => countTokens(text, options);
}
