/** Shapes shared by the command router, the built-in commands and the loop, and the `SlashCommand` adapter. */
import type { ModelSettings } from '../../config/model.js';
import type { Session, SessionStore, SessionWork } from '../../session/types.js';

export type { SessionWork };

/**
 * When a command runs. `priority` runs at once, even while a turn of the session is running (it must not wait
 * behind it); `exact` (no arguments) and `prefix` (a command word followed by arguments) run in the session's
 * order, after any running turn, with the session loaded.
 */
export type CommandTier = 'priority' | 'exact' | 'prefix';

/** The models a session can use: the configured one and the named presets. */
export interface ModelCatalog {
  /** agents.defaults with agents.defaults.modelPreset applied. */
  default: ModelSettings;
  /** modelPresets by name, each already overlaid on the defaults (`effectiveModel(config, name)`). */
  presets: Record<string, ModelSettings>;
}

/** What the loop lets commands see and do. */
export interface LoopRuntime {
  isTurnActive(sessionKey: string): boolean;
  /** Cancels the session's running turn; false when none was running. */
  stopTurn(sessionKey: string): boolean;
  /** Moves the conversation to an archive session and empties the live one. */
  archive(session: Session): Promise<void>;
  /** Estimated tokens the next request of this session would send (system prompt, tools, history). */
  contextTokens(session: Session): number;
  /** The catalog, when the loop was given one. */
  models(): ModelCatalog | undefined;
  /** Restarts the process (gateway only); absent where a restart makes no sense. */
  restart: (() => void | Promise<void>) | undefined;
  /** The session work the loop was given (subagents, goals). */
  work: readonly SessionWork[];
}

export interface CommandContext {
  /** The command word, normalised: lower case, `@botname` removed (`/model`). */
  name: string;
  /** The text after the command word, trimmed ('' when none). */
  args: string;
  sessionKey: string;
  channel: string;
  chatId: string;
  sessions: SessionStore;
  /**
   * The session. For `exact`/`prefix` commands it is the turn's own object: change it and `sessions.save` it.
   * Priority commands get a fresh read (a turn may be running): treat it as read-only.
   */
  session(): Promise<Session>;
  runtime: LoopRuntime;
}

export interface Command {
  /** With the slash: `/status`. */
  name: string;
  description: string;
  /** Shown in /help when the command takes arguments: `/history [n]`. */
  usage?: string;
  tier: CommandTier;
  /** Returns the reply for the user, or a model turn to run in its place. */
  run(ctx: CommandContext): Promise<CommandResult> | CommandResult;
}

/**
 * A command that starts a model turn instead of replying (`/goal <task>`): the turn runs in the session's order with
 * `content` as the user message, and `metadata` is merged into the session's metadata when it starts.
 */
export interface CommandTurn {
  turn: string;
  metadata?: Record<string, unknown>;
}

export type CommandResult = string | CommandTurn;

/** A slash command beyond the built-ins (e.g. `/dream`): gets the text after the command, returns the reply. */
export interface SlashCommand {
  description: string;
  /** Shown in /help instead of the bare name: `/dream-log [sha]`. */
  usage?: string;
  /** Defaults to `prefix`: runs in the session's order and receives arguments. */
  tier?: CommandTier;
  run(args: string, sessionKey: string): Promise<string>;
}

/** Adapts a `deps.commands` entry to the router's shape. */
export function fromSlashCommand(name: string, extra: SlashCommand): Command {
  return {
    name,
    description: extra.description,
    ...(extra.usage ? { usage: extra.usage } : {}),
    tier: extra.tier ?? 'prefix',
    run: (ctx) => extra.run(ctx.args, ctx.sessionKey),
  };
}
