/**
 * Sustained goals. `/goal <task>` opens admission; the model records the goal with `create_goal` and ends it with
 * `update_goal` (complete | cancel | block | replace). While the goal is active, a turn does not end when the model
 * gives a final answer: the loop asks `afterRound` and, under the round and token caps, starts another round with a
 * short continuation nudge. The goal lives in `session.metadata.goal_state` (nanobot's key and fields, plus our
 * counters), so a restart keeps it.
 *
 * Goal state is changed on the session object of the running turn (`attach`), never on a second copy: the turn saves
 * that object after every round, and a copy saved meanwhile would be overwritten.
 */
import type { ChatMessage } from '../providers/types.js';
import type { Session, SessionStore } from '../session/types.js';
import type { GoalAction, GoalResult } from '../tools/goal.js';
import type { RunResult } from './runner.js';

// The tools' side of goals owns these two formats (tools/ sits below agent/).
export type { GoalAction, GoalResult };

export const GOAL_STATE_KEY = 'goal_state';
/** nanobot's admission key: `/goal` was used and `create_goal` may run (this turn and the user's next one). */
export const GOAL_ADMISSION_KEY = '_goal_admission_pending';
/** Older nanobot builds stored the goal here. */
const LEGACY_GOAL_KEY = 'thread_goal';
const GOAL_TOOLS = new Set(['create_goal', 'update_goal']);
const NUDGE_MARKER = '[Goal continuation';
const MAX_OBJECTIVE_IN_NUDGE = 4_000;
const ADMISSION_TURNS = 2;

/** `limited` is ours: the goal stopped at its round or token cap and can be resumed with `/goal resume`. */
export type GoalStatus = 'active' | 'completed' | 'cancelled' | 'blocked' | 'limited';

export interface GoalState {
  status: GoalStatus;
  objective: string;
  ui_summary: string;
  started_at: string;
  ended_at?: string;
  recap?: string;
  previous_objective?: string;
  /** Runner rounds the goal has had (the round that created it counts). */
  rounds: number;
  /** Prompt + completion tokens of those rounds. */
  tokens_used: number;
  max_rounds: number;
  max_tokens: number;
}

export interface GoalLimits {
  maxRounds: number;
  maxTokens: number;
}

interface Admission {
  since: string;
  turns_left: number;
  max_rounds?: number;
  max_tokens?: number;
}

/** What the loop does after a round: run another one with `nudge`, or end the turn (with `notice` for the user). */
export interface RoundOutcome {
  nudge?: ChatMessage;
  notice?: string;
}

/** What the loop needs from goals. */
export interface GoalRounds {
  /** Makes `session` the object goal tools change while its turn runs; returns the detach function. */
  attach(session: Session): () => void;
  /** Called after each runner round, before the session is saved; may change the goal's counters and status. */
  afterRound(session: Session, result: RunResult): RoundOutcome;
}

export interface GoalsOptions {
  sessions: SessionStore;
  /** Caps for a new goal (agents.defaults.goalMaxRounds / goalMaxTokens); a function so a reload shows up. */
  limits: () => GoalLimits;
  now?: () => Date;
}

export class Goals implements GoalRounds {
  private readonly live = new Map<string, Session>();
  private readonly now: () => Date;

  constructor(private readonly options: GoalsOptions) {
    this.now = options.now ?? (() => new Date());
  }

  attach(session: Session): () => void {
    this.live.set(session.key, session);
    return () => {
      if (this.live.get(session.key) === session) this.live.delete(session.key);
    };
  }

  /** The session's goal, from the running turn's object when there is one (the freshest state). */
  goalOf(session: Session): GoalState | undefined {
    return this.read(this.live.get(session.key) ?? session);
  }

  /** Lines for /status. */
  status(session: Session): string[] {
    const goal = this.goalOf(session);
    return goal ? describeGoal(goal) : [];
  }

  afterRound(session: Session, result: RunResult): RoundOutcome {
    const goal = this.read(session);
    const touched = result.messages.some((m) => m.tool_calls?.some((c) => GOAL_TOOLS.has(c.function.name)));
    if (goal && (goal.status === 'active' || touched)) {
      goal.rounds += 1;
      goal.tokens_used += result.usage.promptTokens + result.usage.completionTokens;
      writeGoal(session, goal);
    }
    const keepGoing = result.stopReason === 'completed' || result.stopReason === 'max_iterations';
    if (goal?.status !== 'active' || !keepGoing) return this.endTurn(session);
    const cap = reachedCap(goal);
    if (cap) {
      writeGoal(session, { ...goal, status: 'limited', ended_at: this.stamp(), recap: cap });
      return { ...this.endTurn(session), notice: `Goal paused: ${cap} Send /goal resume to continue, or /goal stop.` };
    }
    return { nudge: { role: 'user', content: continuationNudge(goal) } };
  }

