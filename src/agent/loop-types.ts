/** The agent loop's types: what it is built from, what a turn takes and gives, and the state it keeps per turn. */
import type { Consolidator } from '../memory/consolidator.js';
import type { ChatMessage, ProviderError, ToolDefinition, Usage } from '../providers/types.js';
import type { Session, SessionStore } from '../session/types.js';
import type { Logger } from '../util/log.js';
import type { Command, CommandTurn, ModelCatalog, SessionWork, SlashCommand } from './commands/types.js';
import type { ContextBuilder } from './context.js';
import type { GoalRounds } from './goals.js';
import type { AgentRunner, RunnerEvent, RunResult, StopReason } from './runner.js';

export interface TurnInput {
  channel: string;
  chatId: string;
  content: string;
  /** Local paths of files that came with the message (a chat channel saved them); images reach the model inline. */
  media?: string[];
  /** Overrides the default `channel:chat_id` key. */
  sessionKey?: string;
  /** The platform thread the message came from (Slack, Discord, Feishu topics): `message` sends go back into it. */
  threadId?: string;
  /** A `modelPresets` name for this turn only (a cron job's own model), over the session's `/model` choice. */
  modelPreset?: string;
}

export interface TurnOutput {
  content: string;
  sessionKey: string;
  stopReason: StopReason | 'command';
  usage: Usage;
  error?: ProviderError;
  /** This message arrived while a turn was running and was answered by that turn (do not deliver twice). */
  injected?: boolean;
  /** With `trackDelivery`: the saved answer to report as delivered once the chat took it. */
  delivery?: { index: number; timestamp: string };
}

export interface TurnOptions {
  signal?: AbortSignal;
  onEvent?: (event: RunnerEvent) => void;
  /** Save the answer marked "to be delivered" (session/delivery.ts): a chat surface that delivers it later. */
  trackDelivery?: boolean;
}

export type TurnState = 'restore' | 'command' | 'build' | 'run' | 'save' | 'respond' | 'done';

export interface Turn {
  input: TurnInput;
  options: TurnOptions;
  key: string;
  state: TurnState;
  signal: AbortSignal;
  session?: Session;
  /** Messages sent to the model (system + history + the new user message). */
  request?: ChatMessage[];
  /** How many of the run's messages are already in `session.messages`. */
  saved: number;
  /** Tokens of the request that are not history: system prompt, tool definitions, the new message. */
  fixedTokens?: number;
  result?: RunResult;
  /** The user message as the model sees it, and where the session keeps it (for a retry after an overflow). */
  user?: { message: ChatMessage; index: number };
  overflowRetried?: boolean;
  /** The saved answer awaiting delivery (with `trackDelivery`). */
  delivery?: { index: number; timestamp: string };
  /** Earlier runner rounds of this turn (a goal continues after a final answer). */
  earlierRounds: RunResult[];
  /** Set when a command turned this message into a model turn: no command matching, this metadata at the start. */
  directive?: CommandTurn;
  /** Said after the answer (e.g. why a goal stopped). */
  notice?: string;
  detachGoal?: () => void;
  /** Model requests made since usage was last recorded, for the session's token_stats. */
  llmCalls: number;
  output?: TurnOutput;
  trace: { state: TurnState; ms: number }[];
}

/** A running turn, reachable by later messages of the same session (`/stop`, mid-turn injection). */
export interface ActiveTurn {
  controller: AbortController;
  queued: {
    input: TurnInput;
    options: TurnOptions;
    resolve: (output: TurnOutput) => void;
    reject: (reason: unknown) => void;
  }[];
  /** Messages taken into this turn: answered by its reply, failed with its error. */
  injected: { resolve: (output: TurnOutput) => void; reject: (reason: unknown) => void }[];
}

export interface AgentLoopDeps {
  sessions: SessionStore;
  context: ContextBuilder;
  runner: AgentRunner;
  log?: Logger;
  /** Extra commands by name, including the slash (`/dream`); they join the built-ins in the router and /help. */
  commands?: Record<string, SlashCommand>;
  /** The runner of a model preset, for sessions switched with `/model <preset>`; should cache (memoizeByPreset). */
  runnerFor?: (preset: string) => AgentRunner;
  /** The default model and the presets, for /model and /status (a function, so a config reload shows up). */
  models?: () => ModelCatalog;
  /**
   * Restarts the process (`/restart`; the gateway passes one). Return before restarting (e.g. schedule it on a
   * timer) so the "Restarting…" reply can be delivered; without it, /restart says it needs the gateway.
   */
  restart?: () => void | Promise<void>;
  /** Keeps the model-visible history inside the context window by summarising the oldest part into history.jsonl. */
  consolidator?: Consolidator;
  /** The tool definitions sent with each request (their size counts against the context window). */
  toolDefinitions?: () => ToolDefinition[];
  /** Commands that need the loop's context (e.g. /goal); they join the built-ins. */
  sessionCommands?: Command[];
  /** Sustained goals: a turn goes on, round after round, while its session's goal is active. */
  goals?: GoalRounds;
  /** What sessions run beyond one reply (subagents, goals): /stop ends it, /status reports it. */
  work?: SessionWork[];
  /** Told each finished turn's usage (the WebUI's usage-per-day file); a failure is logged, never the turn's. */
  onUsage?: (sessionKey: string, usage: Usage, llmCalls: number) => Promise<void>;
}
