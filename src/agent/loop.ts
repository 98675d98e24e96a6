import { estimateTextTokens, messageText } from '../memory/tokens.js';
import type { ChatMessage } from '../providers/types.js';
import { markPendingDelivery } from '../session/delivery.js';
import { UNIFIED_SESSION_KEY } from '../session/keys.js';
import type { Session } from '../session/types.js';
import { errorMessage } from '../util/errors.js';
import { type Logger, logFailure, silentLogger } from '../util/log.js';
import { builtinCommands } from './commands/builtin.js';
import { sessionPreset } from './commands/model.js';
import { CommandRouter, type RouteMatch } from './commands/router.js';
import { recordUsage, sumUsage } from './commands/token-stats.js';
import { type CommandResult, type CommandTurn, fromSlashCommand, type LoopRuntime } from './commands/types.js';
import { withAttachments } from './context.js';
import { FixedTokens } from './fixed-tokens.js';
import type { ActiveTurn, AgentLoopDeps, Turn, TurnInput, TurnOptions, TurnOutput, TurnState } from './loop-types.js';
import { compactAfterOverflow } from './overflow.js';
import { claimTurn, releaseTurn, restoreInterruptedTurn, turnRunningElsewhere } from './recovery.js';
import type { AgentRunner } from './runner.js';
import { saveOrExplain } from './save-errors.js';

export type { SlashCommand } from './commands/types.js';
export type { AgentLoopDeps, TurnInput, TurnOptions, TurnOutput } from './loop-types.js';

const MAX_QUEUED = 20;
const MAX_INJECTED_PER_ITERATION = 3;

export class AgentLoop {
  private readonly log: Logger;
  private readonly tails = new Map<string, Promise<unknown>>();
  private readonly active = new Map<string, ActiveTurn>();
  /** Every slash command this loop answers: the built-ins plus `deps.commands`. */
  readonly commands = new CommandRouter();
  private readonly runtime: LoopRuntime;
  private readonly fixedTokens = new FixedTokens();

  constructor(private readonly deps: AgentLoopDeps) {
    this.log = deps.log ?? silentLogger;
    for (const command of builtinCommands(this.commands)) this.commands.register(command);
    for (const [name, extra] of Object.entries(deps.commands ?? {}))
      this.commands.register(fromSlashCommand(name, extra));
    for (const command of deps.sessionCommands ?? []) this.commands.register(command);
    this.runtime = {
      isTurnActive: (key) => this.active.has(key),
      stopTurn: (key) => this.stopTurn(key),
      archive: (session) => this.archive(session),
      contextTokens: (session) => this.contextTokens(session),
      models: () => deps.models?.(),
      restart: deps.restart,
      work: deps.work ?? [],
    };
  }

  /** True while a turn of this session is running or waiting to run. */
  isActive(key: string): boolean {
    return this.tails.has(key) || this.active.has(key);
  }

  static sessionKey(input: TurnInput): string {
    return input.sessionKey ?? `${input.channel}:${input.chatId}`;
  }

  /**
   * Runs a turn after any turn already running in the same session. Priority commands (`/stop`, `/restart`,
   * `/status`) and unknown commands are answered at once; other commands wait their turn; an ordinary message for a
   * busy session joins the running turn (up to 20 queued, 3 taken per iteration) instead of waiting for it to end.
   */
  processMessage(input: TurnInput, options: TurnOptions = {}): Promise<TurnOutput> {
    const key = AgentLoop.sessionKey(input);
    const match = this.commands.match(input.content);
    if (this.commands.isImmediate(match)) {
      return this.runCommand(required(match), input, key, () => this.deps.sessions.load(key)).then((result) =>
        typeof result === 'string'
          ? commandOutput(key, result)
          : this.enqueue(key, { ...input, content: result.turn }, options, result),
      );
    }
    const busy = this.active.get(key);
    if (busy && busy.queued.length < MAX_QUEUED && !match) {
      return new Promise((resolve, reject) => busy.queued.push({ input, options, resolve, reject }));
    }
    return this.enqueue(key, input, options);
  }

  private enqueue(key: string, input: TurnInput, options: TurnOptions, directive?: CommandTurn): Promise<TurnOutput> {
    const previous = this.tails.get(key) ?? Promise.resolve();
    const next = previous.catch(() => undefined).then(() => this.runTurn(input, options, key, directive));
    this.tails.set(key, next);
    // Both ways: a plain .finally() would re-raise the turn's rejection where nobody handles it (the caller does).
    const forget = () => {
      if (this.tails.get(key) === next) this.tails.delete(key);
    };
    next.then(forget, forget);
    return next;
  }