  /** `create_goal`: only after `/goal` opened admission in this session. */
  create(sessionKey: string | undefined, objective: string, uiSummary: string | undefined): GoalResult {
    const session = sessionKey ? this.live.get(sessionKey) : undefined;
    if (!session) return { ok: false, error: 'create_goal needs an active chat session.' };
    const admission = readAdmission(session.metadata);
    if (!admission) {
      return {
        ok: false,
        error: 'create_goal is only allowed after the user starts a goal with /goal <task>. Do not infer goals.',
      };
    }
    if (this.read(session)?.status === 'active') {
      return {
        ok: false,
        error: "a goal is already active. Use update_goal with action='replace' only if the user changed it.",
      };
    }
    const text = objective.trim();
    if (!text) return { ok: false, error: 'objective must not be empty.' };
    const limits = this.options.limits();
    writeGoal(session, {
      status: 'active',
      objective: text,
      ui_summary: (uiSummary ?? '').trim().slice(0, 120),
      started_at: this.stamp(),
      rounds: 0,
      tokens_used: 0,
      max_rounds: admission.max_rounds ?? limits.maxRounds,
      max_tokens: admission.max_tokens ?? limits.maxTokens,
    });
    delete session.metadata[GOAL_ADMISSION_KEY];
    return {
      ok: true,
      message:
        'Goal recorded. Keep working toward the objective with your tools. When it is achieved and verified, ' +
        "call update_goal with action='complete' and a short recap.",
    };
  }

  /** `update_goal`. */
  update(
    sessionKey: string | undefined,
    action: GoalAction,
    details: { recap?: string; objective?: string; uiSummary?: string },
  ): GoalResult {
    const session = sessionKey ? this.live.get(sessionKey) : undefined;
    if (!session) return { ok: false, error: 'update_goal needs an active chat session.' };
    const goal = this.read(session);
    if (goal?.status !== 'active') return { ok: true, message: 'No active goal to update.' };
    const recap = (details.recap ?? '').trim();
    if (action === 'replace') {
      const objective = (details.objective ?? '').trim();
      if (!objective) return { ok: false, error: "update_goal action='replace' needs the new objective." };
      writeGoal(session, {
        ...goal,
        objective,
        ui_summary: (details.uiSummary ?? '').trim().slice(0, 120),
        previous_objective: goal.objective,
        recap,
      });
      return { ok: true, message: 'Goal replaced. Continue toward the new objective with your tools.' };
    }
    const status = ({ complete: 'completed', cancel: 'cancelled', block: 'blocked' } as const)[action];
    writeGoal(session, { ...goal, status, ended_at: this.stamp(), recap });
    return { ok: true, message: `Goal marked ${status}.${recap ? ` Recap:\n${recap}` : ''}` };
  }

  /** Ends the session's goal and admission (`/stop`, `/goal stop`); undefined when there was nothing to end. */
  async stop(sessionKey: string): Promise<string | undefined> {
    const live = this.live.get(sessionKey);
    const session = live ?? (await this.options.sessions.load(sessionKey));
    const goal = this.read(session);
    const running = goal && (goal.status === 'active' || goal.status === 'limited') ? goal : undefined;
    const admitted = readAdmission(session.metadata) !== undefined;
    if (!running && !admitted) return undefined;
    delete session.metadata[GOAL_ADMISSION_KEY];
    if (running) {
      writeGoal(session, { ...running, status: 'cancelled', ended_at: this.stamp(), recap: 'Stopped by the user.' });
    }
    await this.options.sessions.save(session);
    return running ? 'Goal cancelled.' : 'Goal request withdrawn.';
  }

  /** Metadata that opens admission for the turn `/goal <task>` starts; undefined caps use the configured ones. */
  admission(caps: Partial<GoalLimits>): Record<string, unknown> {
    const admission: Admission = {
      since: this.stamp(),
      turns_left: ADMISSION_TURNS,
      ...(caps.maxRounds !== undefined ? { max_rounds: caps.maxRounds } : {}),
      ...(caps.maxTokens !== undefined ? { max_tokens: caps.maxTokens } : {}),
    };
    return { [GOAL_ADMISSION_KEY]: admission };
  }

  /** The goal made active again with fresh allowances (`/goal resume`), or undefined when there is none to resume. */
  resumed(session: Session, caps: Partial<GoalLimits>): GoalState | undefined {
    const goal = this.goalOf(session);
    if (!goal || (goal.status !== 'limited' && goal.status !== 'blocked' && goal.status !== 'active')) return undefined;
    const limits = { ...this.options.limits(), ...caps };
    const { ended_at: _ended, recap: _recap, ...rest } = goal;
    return {
      ...rest,
      status: 'active',
      max_rounds: goal.rounds + limits.maxRounds,
      max_tokens: goal.tokens_used + limits.maxTokens,
    };
  }

  private endTurn(session: Session): RoundOutcome {
    const admission = readAdmission(session.metadata);
    if (admission) {
      if (admission.turns_left <= 1) delete session.metadata[GOAL_ADMISSION_KEY];
      else session.metadata[GOAL_ADMISSION_KEY] = { ...admission, turns_left: admission.turns_left - 1 };
    }
    return {};
  }

  private read(session: Session): GoalState | undefined {
    return readGoal(session.metadata, this.options.limits());
  }

