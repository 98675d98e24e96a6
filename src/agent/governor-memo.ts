/**
 * The per-message part of the governor (pairing repair, result truncation, token counts), remembered per
 * conversation: a request in a long session then costs its new messages, not its whole history, and the prefix it
 * sends is made of the very objects the previous request sent. The memo rests on the session contract that a
 * message object is not edited once it has been sent or saved; any other change to the input only shortens the
 * prefix it can reuse (the result is always what a fresh run would give).
 */
import type { ChatMessage, MessageContent } from '../providers/types.js';
import { emptyPairingReport, PairingRepair, type PairingReport } from './governor-pairing.js';

/** The per-message steps; a memo made with another estimator or cut length is not reused. */
export interface MessageSteps {
  /** The token estimator the caller chose, as an identity. */
  estimator: object;
  tokensOf: (message: ChatMessage) => number;
  maxChars: number;
  cut: (content: MessageContent, maxChars: number) => MessageContent;
}

export interface StepCounts extends PairingReport {
  truncatedResults: number;
}

export interface PreparedHistory {
  /** A fresh array the caller may change; the message objects are shared with later calls and must not be. */
  messages: ChatMessage[];
  /** Token estimate per message; read it before the next call, which reuses the array. */
  tokens: readonly number[];
  total: number;
  counts: StepCounts;
}

/** Shorter conversations are cheap to redo and not worth the memory. */
export const MEMO_MIN_MESSAGES = 200;

/** Runs the per-message steps over `messages`, reusing what `memo` kept from the same conversation's last request. */
export function prepareHistory(
  messages: readonly ChatMessage[],
  steps: MessageSteps,
  memo?: GovernorMemo,
): PreparedHistory {
  const reusable = memo && messages.length >= MEMO_MIN_MESSAGES ? memo : new GovernorMemo();
  return reusable.prepare(messages, steps);
}

/** Upper bounds on what the memos of one runner keep: conversations, and messages across them (~150 bytes each). */
const MAX_MEMOS = 16;
const MAX_MEMO_MESSAGES = 30_000;

/**
 * Memos by conversation, recognised by the object of its first non-system message (a session's messages are the
 * same objects turn after turn). A memo lives as long as that message (while the session store or a turn holds the
 * session); beyond the bounds, the least recently used are emptied (say, one left behind when consolidation moved
 * the conversation's start). Short conversations get a memo of their own.
 */
export class GovernorMemos {
  private readonly byFirstMessage = new WeakMap<ChatMessage, GovernorMemo>();
  /** Most recently used last; weak, so that being listed here keeps no memo (and no session) alive. */
  private recent: WeakRef<GovernorMemo>[] = [];

  for(messages: readonly ChatMessage[]): GovernorMemo {
    const key = messages.length >= MEMO_MIN_MESSAGES ? messages.find((m) => m.role !== 'system') : undefined;
    if (key === undefined) return new GovernorMemo();
    let memo = this.byFirstMessage.get(key);
    if (!memo) {
      memo = new GovernorMemo();
      this.byFirstMessage.set(key, memo);
    }
    this.touch(memo);
    return memo;
  }

  private touch(memo: GovernorMemo): void {
    const live = this.recent.flatMap((ref) => {
      const other = ref.deref();
      return other && other !== memo ? [other] : [];
    });
    live.push(memo);
    let kept = live.reduce((sum, other) => sum + other.size, 0);
    let first = 0;
    while (first < live.length - 1 && (live.length - first > MAX_MEMOS || kept > MAX_MEMO_MESSAGES)) {
      const oldest = live[first++] as GovernorMemo;
      kept -= oldest.size;
      oldest.clear();
    }
    this.recent = live.slice(first).map((other) => new WeakRef(other));
  }
}

const zeroCounts: StepCounts = { ...emptyPairingReport(), truncatedResults: 0 };

/** What one conversation's last request went through; give each conversation (session) its own. */
export class GovernorMemo {
  private steps: MessageSteps | undefined;

  /** The input of the last call, and its output (repaired, truncated) with the token estimate of each message. */
  private readonly inputs: ChatMessage[] = [];
  private readonly out: ChatMessage[] = [];
  private readonly tokens: number[] = [];
  /**
   * Settled points (see PairingRepair) of the last call, taken before user messages: how far into inputs and out,
   * the tokens and counts so far.
   */
  private readonly atInput: number[] = [0];
  private readonly atOut: number[] = [0];
  private readonly atTotal: number[] = [0];
  private readonly atCounts: StepCounts[] = [zeroCounts];

