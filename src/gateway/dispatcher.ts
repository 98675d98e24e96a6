/**
 * The gateway's dispatcher: takes inbound messages off the bus, runs them through the agent loop and publishes the
 * answers to the chat they came from.
 *
 * Concurrency model. A session is "running" while the loop holds at least one of its messages. At most
 * `maxConcurrent` sessions run at once. A message for a running session waits here for that turn to end (or, with
 * `joinRunningTurns`, goes to the loop, which folds it into the running turn). Sessions waiting for a slot are served
 * round-robin: a session gets one message through, then goes to the back of the line, so a chatty session cannot
 * starve the others. Priority
 * commands (`/stop`, `/status`, `/restart`) skip the line and the limit so they reach a busy session at once.
 */
import { setMaxListeners } from 'node:events';
import type { TurnInput, TurnOptions, TurnOutput } from '../agent/loop.js';
import { TurnNotSavedError } from '../agent/save-errors.js';
import { toolHint } from '../agent/tool-hint.js';
import type { MessageBus } from '../bus/message-bus.js';
import { commandWord, PRIORITY_COMMANDS } from '../bus/priority.js';
import type { InboundMessage, OutboundMessage } from '../bus/types.js';
import { META, type TurnError } from '../channels/metadata.js';
import { TurnRelay } from '../channels/relay.js';
import { EVENT_META } from '../channels/websocket/turn-events.js';
import { providerErrorHint } from '../providers/errors.js';
import type { DeliveryRef } from '../session/delivery.js';
import { sessionKeyFor } from '../session/keys.js';
import { errorMessage } from '../util/errors.js';
import { type Logger, logFailure, silentLogger } from '../util/log.js';

/** What the dispatcher needs from the agent loop (AgentLoop satisfies it). */
export interface TurnProcessor {
  processMessage(input: TurnInput, options?: TurnOptions): Promise<TurnOutput>;
}

export interface DispatcherSettings {
  /** Send a short `tool(arg)` line to the chat when the agent starts a tool (`channels.sendToolHints`). */
  sendToolHints: boolean;
  /** Send the model's reasoning to the chat (`channels.showReasoning`). */
  showReasoning: boolean;
  toolHintMaxLength: number;
}

export interface DispatcherOptions {
  bus: MessageBus;
  loop: TurnProcessor;
  /** Sessions that may run at once (NANOBOT_MAX_CONCURRENT_REQUESTS). */
  maxConcurrent: number;
  log?: Logger;
  settings?: Partial<DispatcherSettings>;
  priorityCommands?: readonly string[];
  /**
   * Hand a message for a session whose turn is running straight to the loop, which folds it into that turn
   * (mid-turn injection). Off by default: AgentLoop currently deadlocks a session when such a message arrives
   * too late to be injected (runTurn awaits the follow-up turn that is queued behind itself). While off, the
   * message waits here and runs as the session's next turn.
   */
  joinRunningTurns?: boolean;
  /** Answers are saved marked "to be delivered"; this learns which outbound message carries which answer. */
  deliveries?: { track(message: OutboundMessage, ref: DeliveryRef): void };
  /** `agents.defaults.unifiedSession`: every chat without a key of its own is one session (read per message). */
  unifiedSession?: () => boolean;
  /** The provider in use, named in the hint of a failed request (`check providers.<name>.apiKey`). */
  providerName?: () => string;
}

export interface DrainResult {
  /** True when turns were still running at the timeout and had to be aborted. */
  aborted: boolean;
  /** Messages that were waiting for a slot and never ran. */
  dropped: number;
}

const ERROR_REPLY_MAX = 300;

interface SessionLane {
  key: string;
  /** Messages held back until the session gets a slot (kept in arrival order). */
  waiting: InboundMessage[];
  /** Messages of this session the loop is handling now. */
  outstanding: number;
  inLine: boolean;
}

interface PendingSwap {
  loop: TurnProcessor;
  resolve: (swapped: boolean) => void;
}

/** The session a message belongs to (`unified:default` for every chat with `unifiedSession`). */
export function sessionKeyOf(message: InboundMessage, unifiedSession = false): string {
  return sessionKeyFor(message, unifiedSession);
}

