/**
 * nanobot's turn lifecycle on the wire: which turn a frame belongs to, and the frames around a turn that its WebUI
 * and TUI follow. A client names a turn with `turn_id` on its `message`; the id rides the turn's bus messages as
 * nanobot's `webui_turn_id` metadata, and every frame of the turn carries it back. Around the agent's own frames:
 *
 *   message_accepted → goal_status running → turn_model_updated → (delta… stream_end, message …) → turn_end →
 *   session_updated (to every connection) → goal_status idle
 *
 * A message sent while a turn of its chat runs is folded into that turn (or runs right after it, when it came too
 * late), so, as nanobot says, it does not start a turn: `starts_turn: false`, `active_turn_id` = the running turn.
 * When it does run on its own, its `goal_status running` says so and it owns the chat from then on.
 *
 * A client that attaches while a turn runs (a second terminal, a reload) gets that turn's `goal_status running`
 * again, with the turn's id and start (nanobot replays it on subscribe), and a `message_accepted` beside a running
 * turn carries its `started_at`: the client shows the turn as running, timed from its real start.
 */
import type { OutboundMessage } from '../../bus/types.js';
import { META } from '../metadata.js';
import type { GoalStateBlob, ServerFrame } from './frames.js';

/** nanobot's metadata key for the client's turn id. */
export const WEBUI_TURN_ID = 'webui_turn_id';
/** Accepted turns remembered per chat (a client that floods is not tracked past this). */
const MAX_OPEN_TURNS = 64;

export interface TurnModel {
  model: string;
  contextWindowTokens?: number;
}

/** One frame for one outbound message, in order: to the chat's followers, or to every connection. */
export interface Addressed {
  frame: ServerFrame;
  everyone?: true;
}

export class TurnLifecycle {
  /** Per chat, the turns accepted and not ended yet, oldest (the running one) first. */
  private readonly open = new Map<string, string[]>();
  /** Per chat, when its running turn started (epoch seconds, nanobot's `started_at` / `run_started_at`). */
  private readonly starts = new Map<string, number>();
  private lastModel?: string;

  constructor(private readonly now: () => number = Date.now) {}

  /** A message with `turnId` was taken for `chatId`; `startsTurn` false for commands like `/stop`. */
  accept(chatId: string, turnId: string, command: boolean): Extract<ServerFrame, { event: 'message_accepted' }> {
    const running = this.open.get(chatId)?.[0];
    const starts = running === undefined && !command;
    if (starts) this.open.set(chatId, [turnId]);
    const active = running ?? (starts ? turnId : undefined);
    // Beside a running turn, its start too: the client times the turn from when it really began.
    const since = running !== undefined ? this.starts.get(chatId) : undefined;
    return {
      event: 'message_accepted',
      chat_id: chatId,
      turn_id: turnId,
      starts_turn: starts,
      ...(active !== undefined ? { active_turn_id: active } : {}),
      ...(since !== undefined ? { started_at: since } : {}),
    };
  }

  /** When the chat's running turn started (epoch seconds), while one runs. */
  startedAt(chatId: string): number | undefined {
    return this.starts.get(chatId);
  }

  /** The turn that owns the chat now (running, or accepted and next), if one is known. */
  activeTurn(chatId: string): string | undefined {
    return this.open.get(chatId)?.[0];
  }

  /**
   * The frames for `message`: `frames` (what the agent said, from framesFor) tagged with the turn, plus the
   * lifecycle frames its start or end brings. `model` is read only when a turn starts.
   */
  frames(
    message: OutboundMessage,
    frames: ServerFrame[],
    model: () => TurnModel | undefined,
    /** The chat's goal after the turn, carried by its `turn_end`. */
    goal?: GoalStateBlob,
  ): Addressed[] {
    const meta = message.metadata ?? {};
    const turnId = typeof meta[WEBUI_TURN_ID] === 'string' ? meta[WEBUI_TURN_ID] : undefined;
    const tag = turnId ? { turn_id: turnId } : {};
    const chat_id = message.chatId;
    if (meta[META.turnStart] === true) {
      if (turnId) this.running(chat_id, turnId);
      return this.started(chat_id, tag, model());
    }
    const out: Addressed[] = frames.map((frame) => {
      const tagged = turnId && 'chat_id' in frame ? { ...frame, ...tag } : frame;
      return { frame: goal && tagged.event === 'turn_end' ? { ...tagged, goal_state: goal } : tagged };
    });
    if (meta[META.turnEnd] === true) {
      this.ended(chat_id, turnId);
      out.push({ frame: { event: 'session_updated', chat_id, scope: 'thread' }, everyone: true });
      out.push({ frame: { event: 'goal_status', chat_id, status: 'idle', ...tag } });
    }
    return out;
  }

  private started(chat_id: string, tag: { turn_id?: string }, model: TurnModel | undefined): Addressed[] {
    const out: Addressed[] = [];
    if (model?.model && this.lastModel !== undefined && this.lastModel !== model.model) {
      out.push({ frame: { event: 'runtime_model_updated', model_name: model.model }, everyone: true });
    }
    const startedAt = this.now() / 1000;
    if (!this.starts.has(chat_id)) this.starts.set(chat_id, startedAt);
    out.push({ frame: { event: 'goal_status', chat_id, status: 'running', started_at: startedAt, ...tag } });
    if (model?.model) {
      this.lastModel = model.model;
      const window = model.contextWindowTokens ? { context_window_tokens: model.contextWindowTokens } : {};
      out.push({ frame: { event: 'turn_model_updated', chat_id, model_name: model.model, ...window } });
    }
    return out;
  }

  /** A turn runs now: it owns the chat (after the one it waited for, if that has not ended yet). */
  private running(chatId: string, turnId: string): void {
    const turns = this.open.get(chatId) ?? [];
    if (turns.includes(turnId) || turns.length >= MAX_OPEN_TURNS) return;
    turns.push(turnId);
    this.open.set(chatId, turns);
  }

  private ended(chatId: string, turnId: string | undefined): void {
    // The next queued turn, if any, starts its own clock with its own `goal_status running`.
    this.starts.delete(chatId);
    const turns = this.open.get(chatId);
    if (!turns) return;
    const index = turnId === undefined ? -1 : turns.indexOf(turnId);
    if (index >= 0) turns.splice(index, 1);
    if (turns.length === 0) this.open.delete(chatId);
  }
}