  private stopTurn(key: string): boolean {
    const running = this.active.get(key);
    running?.controller.abort(new Error('stopped by /stop'));
    return running !== undefined;
  }

  /** Runs a routed command; a failing command is reported to the user rather than failing the message. */
  /** The provider said the request overflowed its window: archive older history and run the turn again, once. */
  private async retryAfterOverflow(turn: Turn): Promise<boolean> {
    const { consolidator, context } = this.deps;
    const session = required(turn.session);
    const overflowed = turn.result?.error?.kind === 'context_overflow';
    if (!overflowed || turn.overflowRetried || !consolidator || !turn.user) return false;
    turn.overflowRetried = true;
    if (!(await compactAfterOverflow(consolidator, session, turn.user.index, turn.signal))) return false;
    this.log.warn(`session ${turn.key}: the request overflowed the model's context window; archived older history`);
    const visible = (from: number, to?: number) => session.messages.slice(from, to);
    turn.request = [
      { role: 'system', content: context.buildSystemPrompt({ session }) },
      ...visible(session.lastConsolidated, turn.user.index),
      turn.user.message,
      ...visible(turn.user.index + 1),
    ];
    turn.saved = 0; // the failed run's saved rounds are part of the history now
    return true;
  }

  private async runCommand(
    match: RouteMatch,
    input: TurnInput,
    key: string,
    session: () => Promise<Session>,
  ): Promise<CommandResult> {
    if (match.kind === 'unknown') return match.reply;
    try {
      return await match.command.run({
        name: match.name,
        args: match.args,
        sessionKey: key,
        channel: input.channel,
        chatId: input.chatId,
        sessions: this.deps.sessions,
        session,
        runtime: this.runtime,
      });
    } catch (err) {
      this.log.warn(`command ${match.name} failed in ${key}: ${(err as Error).message}`);
      return `${match.name} failed: ${(err as Error).message}`;
    }
  }

  private async runTurn(
    input: TurnInput,
    options: TurnOptions,
    key: string,
    directive?: CommandTurn,
  ): Promise<TurnOutput> {
    const controller = new AbortController();
    const onAbort = () => controller.abort(options.signal?.reason);
    if (options.signal?.aborted) onAbort();
    options.signal?.addEventListener('abort', onAbort, { once: true });
    const active: ActiveTurn = { controller, queued: [], injected: [] };
    this.active.set(key, active);

    const turn: Turn = {
      input,
      options,
      key,
      state: 'restore',
      signal: controller.signal,
      saved: 0,
      earlierRounds: [],
      ...(directive ? { directive } : {}),
      llmCalls: 0,
      trace: [],
    };
    let output: TurnOutput;
    try {
      while (turn.state !== 'done') {
        const started = performance.now();
        const state = turn.state;
        turn.state = await this.steps[state](turn);
        turn.trace.push({ state, ms: performance.now() - started });
      }
      output = required(turn.output);
    } catch (err) {
      // Messages folded into this turn fail with it; each caller reports the failure to its user.
      for (const { reject } of active.injected) reject(err);
      throw err;
    } finally {
      options.signal?.removeEventListener('abort', onAbort);
      this.active.delete(key);
      turn.detachGoal?.();
      // Messages that arrived too late to join this turn run as the next turns, in order, whether this one
      // succeeded or not. Not awaited: they are queued behind this very turn, so waiting here would never end.
      for (const late of active.queued) this.enqueue(key, late.input, late.options).then(late.resolve, late.reject);
    }
    this.log.debug(`turn ${key}: ${turn.trace.map((t) => `${t.state} ${t.ms.toFixed(1)}ms`).join(', ')}`);
    for (const { resolve } of active.injected) resolve({ ...output, injected: true });
    return output;
  }

