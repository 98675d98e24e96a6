/**
 * Consolidator: keeps the model-visible part of a session (messages from `lastConsolidated` on) inside the
 * context budget by summarising its oldest turns into history.jsonl and moving `lastConsolidated` past them.
 * Lossless: messages stay in the session (search_history can quote them); only the cursor moves.
 *
 * Budget = contextWindow − maxTokens − margin. At or over it, whole turns (cut at user messages, so a tool
 * call is never separated from its result, and the last turn always stays) are summarised until the
 * estimate is under budget × ratio, at most `maxRounds` LLM calls per run. A failed summary becomes a [RAW]
 * entry and the cursor still advances, so the same chunk is never retried forever.
 */

import type { ChatMessage, LLMProvider } from '../providers/types.js';
import { publicContent, stripRuntimeContext } from '../session/runtime-context.js';
import type { Session } from '../session/types.js';
import { type Logger, silentLogger } from '../util/log.js';
import type { HistoryStore } from './history.js';
import {
  CONSOLIDATOR_SYSTEM_PROMPT,
  consolidatorUserPrompt,
  NOTHING_TO_KEEP,
  readArchivedSummary,
  writeArchivedSummary,
} from './prompts.js';
import { contentText, estimateTextTokens, TokenCounter } from './tokens.js';

export const MAX_SUMMARY_CHARS = 8_000;
export const MAX_RAW_ARCHIVE_CHARS = 16_000;
/** Per-message clip in the summariser's transcript: tool output is bulky and rarely worth keeping verbatim. */
const TRANSCRIPT_TEXT_CHARS = 4_000;
const TRANSCRIPT_TOOL_CHARS = 600;
const TRANSCRIPT_ARGS_CHARS = 300;
/** Room for the summariser's own system prompt and framing. */
const SUMMARISER_OVERHEAD_TOKENS = 2_048;

export interface ConsolidatorOptions {
  provider: LLMProvider;
  model: string;
  history: HistoryStore;
  contextWindowTokens: number;
  /** The reply budget of a normal request (it is reserved out of the window). */
  maxTokens: number;
  consolidationRatio?: number;
  safetyMarginTokens?: number;
  maxRounds?: number;
  /** maxTokens of the summarisation request. */
  summaryMaxTokens?: number;
  tokens?: TokenCounter;
  /** Saves the session after each advance. Must be serialised with the loop's own saves of that session. */
  persist?: (session: Session) => Promise<void>;
  log?: Logger;
}

export interface ConsolidateOptions {
  mode: 'background' | 'blocking';
  signal?: AbortSignal;
  /** Tokens of everything sent besides the history: system prompt, tool schemas, the new user message. */
  systemPromptTokens?: number;
}

export interface ConsolidationReport {
  rounds: number;
  llmCalls: number;
  rawArchives: number;
  tokensBefore: number;
  tokensAfter: number;
  lastConsolidated: number;
  skipped?: 'under-budget' | 'already-running' | 'no-boundary' | 'aborted' | 'failed';
  error?: string;
}

type ChunkOutcome = 'summary' | 'nothing' | 'raw' | 'aborted';

export class Consolidator {
  readonly tokens: TokenCounter;
  private readonly log: Logger;
  private readonly ratio: number;
  private readonly maxRounds: number;
  private readonly running = new Map<string, Promise<unknown>>();

  constructor(private readonly options: ConsolidatorOptions) {
    this.tokens = options.tokens ?? new TokenCounter();
    this.log = options.log ?? silentLogger;
    this.ratio = options.consolidationRatio ?? 0.5;
    this.maxRounds = options.maxRounds ?? 5;
  }

  /** Input tokens a request may use: the window minus the reply budget and a safety margin. */
  get budget(): number {
    const { contextWindowTokens, maxTokens, safetyMarginTokens = 1024 } = this.options;
    return Math.max(0, contextWindowTokens - maxTokens - safetyMarginTokens);
  }

  /** Tokens of the model-visible history plus `extraTokens`. */
  async visibleTokens(session: Session, extraTokens = 0): Promise<number> {
    const visible = session.messages.slice(session.lastConsolidated);
    return (await this.tokens.countMessages(visible, this.budget, extraTokens)).tokens;
  }