  /** Messages remembered, for a cap on what memos keep. */
  get size(): number {
    return this.inputs.length;
  }

  /** Forgets everything (and lets go of the messages). */
  clear(): void {
    this.steps = undefined;
    this.rewind(0);
  }

  prepare(messages: readonly ChatMessage[], steps: MessageSteps): PreparedHistory {
    // Other settings (a different estimator or cut length) make the remembered output useless.
    const same = this.steps?.estimator === steps.estimator && this.steps.maxChars === steps.maxChars;
    this.steps = steps;
    const point = same ? this.resumePoint(messages) : 0;
    this.rewind(point);
    const counts: StepCounts = { ...(this.atCounts[point] ?? zeroCounts) };
    let total = this.atTotal[point] ?? 0;
    const { tokensOf, maxChars, cut } = steps;
    const repair = new PairingRepair((message) => {
      let shaped = message;
      if (message.role === 'tool') {
        const content = cut(message.content, maxChars);
        if (content !== message.content) {
          shaped = { ...message, content };
          counts.truncatedResults++;
        }
      }
      const tokens = tokensOf(shaped);
      this.out.push(shaped);
      this.tokens.push(tokens);
      total += tokens;
    }, counts);
    for (let i = this.inputs.length; i < messages.length; i++) {
      const message = messages[i] as ChatMessage;
      // Requests differ from the previous one from a user message on (the new turn's), so that is where to resume.
      if (message.role === 'user' && repair.settled) this.mark(i, total, counts);
      this.inputs.push(message);
      repair.add(message);
    }
    // What finishing emits belongs to this call only: the next one rewinds to a settled point first.
    repair.finish();
    return { messages: this.out.slice(), tokens: this.tokens, total, counts: { ...counts } };
  }

  /** The last settled point whose input is the start of `messages`. */
  private resumePoint(messages: readonly ChatMessage[]): number {
    const limit = Math.min(messages.length, this.inputs.length);
    let same = 0;
    while (same < limit) {
      const now = messages[same] as ChatMessage;
      const then = this.inputs[same] as ChatMessage;
      if (now !== then && !sameForModel(now, then)) break;
      same++;
    }
    let low = 0;
    let high = this.atInput.length - 1;
    while (low < high) {
      const mid = (low + high + 1) >> 1;
      if ((this.atInput[mid] ?? 0) <= same) low = mid;
      else high = mid - 1;
    }
    return low;
  }

  private rewind(point: number): void {
    this.inputs.length = this.atInput[point] ?? 0;
    this.out.length = this.atOut[point] ?? 0;
    this.tokens.length = this.out.length;
    for (const list of [this.atInput, this.atOut, this.atTotal, this.atCounts]) list.length = point + 1;
  }

  private mark(input: number, total: number, counts: StepCounts): void {
    if (this.atInput[this.atInput.length - 1] === input) return;
    const last = this.atCounts[this.atCounts.length - 1] ?? zeroCounts;
    this.atInput.push(input);
    this.atOut.push(this.out.length);
    this.atTotal.push(total);
    this.atCounts.push(sameCounts(last, counts) ? last : { ...counts });
  }
}

/** Equal own fields apart from `timestamp` (which the model copy drops): a copy of a message counts as the message. */
function sameForModel(a: ChatMessage, b: ChatMessage): boolean {
  const x = a as unknown as Record<string, unknown>;
  const y = b as unknown as Record<string, unknown>;
  let fields = 0;
  for (const key of Object.keys(x)) {
    if (key === 'timestamp') continue;
    if (x[key] !== y[key]) return false;
    fields++;
  }
  for (const key of Object.keys(y)) if (key !== 'timestamp') fields--;
  return fields === 0;
}

function sameCounts(a: StepCounts, b: StepCounts): boolean {
  return (
    a.truncatedResults === b.truncatedResults &&
    a.backfilledResults === b.backfilledResults &&
    a.droppedOrphanResults === b.droppedOrphanResults &&
    a.droppedDuplicateResults === b.droppedDuplicateResults &&
    a.droppedMalformedCalls === b.droppedMalformedCalls &&
    a.droppedEmptyAssistants === b.droppedEmptyAssistants &&
    a.movedResults === b.movedResults
  );
}