  private stamp(): string {
    return this.now().toISOString();
  }
}

/**
 * The session's goal, read leniently (nanobot may have stored it as a JSON string or under the legacy key).
 * A goal without caps (nanobot writes none) gets `fallback`'s, or none at all.
 */
export function readGoal(metadata: Record<string, unknown>, fallback?: GoalLimits): GoalState | undefined {
  let raw = metadata[GOAL_STATE_KEY] ?? metadata[LEGACY_GOAL_KEY];
  if (typeof raw === 'string') {
    try {
      raw = JSON.parse(raw);
    } catch {
      return undefined;
    }
  }
  if (typeof raw !== 'object' || raw === null) return undefined;
  const blob = raw as Record<string, unknown>;
  const text = (key: string) => (typeof blob[key] === 'string' ? (blob[key] as string) : undefined);
  const count = (key: string, fallback: number) => {
    const value = blob[key];
    return typeof value === 'number' && Number.isFinite(value) && value >= 0 ? value : fallback;
  };
  const status = text('status');
  if (!status || !['active', 'completed', 'cancelled', 'blocked', 'limited'].includes(status)) return undefined;
  return {
    ...blob,
    status: status as GoalStatus,
    objective: text('objective') ?? '',
    ui_summary: text('ui_summary') ?? '',
    started_at: text('started_at') ?? '',
    rounds: count('rounds', 0),
    tokens_used: count('tokens_used', 0),
    max_rounds: count('max_rounds', fallback?.maxRounds ?? Number.POSITIVE_INFINITY),
    max_tokens: count('max_tokens', fallback?.maxTokens ?? Number.POSITIVE_INFINITY),
  };
}

function writeGoal(session: Session, goal: GoalState): void {
  session.metadata[GOAL_STATE_KEY] = goal;
  delete session.metadata[LEGACY_GOAL_KEY];
}

function readAdmission(metadata: Record<string, unknown>): Admission | undefined {
  const raw = metadata[GOAL_ADMISSION_KEY];
  if (typeof raw !== 'object' || raw === null) return undefined;
  const blob = raw as Partial<Admission>;
  const positive = (value: unknown) => (typeof value === 'number' && value > 0 ? value : undefined);
  const maxRounds = positive(blob.max_rounds);
  const maxTokens = positive(blob.max_tokens);
  return {
    since: typeof blob.since === 'string' ? blob.since : '',
    turns_left: positive(blob.turns_left) ?? 1,
    ...(maxRounds !== undefined ? { max_rounds: maxRounds } : {}),
    ...(maxTokens !== undefined ? { max_tokens: maxTokens } : {}),
  };
}

/** Why the goal may not have another round, or undefined when it may. */
function reachedCap(goal: GoalState): string | undefined {
  if (goal.rounds >= goal.max_rounds) return `it reached its limit of ${goal.max_rounds} rounds.`;
  if (goal.tokens_used >= goal.max_tokens) {
    return `it used ${formatCount(goal.tokens_used)} tokens, over its limit of ${formatCount(goal.max_tokens)}.`;
  }
  return undefined;
}

export function continuationNudge(goal: GoalState): string {
  const objective =
    goal.objective.length > MAX_OBJECTIVE_IN_NUDGE
      ? `${goal.objective.slice(0, MAX_OBJECTIVE_IN_NUDGE)}… (truncated)`
      : goal.objective;
  const of = Number.isFinite(goal.max_rounds) ? ` of ${goal.max_rounds}` : '';
  return (
    `${NUDGE_MARKER} — round ${goal.rounds + 1}${of}]\nObjective: ${objective}\n\n` +
    'You have an active sustained goal. Continue working toward it with your tools. When it is achieved and ' +
    "verified, call update_goal with action='complete' and a short recap; if you cannot make progress without the " +
    "user, call update_goal with action='block' and say what you need."
  );
}

/** True for the loop's own continuation message (kept out of /history). */
export function isGoalNudge(text: string): boolean {
  return text.startsWith(NUDGE_MARKER);
}

/** One line per fact, for `/goal` and `/status`. */
export function describeGoal(goal: GoalState): string[] {
  const title = goal.ui_summary || shorten(goal.objective, 120);
  const rounds = Number.isFinite(goal.max_rounds) ? `${goal.rounds} of ${goal.max_rounds}` : `${goal.rounds}`;
  const tokens = Number.isFinite(goal.max_tokens)
    ? `${formatCount(goal.tokens_used)} of ${formatCount(goal.max_tokens)}`
    : formatCount(goal.tokens_used);
  const lines = [`Goal (${goal.status}): ${title}`, `Goal progress: ${rounds} rounds, ${tokens} tokens`];
  if (goal.recap && goal.status !== 'active') lines.push(`Goal recap: ${shorten(goal.recap, 300)}`);
  return lines;
}

function shorten(text: string, max: number): string {
  const oneLine = text.replace(/\s+/g, ' ').trim();
  return oneLine.length <= max ? oneLine : `${oneLine.slice(0, max - 1)}…`;
}

function formatCount(n: number): string {
  return n.toLocaleString('en-US');
}