  /** Would the next request overflow the whole context window (so the turn must wait for consolidation)? */
  async needsBlocking(session: Session, systemPromptTokens: number): Promise<boolean> {
    const limit = this.options.contextWindowTokens - this.options.maxTokens;
    const visible = session.messages.slice(session.lastConsolidated);
    return (await this.tokens.countMessages(visible, limit, systemPromptTokens)).tokens > limit;
  }

  /** Resolves once no consolidation or compaction of `sessionKey` is running. */
  settled(sessionKey: string): Promise<void> {
    const running = this.running.get(sessionKey);
    return running ? running.then(noop, noop) : Promise.resolve();
  }

  /** Runs `fn` after any other consolidation of the same session; the per-session guard. */
  runExclusive<T>(sessionKey: string, fn: () => Promise<T>): Promise<T> {
    const previous = this.running.get(sessionKey) ?? Promise.resolve();
    const run = previous.then(noop, noop).then(fn);
    this.running.set(sessionKey, run);
    void run
      .finally(() => {
        if (this.running.get(sessionKey) === run) this.running.delete(sessionKey);
      })
      .catch(noop);
    return run;
  }

  /**
   * Consolidates when the session is at or over budget. A background call while another run of the same
   * session is in flight returns at once; a blocking call waits for it and then checks again. Never rejects.
   */
  maybeConsolidate(session: Session, options: ConsolidateOptions): Promise<ConsolidationReport> {
    if (options.mode === 'background' && this.running.has(session.key)) {
      return Promise.resolve({ ...emptyReport(session), skipped: 'already-running' });
    }
    return this.runExclusive(session.key, () => this.consolidate(session, options)).catch((error: unknown) => {
      const message = error instanceof Error ? error.message : String(error);
      this.log.warn(`consolidation of ${session.key} failed: ${message}`);
      return { ...emptyReport(session), skipped: 'failed' as const, error: message };
    });
  }

  /**
   * Archives `messages[lastConsolidated, end)` (end: a user-message index, or the length) in chunks of at
   * most one budget each, ≤ maxRounds LLM calls; whatever remains after that is archived raw. The caller
   * holds the session's guard (`runExclusive`). Used by AutoCompact.
   */
  async archiveThrough(
    session: Session,
    end: number,
    signal?: AbortSignal,
    historyKey = session.key,
  ): Promise<ConsolidationReport> {
    const report = emptyReport(session);
    while (session.lastConsolidated < end && report.rounds < this.maxRounds) {
      const cut = this.pickBoundary(session, { need: Number.POSITIVE_INFINITY, cap: this.budget, until: end });
      if (cut === undefined) break;
      report.rounds++;
      const outcome = await this.archiveChunk(session, cut, report, signal, historyKey);
      if (outcome === 'aborted') return aborted(report, session);
    }
    if (session.lastConsolidated < end)
      await this.archiveRaw(session, end, report, 'more than fits in a few summaries', historyKey);
    report.lastConsolidated = session.lastConsolidated;
    return report;
  }

  /**
   * Summarises a conversation `/new` just closed (nanobot asks the model for it too): its messages not yet archived
   * go to history.jsonl under `historyKey`, the chat's own key; when the model fails they go raw. `closed` is the
   * archive copy: its progress is saved under its own key, never over the fresh chat. Never rejects.
   */
  archiveClosed(closed: Session, historyKey: string, signal?: AbortSignal): Promise<ConsolidationReport> {
    return this.runExclusive(closed.key, () =>
      this.archiveThrough(closed, closed.messages.length, signal, historyKey),
    ).catch((error: unknown) => {
      const message = error instanceof Error ? error.message : String(error);
      this.log.warn(`summary of the closed session ${closed.key} failed: ${message}; it stays archived as it is`);
      return { ...emptyReport(closed), skipped: 'failed' as const, error: message };
    });
  }