export class Dispatcher {
  private loop: TurnProcessor;
  /** Priority commands answered while a turn of their session runs (see accept). */
  private readonly besideTurn = new WeakSet<InboundMessage>();
  private readonly providerName: (() => string) | undefined;
  private readonly bus: MessageBus;
  private readonly log: Logger;
  private readonly maxConcurrent: number;
  private readonly priority: Set<string>;
  private readonly joinRunningTurns: boolean;
  private readonly deliveries: DispatcherOptions['deliveries'];
  private readonly unifiedSession: () => boolean;
  private settings: DispatcherSettings;
  private readonly lanes = new Map<string, SessionLane>();
  /** Session keys waiting for a slot, served front to back. */
  private readonly line: string[] = [];
  private runningSessions = 0;
  private readonly inflight = new Set<Promise<void>>();
  private readonly intake = new AbortController();
  /** Aborts every turn still running when a drain times out. */
  private readonly abortAll = new AbortController();
  private pump?: Promise<void>;
  private pendingSwap?: PendingSwap;
  private draining = false;

  constructor(options: DispatcherOptions) {
    this.bus = options.bus;
    this.loop = options.loop;
    this.log = options.log ?? silentLogger;
    this.maxConcurrent = Math.max(1, Math.floor(options.maxConcurrent));
    this.priority = new Set(options.priorityCommands ?? PRIORITY_COMMANDS);
    this.joinRunningTurns = options.joinRunningTurns ?? false;
    this.deliveries = options.deliveries;
    this.unifiedSession = options.unifiedSession ?? (() => false);
    this.providerName = options.providerName;
    // Every running turn listens on the shared shutdown signal; hundreds at once are expected, not a leak.
    setMaxListeners(0, this.abortAll.signal);
    this.settings = { sendToolHints: false, showReasoning: false, toolHintMaxLength: 40, ...options.settings };
  }

  private keyOf(message: InboundMessage): string {
    return sessionKeyOf(message, this.unifiedSession());
  }

  get maxConcurrentSessions(): number {
    return this.maxConcurrent;
  }

  /** Starts consuming the bus's inbound queue. */
  start(): void {
    this.pump ??= this.consume();
  }

  updateSettings(settings: Partial<DispatcherSettings>): void {
    this.settings = { ...this.settings, ...settings };
  }

  stats(): { runningSessions: number; waitingSessions: number; inflight: number } {
    return { runningSessions: this.runningSessions, waitingSessions: this.line.length, inflight: this.inflight.size };
  }

  /**
   * Hands one message to the dispatcher (the bus pump calls this; tests may too).
   * Messages for a session keep their order whatever path they take.
   */
  accept(message: InboundMessage): void {
    if (this.draining) {
      this.log.warn(`gateway: shutting down; dropped a message for ${this.keyOf(message)}`);
      return;
    }
    if (this.isPriority(message.content)) {
      // `/status` or `/stop` beside a running turn of the same chat: its answer must not end that turn (the turn, or
      // the marker of the stopped one, does).
      if ((this.lanes.get(sessionKeyOf(message))?.outstanding ?? 0) > 0) this.besideTurn.add(message);
      this.track(this.runOne(message));
      return;
    }
    const lane = this.laneFor(this.keyOf(message));
    // A running session with nothing held back and nobody else waiting: the loop folds the message into its turn.
    if (this.canJoin(lane)) {
      this.forward(lane, message);
      return;
    }
    lane.waiting.push(message);
    if (lane.outstanding === 0) this.enterLine(lane);
    this.schedule();
  }

  /**
   * Replaces the loop once no turn is running (new turns wait meanwhile), e.g. after a config reload.
   * Resolves true when swapped, false when a later replacement superseded this one.
   */
  replaceLoop(loop: TurnProcessor): Promise<boolean> {
    this.pendingSwap?.resolve(false);
    return new Promise((resolve) => {
      this.pendingSwap = { loop, resolve };
      this.schedule();
    });
  }