  private readonly steps: Record<Exclude<TurnState, 'done'>, (turn: Turn) => Promise<TurnState>> = {
    restore: async (turn) => {
      // A background consolidation of the previous turn saves this session too: let it finish first.
      await this.deps.consolidator?.settled(turn.key);
      const session = await this.deps.sessions.load(turn.key);
      const elsewhere = turnRunningElsewhere(session);
      if (elsewhere)
        this.log.debug(`session ${turn.key}: process ${elsewhere.pid} is still running a turn; left as is`);
      else if (restoreInterruptedTurn(session)) {
        this.log.warn(`session ${turn.key}: the previous turn was interrupted; restored what it had finished`);
        await this.deps.sessions.save(session);
      }
      turn.session = session;
      turn.detachGoal = this.deps.goals?.attach(session);
      return 'command';
    },

    command: async (turn) => {
      const session = required(turn.session);
      const match = turn.directive ? undefined : this.commands.match(turn.input.content);
      if (!match) return 'build';
      const result = await this.runCommand(match, turn.input, turn.key, async () => session);
      if (typeof result !== 'string') {
        turn.input = { ...turn.input, content: result.turn };
        turn.directive = result;
        return 'build';
      }
      turn.output = commandOutput(turn.key, result);
      return 'done';
    },

    build: async (turn) => {
      const session = required(turn.session);
      const { context } = this.deps;
      const user = context.buildUserMessage(withAttachments(turn.input.content, turn.input.media), {
        channel: turn.input.channel,
        chatId: turn.input.chatId,
      });
      const { consolidator } = this.deps;
      let system = context.buildSystemPrompt({ session });
      if (consolidator) {
        // Only a request that would overflow the window waits for consolidation; otherwise it runs after the reply.
        turn.fixedTokens = this.fixedTokens.estimate(system, this.deps.toolDefinitions?.() ?? [], user);
        if (await consolidator.needsBlocking(session, turn.fixedTokens)) {
          await consolidator.maybeConsolidate(session, {
            mode: 'blocking',
            signal: turn.signal,
            systemPromptTokens: turn.fixedTokens,
          });
          system = context.buildSystemPrompt({ session }); // the archived summary changed
        }
      }
      // Stored messages go as they are: the runner's governor drops their timestamps, and reuses its work on the
      // messages an earlier request had (so a turn in a long session costs its new messages, not the whole history).
      const history = session.messages.slice(session.lastConsolidated);
      turn.request = [{ role: 'system', content: system }, ...history, user];
      turn.user = { message: user, index: session.messages.length };
      Object.assign(session.metadata, turn.directive?.metadata);
      session.messages.push(stamp(context.forHistory(user))); // without skills `$name` loaded for this turn only
      claimTurn(session.metadata);
      rememberRoute(session, turn.key, turn.input);
      await saveOrExplain(this.deps.sessions, session, 'your message'); // on disk before the model sees it
      return 'run';
    },

    run: async (turn) => {
      const session = required(turn.session);
      const persist = serialised(async (change: () => void) => {
        change();
        await this.deps.sessions.save(session);
      });
      const { onEvent } = turn.options;
      turn.result = await this.runnerFor(session, turn.input.modelPreset).run(required(turn.request), {
        signal: turn.signal,
        onEvent: (event) => {
          if (event.type === 'model-request') turn.llmCalls++;
          onEvent?.(event);
        },
        toolContext: {
          sessionKey: turn.key,
          channel: turn.input.channel,
          chatId: turn.input.chatId,
          ...(turn.input.threadId ? { threadId: turn.input.threadId } : {}),
        },
        // A tool round is appended as it goes (its call, then each result): a crash leaves calls without results,
        // which the next turn answers as interrupted (recovery.ts).
        onProgress: (messages) =>
          persist(() => {
            session.messages.push(...messages.map(stamp));
            turn.saved += messages.length;
          }),
        takeInjections: () => this.takeInjections(turn),
      });
      return (await this.retryAfterOverflow(turn)) ? 'run' : 'save';
    },

    save: async (turn) => {
      const session = required(turn.session);
      const result = required(turn.result);
      session.messages.push(...result.messages.slice(turn.saved).map(stamp));
      recordUsage(session, result.usage, turn.llmCalls);
      this.deps
        .onUsage?.(session.key, result.usage, turn.llmCalls)
        .catch((err: unknown) => this.log.warn(`agent: could not record token usage: ${errorMessage(err)}`));
      turn.llmCalls = 0;
      delete session.metadata.runtime_checkpoint;
      releaseTurn(session.metadata);
      const next = this.deps.goals?.afterRound(session, result) ?? {};
      if (next.nudge) {
        // Another round: the nudge is the new last user message, saved before the model sees it.
        session.messages.push(stamp({ ...next.nudge }));
        claimTurn(session.metadata);
        turn.request = [...required(turn.request), ...result.messages, next.nudge];
        turn.earlierRounds.push(result);
        turn.saved = 0;
      }
      const deliverable = !next.nudge && !result.error && result.stopReason !== 'aborted';
      const target = turn.options.trackDelivery && deliverable ? turn.input : undefined;
      const delivery = markPendingDelivery(session, target); // in the same append as the answer
      if (delivery) turn.delivery = delivery;
      await saveOrExplain(this.deps.sessions, session, 'the answer');
      if (next.nudge) return 'run';
      if (next.notice) turn.notice = next.notice;
      const { consolidator } = this.deps;
      if (consolidator) {
        void consolidator
          .maybeConsolidate(session, { mode: 'background', systemPromptTokens: turn.fixedTokens ?? 0 })
          .catch(logFailure(this.log, `session ${turn.key}: background consolidation failed`));
      }
      return 'respond';
    },

    respond: async (turn) => {
      const result = required(turn.result);
      const rounds = [...turn.earlierRounds, result];
      const parts = [...rounds.map((round) => round.content), turn.notice ?? ''];
      turn.output = {
        content: parts.filter((part) => part.trim() !== '').join('\n\n'),
        sessionKey: turn.key,
        stopReason: result.stopReason,
        usage: sumUsage(rounds.map((round) => round.usage)),
        ...(result.error ? { error: result.error } : {}),
        ...(turn.delivery ? { delivery: turn.delivery } : {}),
      };
      return 'done';
    },
  };