  private async consolidate(session: Session, options: ConsolidateOptions): Promise<ConsolidationReport> {
    const extra = options.systemPromptTokens ?? 0;
    const report = emptyReport(session);
    let estimate = await this.visibleTokens(session, extra);
    report.tokensBefore = estimate;
    report.tokensAfter = estimate;
    if (this.budget <= 0 || estimate < this.budget) return { ...report, skipped: 'under-budget' };
    const target = Math.floor(this.budget * this.ratio);
    while (estimate > target && report.rounds < this.maxRounds) {
      if (options.signal?.aborted) return aborted(report, session);
      const cut = this.pickBoundary(session, { need: estimate - target, cap: this.budget });
      if (cut === undefined) {
        report.skipped = 'no-boundary';
        break;
      }
      report.rounds++;
      if ((await this.archiveChunk(session, cut, report, options.signal)) === 'aborted')
        return aborted(report, session);
      estimate = await this.visibleTokens(session, extra);
      report.tokensAfter = estimate;
    }
    const windowLimit = this.options.contextWindowTokens - this.options.maxTokens;
    if (options.mode === 'blocking' && estimate > windowLimit) {
      // The round cap bounds LLM spend; the turn must still fit, so the rest goes out unsummarised.
      const cut = this.pickBoundary(session, { need: estimate - target, cap: Number.POSITIVE_INFINITY });
      if (cut !== undefined) {
        await this.archiveRaw(session, cut, report, 'the request would have overflowed the context window');
        report.tokensAfter = await this.visibleTokens(session, extra);
      }
    }
    report.lastConsolidated = session.lastConsolidated;
    return report;
  }

  /**
   * The end (exclusive) of the next chunk: a user-message index after `lastConsolidated`, so whole turns go
   * and the last turn stays. The first boundary that frees `need` tokens, unless the chunk would exceed
   * `cap` (then the largest boundary within it; the smallest one if even that is over).
   */
  private pickBoundary(session: Session, limits: { need: number; cap: number; until?: number }): number | undefined {
    const start = session.lastConsolidated;
    const until = Math.min(limits.until ?? session.messages.length, session.messages.length);
    let removed = 0;
    let best: number | undefined;
    for (let index = start; index <= until; index++) {
      const message = session.messages[index];
      const isBoundary = index > start && (index === limits.until || message?.role === 'user');
      if (isBoundary) {
        if (removed > limits.cap) return best ?? index;
        best = index;
        if (removed >= limits.need) return index;
      }
      if (message && index < until) removed += this.tokens.knownMessageTokens(message);
    }
    return best;
  }

  private async archiveChunk(
    session: Session,
    end: number,
    report: ConsolidationReport,
    signal?: AbortSignal,
    historyKey = session.key,
  ): Promise<ChunkOutcome> {
    const chunk = session.messages.slice(session.lastConsolidated, end);
    const { provider, model, contextWindowTokens, summaryMaxTokens = 2048 } = this.options;
    const maxTranscriptTokens = Math.max(1024, contextWindowTokens - summaryMaxTokens - SUMMARISER_OVERHEAD_TOKENS);
    const transcript = formatTranscript(chunk, maxTranscriptTokens);
    const previous = readArchivedSummary(session.metadata)?.text;
    report.llmCalls++;
    const response = await provider
      .stream({
        model,
        messages: [
          { role: 'system', content: CONSOLIDATOR_SYSTEM_PROMPT },
          { role: 'user', content: consolidatorUserPrompt(transcript, previous) },
        ],
        maxTokens: summaryMaxTokens,
        temperature: 0,
        ...(signal ? { signal } : {}),
      })
      .result();
    if (signal?.aborted || response.error?.kind === 'aborted') return 'aborted';

    const summary = cleanSummary(response.content);
    const lastActive = chunk.at(-1)?.timestamp;
    let outcome: ChunkOutcome;
    if (response.finishReason === 'error' || !summary) {
      const reason = response.error?.message ?? 'empty summary';
      this.log.warn(`consolidation of ${session.key}: summary failed (${reason}); archiving raw`);
      await this.options.history.append(rawEntry(chunk.length, transcript), historyKey);
      report.rawArchives++;
      outcome = 'raw';
    } else if (summary === NOTHING_TO_KEEP) {
      outcome = 'nothing';
    } else {
      const text = clip(summary, MAX_SUMMARY_CHARS);
      await this.options.history.append(text, historyKey);
      writeArchivedSummary(session.metadata, { text, ...(lastActive ? { lastActive } : {}) });
      outcome = 'summary';
    }
    session.lastConsolidated = end;
    await this.options.persist?.(session);
    this.log.info(`consolidated ${session.key}: ${chunk.length} messages (${outcome}), cursor → ${end}`);
    return outcome;
  }

