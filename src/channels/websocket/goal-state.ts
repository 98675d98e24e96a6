/**
 * nanobot's `goal_state` snapshot of a chat's sustained goal (session/goal_state.py `goal_state_ws_blob`): what its
 * WebUI shows in the goal strip. Sent with every `turn_end`, and on `attach` while a goal is active or blocked, so
 * a reload shows the strip without a new turn.
 */
import { GOAL_STATE_KEY } from '../../agent/goals.js';
import type { GoalStateBlob } from './frames.js';

export type { GoalStateBlob };

/** Older nanobot builds kept the goal here. */
const LEGACY_KEY = 'thread_goal';
const MAX_OBJECTIVE = 600;
const MAX_SUMMARY = 120;
const MAX_RECAP = 240;

export function goalStateBlob(metadata: Readonly<Record<string, unknown>>): GoalStateBlob {
  const raw = GOAL_STATE_KEY in metadata ? metadata[GOAL_STATE_KEY] : metadata[LEGACY_KEY];
  if (typeof raw !== 'object' || raw === null) return { active: false };
  const goal = raw as Record<string, unknown>;
  if (goal.status !== 'active' && goal.status !== 'blocked') return { active: false };
  const text = (value: unknown) => (typeof value === 'string' ? value.trim() : '');
  let objective = text(goal.objective);
  if (objective.length > MAX_OBJECTIVE) objective = `${objective.slice(0, MAX_OBJECTIVE).trimEnd()}…`;
  const summary = text(goal.ui_summary).slice(0, MAX_SUMMARY);
  const recap = text(goal.recap).slice(0, MAX_RECAP);
  return {
    active: goal.status === 'active',
    status: goal.status,
    ...(summary ? { ui_summary: summary } : {}),
    ...(objective ? { objective } : {}),
    ...(recap ? { recap } : {}),
  };
}

/** Worth pushing on attach: a goal the user can see working or waiting. */
export function goalShown(blob: GoalStateBlob): boolean {
  return blob.active || blob.status === 'blocked';
}