  /**
   * Stops taking messages and waits for the turns in flight; after `timeoutMs` aborts them (the loop has
   * checkpointed what they finished) and gives them a moment to save.
   */
  async drain(timeoutMs: number): Promise<DrainResult> {
    this.draining = true;
    this.intake.abort(new Error('gateway draining'));
    let dropped = 0;
    for (const lane of this.lanes.values()) {
      dropped += lane.waiting.length;
      lane.waiting.length = 0;
    }
    this.line.length = 0;
    if (dropped > 0) this.log.warn(`gateway: ${dropped} queued message(s) were not started before shutdown`);
    const settled = () => Promise.allSettled([...this.inflight]).then(() => true);
    const finished = await Promise.race([settled(), delay(timeoutMs).then(() => false)]);
    if (!finished) {
      this.log.warn(`gateway: ${this.inflight.size} turn(s) still running after ${timeoutMs} ms; aborting them`);
      this.abortAll.abort(new Error('gateway shutting down'));
      await Promise.race([settled(), delay(1000)]);
    }
    this.pendingSwap?.resolve(false);
    this.pendingSwap = undefined;
    return { aborted: !finished, dropped };
  }

  private async consume(): Promise<void> {
    while (!this.intake.signal.aborted) {
      let message: InboundMessage;
      try {
        message = await this.bus.consumeInbound(this.intake.signal);
      } catch {
        return;
      }
      this.accept(message);
    }
  }

  private isPriority(content: string): boolean {
    return this.priority.has(commandWord(content));
  }

  private laneFor(key: string): SessionLane {
    let lane = this.lanes.get(key);
    if (!lane) {
      lane = { key, waiting: [], outstanding: 0, inLine: false };
      this.lanes.set(key, lane);
    }
    return lane;
  }

  private canJoin(lane: SessionLane): boolean {
    return (
      this.joinRunningTurns &&
      lane.outstanding > 0 &&
      lane.waiting.length === 0 &&
      this.line.length === 0 &&
      !this.pendingSwap
    );
  }

  private enterLine(lane: SessionLane): void {
    if (lane.inLine) return;
    lane.inLine = true;
    this.line.push(lane.key);
  }

  /** Starts waiting sessions while slots are free; performs a pending loop swap once everything is idle. */
  private schedule(): void {
    while (!this.pendingSwap && this.runningSessions < this.maxConcurrent && this.line.length > 0) {
      const lane = this.lanes.get(this.line.shift() ?? '');
      if (!lane) continue;
      lane.inLine = false;
      const next = lane.waiting.shift();
      if (next) this.forward(lane, next);
      // Uncontended: the rest may join the running turn now rather than wait for it to end.
      while (this.joinRunningTurns && this.line.length === 0 && lane.waiting.length > 0) {
        const more = lane.waiting.shift();
        if (more) this.forward(lane, more);
      }
    }
    const swap = this.pendingSwap;
    if (swap && this.inflight.size === 0) {
      this.pendingSwap = undefined;
      this.loop = swap.loop;
      swap.resolve(true);
      this.schedule();
    }
  }

  private forward(lane: SessionLane, message: InboundMessage): void {
    lane.outstanding += 1;
    if (lane.outstanding === 1) this.runningSessions += 1;
    // runOne answers a failed turn itself; the catch keeps anything else from ending the process.
    const task = this.runOne(message)
      .catch(logFailure(this.log, `gateway: message for ${this.keyOf(message)} failed`))
      .finally(() => {
        lane.outstanding -= 1;
        if (lane.outstanding > 0) return;
        this.runningSessions -= 1;
        if (lane.waiting.length > 0) this.enterLine(lane);
        else this.lanes.delete(lane.key);
      });
    this.track(task);
  }

  private track(task: Promise<void>): void {
    const tracked: Promise<void> = task.finally(() => {
      this.inflight.delete(tracked);
      this.schedule();
    });
    this.inflight.add(tracked);
  }

