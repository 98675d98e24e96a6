/**
 * AgentLoop: one conversation turn as an explicit state machine
 * (restore → command → build → run → save → respond → done), one turn at a time per session.
 * The user's message is on disk before the model is called, and each finished tool round is checkpointed,
 * so a crash or Ctrl+C loses at most the round in flight.
 */
import type { ChatMessage, ProviderError, Usage } from '../providers/types.js';
import type { Session, SessionStore } from '../session/types.js';
import { type Logger, silentLogger } from '../util/log.js';
import type { ContextBuilder } from './context.js';
import type { AgentRunner, RunnerEvent, RunResult, StopReason } from './runner.js';

export interface TurnInput {
  channel: string;
  chatId: string;
  content: string;
  /** Overrides the default `channel:chat_id` key. */
  sessionKey?: string;
}

export interface TurnOutput {
  content: string;
  sessionKey: string;
  stopReason: StopReason | 'command';
  usage: Usage;
  error?: ProviderError;
}

export interface TurnOptions {
  signal?: AbortSignal;
  onEvent?: (event: RunnerEvent) => void;
}

export interface AgentLoopDeps {
  sessions: SessionStore;
  context: ContextBuilder;
  runner: AgentRunner;
  log?: Logger;
}

type TurnState = 'restore' | 'command' | 'build' | 'run' | 'save' | 'respond' | 'done';

interface Turn {
  input: TurnInput;
  options: TurnOptions;
  key: string;
  state: TurnState;
  session?: Session;
  /** Messages sent to the model (system + history + the new user message). */
  request?: ChatMessage[];
  /** Length of `session.messages` once the user message is in; the run's messages follow it. */
  baseLength?: number;
  result?: RunResult;
  output?: TurnOutput;
  trace: { state: TurnState; ms: number }[];
}

const INTERRUPTED_REPLY = '(The previous turn was interrupted before it finished.)';
const HELP_TEXT = `Commands:
/new — start a new conversation (the old one is kept on disk)
/help — show this help`;

export class AgentLoop {
  private readonly log: Logger;
  private readonly tails = new Map<string, Promise<unknown>>();

  constructor(private readonly deps: AgentLoopDeps) {
    this.log = deps.log ?? silentLogger;
  }

  static sessionKey(input: TurnInput): string {
    return input.sessionKey ?? `${input.channel}:${input.chatId}`;
  }

  /** Runs a turn after any turn already running in the same session. */
  processMessage(input: TurnInput, options: TurnOptions = {}): Promise<TurnOutput> {
    const key = AgentLoop.sessionKey(input);
    const previous = this.tails.get(key) ?? Promise.resolve();
    const next = previous.catch(() => undefined).then(() => this.runTurn(input, options, key));
    this.tails.set(key, next);
    void next.finally(() => {
      if (this.tails.get(key) === next) this.tails.delete(key);
    });
    return next;
  }

  private async runTurn(input: TurnInput, options: TurnOptions, key: string): Promise<TurnOutput> {
    const turn: Turn = { input, options, key, state: 'restore', trace: [] };
    while (turn.state !== 'done') {
      const started = performance.now();
      const state = turn.state;
      turn.state = await this.steps[state](turn);
      turn.trace.push({ state, ms: performance.now() - started });
    }
    this.log.debug(`turn ${key}: ${turn.trace.map((t) => `${t.state} ${t.ms.toFixed(1)}ms`).join(', ')}`);
    if (!turn.output) throw new Error(`turn ${key} ended without output`);
    return turn.output;
  }

  private readonly steps: Record<Exclude<TurnState, 'done'>, (turn: Turn) => Promise<TurnState>> = {
    restore: async (turn) => {
      const session = await this.deps.sessions.load(turn.key);
      if (session.metadata.pending_user_turn) {
        // The last turn saved its user message but never finished: close it so the transcript stays well-formed.
        if (session.messages.at(-1)?.role === 'user')
          session.messages.push(stamp({ role: 'assistant', content: INTERRUPTED_REPLY }));
        delete session.metadata.pending_user_turn;
        this.log.warn(`session ${turn.key}: the previous turn was interrupted; closed it`);
      }
      turn.session = session;
      return 'command';
    },

    command: async (turn) => {
      const session = required(turn.session);
      const command = turn.input.content.trim().toLowerCase();
      if (command === '/help') {
        turn.output = commandOutput(turn.key, HELP_TEXT);
        return 'done';
      }
      if (command === '/new') {
        if (session.messages.length > 0) await this.archive(session);
        turn.output = commandOutput(turn.key, 'New session started.');
        return 'done';
      }
      return 'build';
    },

    build: async (turn) => {
      const session = required(turn.session);
      const { context } = this.deps;
      const user = context.buildUserMessage(turn.input.content, {
        channel: turn.input.channel,
        chatId: turn.input.chatId,
      });
      const history = session.messages.slice(session.lastConsolidated).map(forModel);
      turn.request = context.buildMessages(history, user);
      session.messages.push(stamp({ ...user }));
      session.metadata.pending_user_turn = true;
      session.metadata.last_channel = `${turn.input.channel}:${turn.input.chatId}`;
      turn.baseLength = session.messages.length;
      await this.deps.sessions.save(session);
      return 'run';
    },

    run: async (turn) => {
      const session = required(turn.session);
      const base = required(turn.baseLength);
      turn.result = await this.deps.runner.run(required(turn.request), {
        ...(turn.options.signal ? { signal: turn.options.signal } : {}),
        ...(turn.options.onEvent ? { onEvent: turn.options.onEvent } : {}),
        toolContext: { sessionKey: turn.key, channel: turn.input.channel, chatId: turn.input.chatId },
        onProgress: async (added) => {
          session.messages.splice(base, Number.POSITIVE_INFINITY, ...added.map(stamp));
          await this.deps.sessions.save(session);
        },
      });
      return 'save';
    },

    save: async (turn) => {
      const session = required(turn.session);
      const result = required(turn.result);
      session.messages.splice(required(turn.baseLength), Number.POSITIVE_INFINITY, ...result.messages.map(stamp));
      delete session.metadata.pending_user_turn;
      await this.deps.sessions.save(session);
      return 'respond';
    },

    respond: async (turn) => {
      const result = required(turn.result);
      turn.output = {
        content: result.content,
        sessionKey: turn.key,
        stopReason: result.stopReason,
        usage: result.usage,
        ...(result.error ? { error: result.error } : {}),
      };
      return 'done';
    },
  };

  /** Moves the conversation to an archive session and leaves the live one empty; nothing is deleted. */
  private async archive(session: Session): Promise<void> {
    const stampText = new Date().toISOString().replace(/[:.]/g, '-');
    const archived = { ...session, key: `${session.key}:archived:${stampText}` };
    await this.deps.sessions.save(archived);
    session.messages = [];
    session.lastConsolidated = 0;
    session.metadata = {};
    await this.deps.sessions.save(session);
  }
}

function required<T>(value: T | undefined): T {
  if (value === undefined) throw new Error('turn state machine: a step ran before the step that sets its input');
  return value;
}

function commandOutput(sessionKey: string, content: string): TurnOutput {
  return { content, sessionKey, stopReason: 'command', usage: { promptTokens: 0, completionTokens: 0 } };
}

/** Marks when a message was recorded (once: a checkpointed message keeps its first stamp). */
function stamp(message: ChatMessage): ChatMessage {
  message.timestamp ??= new Date().toISOString();
  return message;
}

/** Session lines carry a timestamp the model must not see. */
function forModel(message: ChatMessage): ChatMessage {
  const { timestamp: _ignored, ...rest } = message;
  return rest;
}