  /** The default runner, or the one of the preset this session switched to with /model. */
  private runnerFor(session: Session, turnPreset?: string): AgentRunner {
    const preset = turnPreset ?? sessionPreset(session);
    if (preset === undefined || !this.deps.runnerFor) return this.deps.runner;
    try {
      return this.deps.runnerFor(preset);
    } catch (err) {
      // The preset may have been removed from the config since the switch: carry on with the default model.
      this.log.warn(
        `session ${session.key}: preset "${preset}" unavailable (${(err as Error).message}); using default`,
      );
      return this.deps.runner;
    }
  }

  /**
   * What the next request of this session would roughly cost: system prompt, tool definitions, live history. `/status`
   * and the WebUI's status panel both show this figure.
   */
  contextTokens(session: Session): number {
    const history = session.messages
      .slice(session.lastConsolidated)
      .reduce((sum, message) => sum + estimateTextTokens(messageText(message).text), 0);
    const system = this.deps.context.buildSystemPrompt({ session });
    const tools = JSON.stringify(this.deps.toolDefinitions?.() ?? []);
    return estimateTextTokens(system) + estimateTextTokens(tools) + history;
  }

  private takeInjections(turn: Turn): ChatMessage[] {
    const active = this.active.get(turn.key);
    if (!active) return [];
    return active.queued.splice(0, MAX_INJECTED_PER_ITERATION).map(({ input, resolve, reject }) => {
      active.injected.push({ resolve, reject });
      // Injected messages are saved as they are: attachments go by path only.
      const content = withAttachments(input.content, input.media, false);
      return this.deps.context.buildUserMessage(content, { channel: input.channel, chatId: input.chatId });
    });
  }

  /**
   * Moves the conversation to an archive session and leaves the live one empty; nothing is deleted. Then, as
   * nanobot does, the model summarises what was not yet archived into history.jsonl under the chat's key (raw
   * when the model fails: the archive session keeps every message either way).
   */
  private async archive(session: Session): Promise<void> {
    const stampText = new Date().toISOString().replace(/[:.]/g, '-');
    const archived: Session = {
      ...session,
      key: `${session.key}:archived:${stampText}`,
      messages: [...session.messages],
      metadata: structuredClone(session.metadata),
    };
    await this.deps.sessions.save(archived);
    session.messages = [];
    session.lastConsolidated = 0;
    session.metadata = {};
    await this.deps.sessions.save(session);
    const { consolidator } = this.deps;
    if (consolidator && archived.lastConsolidated < archived.messages.length) {
      await consolidator.archiveClosed(archived, session.key);
    }
  }
}

function required<T>(value: T | undefined): T {
  if (value === undefined) throw new Error('turn state machine: a step ran before the step that sets its input');
  return value;
}

function commandOutput(sessionKey: string, content: string): TurnOutput {
  return { content, sessionKey, stopReason: 'command', usage: { promptTokens: 0, completionTokens: 0 } };
}

/** Runs the given async function calls one after another (saves from parallel tools must not interleave). */
function serialised<A>(fn: (arg: A) => Promise<void>): (arg: A) => Promise<void> {
  let chain: Promise<unknown> = Promise.resolve();
  return (arg) => {
    const run = chain.then(() => fn(arg));
    chain = run.catch(() => undefined);
    return run;
  };
}

/** Marks when a message was recorded (once: a message saved twice keeps its first stamp). */
function stamp(message: ChatMessage): ChatMessage {
  message.timestamp ??= new Date().toISOString();
  return message;
}

/**
 * Where the session's answers and proactive messages go (`last_channel`). The shared session of unifiedSession
 * keeps the last real chat: the terminal and internal turns are no address for a heartbeat (as in nanobot).
 */
function rememberRoute(session: Session, key: string, input: TurnInput): void {
  if (key === UNIFIED_SESSION_KEY && (input.channel === 'cli' || input.channel === 'system')) return;
  session.metadata.last_channel = `${input.channel}:${input.chatId}`;
}