  private async runOne(message: InboundMessage): Promise<void> {
    const input: TurnInput = {
      channel: message.channel,
      chatId: message.chatId,
      content: message.content,
      ...(message.media?.length ? { media: message.media } : {}),
      sessionKey: this.keyOf(message),
      ...(typeof message.metadata?.thread_id === 'string' ? { threadId: message.metadata.thread_id } : {}),
    };
    // Tool hints, reasoning and (for channels that stream) the answer as it is written.
    const relay = new TurnRelay({
      publish: (outbound) => this.bus.publishOutbound(outbound),
      inbound: message,
      settings: this.settings,
      describeTool: (event) => toolHint(event, this.settings.toolHintMaxLength),
    });
    let output: TurnOutput;
    try {
      output = await this.loop.processMessage(input, {
        signal: this.abortAll.signal,
        onEvent: (event) => relay.onEvent(event),
        ...(this.deliveries ? { trackDelivery: true } : {}),
      });
    } catch (err) {
      this.log.error(`gateway: turn for ${this.keyOf(message)} failed: ${errorMessage(err)}`);
      relay.close();
      const text =
        err instanceof TurnNotSavedError
          ? err.chatText
          : 'Sorry, something went wrong while answering; the details are in the gateway log.';
      const failure: TurnError = { kind: 'internal', message: text, hint: 'See the gateway log for details.' };
      this.reply(message, text, { [META.turnError]: failure });
      return;
    }
    this.deliver(message, output, relay);
  }

  private deliver(message: InboundMessage, output: TurnOutput, relay: TurnRelay): void {
    // Answered by the turn it was folded into (that turn's reply covers it), or cancelled by /stop or shutdown.
    if (output.injected || output.stopReason === 'aborted') {
      relay.close();
      this.endWithoutReply(message);
      return;
    }
    if (output.error && output.stopReason === 'error') {
      this.log.warn(`gateway: ${output.sessionKey}: model request failed: ${output.error.message}`);
      const hint = providerErrorHint(output.error.kind, this.providerName?.() ?? '<name>');
      const failure: TurnError = {
        kind: output.error.kind,
        message: truncate(output.error.message, ERROR_REPLY_MAX),
        hint,
      };
      const text = `Sorry, the model request failed (${failure.kind}): ${failure.message}\n${hint}`;
      // Text that streamed before the failure stays in front of the user, with the error after it.
      const partial = output.content.trim();
      this.reply(message, partial ? `${partial}\n\n${text}` : text, {
        ...relay.replyMetadata(),
        [META.turnError]: failure,
      });
      return;
    }
    if (!output.content.trim()) {
      relay.close();
      this.endWithoutReply(message);
      return;
    }
    const sent = this.reply(message, output.content, {
      ...relay.replyMetadata(),
      ...(output.stopReason === 'command' ? { [META.renderAs]: 'text' } : {}),
    });
    if (output.delivery) this.deliveries?.track(sent, { sessionKey: output.sessionKey, ...output.delivery });
  }

  /**
   * A turn that ends with no reply: clients that follow turns (the WebUI asks with `_wants_events`) get an empty
   * turn-end marker so their "working" state ends; chat apps get nothing.
   */
  private endWithoutReply(message: InboundMessage): void {
    if (message.metadata?.[EVENT_META.wantsEvents] !== true) return;
    this.bus.publishOutbound({
      channel: message.channel,
      chatId: message.chatId,
      content: '',
      metadata: { ...message.metadata, [META.turnEnd]: true },
    });
  }

  /**
   * The turn's reply (marked as its end). `extra`: the streamed segment this reply completes (the channel writes it
   * into that message), an error, a rendering hint.
   */
  private reply(message: InboundMessage, content: string, extra: Record<string, unknown> = {}): OutboundMessage {
    const ends = this.besideTurn.has(message) ? {} : { [META.turnEnd]: true };
    const metadata = { ...message.metadata, ...extra, ...ends };
    const outbound: OutboundMessage = {
      channel: message.channel,
      chatId: message.chatId,
      content,
      ...(Object.keys(metadata).length > 0 ? { metadata } : {}),
    };
    this.bus.publishOutbound(outbound);
    return outbound;
  }
}

function truncate(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}