  private async archiveRaw(
    session: Session,
    end: number,
    report: ConsolidationReport,
    why: string,
    historyKey = session.key,
  ): Promise<void> {
    const chunk = session.messages.slice(session.lastConsolidated, end);
    if (chunk.length === 0) return;
    const transcript = formatTranscript(chunk, Math.ceil(MAX_RAW_ARCHIVE_CHARS / 3));
    await this.options.history.append(rawEntry(chunk.length, transcript), historyKey);
    report.rawArchives++;
    session.lastConsolidated = end;
    await this.options.persist?.(session);
    this.log.warn(`consolidation of ${session.key}: ${chunk.length} messages archived unsummarised (${why})`);
  }
}

/**
 * The chunk as the summariser reads it: one line block per message, runtime blocks removed, tool output and
 * arguments clipped, and the whole kept under `maxTokens` (cheap estimate) by dropping the middle.
 */
export function formatTranscript(messages: readonly ChatMessage[], maxTokens: number): string {
  const blocks = messages.map(formatMessage).filter((block) => block.length > 0);
  let total = 0;
  const head: string[] = [];
  for (const block of blocks) {
    const tokens = estimateTextTokens(block) + 1;
    if (total + tokens > maxTokens) {
      head.push(`[… ${blocks.length - head.length} more messages not shown …]`);
      break;
    }
    total += tokens;
    head.push(block);
  }
  return head.join('\n');
}

function formatMessage(message: ChatMessage): string {
  const when = message.timestamp ? `[${message.timestamp.slice(0, 16).replace('T', ' ')}] ` : '';
  const { text, images } = contentText(publicContent(message));
  const imageNote = images > 0 ? ` [${images} image(s)]` : '';
  switch (message.role) {
    case 'user':
      return `${when}USER: ${clip(stripRuntimeContext(text), TRANSCRIPT_TEXT_CHARS)}${imageNote}`;
    case 'assistant': {
      const calls = (message.tool_calls ?? []).map(
        (call) => `  → ${call.function.name}(${clip(call.function.arguments, TRANSCRIPT_ARGS_CHARS)})`,
      );
      const said = text.trim() ? `${when}ASSISTANT: ${clip(text, TRANSCRIPT_TEXT_CHARS)}` : `${when}ASSISTANT:`;
      return calls.length > 0 || text.trim() ? [said, ...calls].join('\n') : '';
    }
    case 'tool':
      return `${when}TOOL RESULT${message.name ? ` (${message.name})` : ''}: ${clip(text, TRANSCRIPT_TOOL_CHARS)}`;
    default:
      return '';
  }
}

function rawEntry(count: number, transcript: string): string {
  return clip(`[RAW] ${count} messages\n${transcript}`, MAX_RAW_ARCHIVE_CHARS);
}

/** Drops leaked reasoning tags and surrounding whitespace. */
function cleanSummary(content: string | null): string {
  return (content ?? '').replace(/<think>[\s\S]*?<\/think>/g, '').trim();
}

function clip(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

function emptyReport(session: Session): ConsolidationReport {
  return {
    rounds: 0,
    llmCalls: 0,
    rawArchives: 0,
    tokensBefore: 0,
    tokensAfter: 0,
    lastConsolidated: session.lastConsolidated,
  };
}

function aborted(report: ConsolidationReport, session: Session): ConsolidationReport {
  return { ...report, skipped: 'aborted', lastConsolidated: session.lastConsolidated };
}

function noop(): void {}
