/**
 * /goal: `/goal <task>` starts a sustained goal (a model turn that records it with create_goal and keeps going
 * round after round), `/goal` shows it, `/goal stop` ends it, `/goal resume` continues one that hit its cap.
 * Priority tier, so showing and stopping answer at once while the goal's turn runs; starting and resuming queue a turn.
 */
import { continuationNudge, describeGoal, GOAL_STATE_KEY, type GoalLimits, type Goals } from '../goals.js';
import type { Command } from './types.js';

const USAGE = 'Usage: /goal [--rounds N] [--tokens N] <task> | /goal | /goal stop | /goal resume';

export function goalCommand(goals: Goals): Command {
  return {
    name: '/goal',
    usage: '/goal [<task>|stop|resume]',
    description: 'work on a task round after round until it is done (--rounds N, --tokens N cap it); /goal shows it',
    tier: 'priority',
    async run(ctx) {
      const parsed = parseGoalArgs(ctx.args);
      if ('error' in parsed) return `${parsed.error}\n${USAGE}`;
      const { caps, rest } = parsed;
      const session = await ctx.session();
      const goal = goals.goalOf(session);

      if (rest === '') {
        if (Object.keys(caps).length > 0) return `Give the task after the flags.\n${USAGE}`;
        if (!goal) return 'No goal in this conversation. Start one with /goal <task>.';
        const hint =
          goal.status === 'active'
            ? 'End it with /goal stop.'
            : goal.status === 'limited' || goal.status === 'blocked'
              ? 'Continue with /goal resume, or end it with /goal stop.'
              : 'Start another with /goal <task>.';
        return [...describeGoal(goal), `Objective: ${goal.objective}`, hint].join('\n');
      }

      if (rest.toLowerCase() === 'stop') {
        return (await goals.stop(ctx.sessionKey)) ?? 'No active goal to stop.';
      }

      if (rest.toLowerCase() === 'resume') {
        if (goal?.status === 'active' && ctx.runtime.isTurnActive(ctx.sessionKey))
          return 'The goal is already running.';
        const resumed = goals.resumed(session, caps);
        if (!resumed) return 'No goal to resume. Start one with /goal <task>.';
        return { turn: continuationNudge(resumed), metadata: { [GOAL_STATE_KEY]: resumed } };
      }

      if (goal?.status === 'active') {
        return `A goal is already active: ${describeGoal(goal)[0] ?? ''}\nEnd it with /goal stop before starting another.`;
      }
      return { turn: goalRequest(rest), metadata: goals.admission(caps) };
    },
  };
}

/** Leading `--rounds N` / `--tokens N` flags, then the rest of the text. */
export function parseGoalArgs(args: string): { caps: Partial<GoalLimits>; rest: string } | { error: string } {
  const caps: Partial<GoalLimits> = {};
  let rest = args.trim();
  for (;;) {
    const flag = /^--(max-)?(rounds|tokens)(?:=|\s+)(\S+)\s*/i.exec(rest);
    if (!flag) break;
    const value = Number(flag[3]);
    if (!Number.isInteger(value) || value < 1) return { error: `--${flag[2]} needs a whole number above 0.` };
    if (flag[2]?.toLowerCase() === 'rounds') caps.maxRounds = value;
    else caps.maxTokens = value;
    rest = rest.slice(flag[0].length);
  }
  if (rest.startsWith('--')) return { error: `Unknown flag ${rest.split(/\s/, 1)[0]}.` };
  return { caps, rest: rest.trim() };
}

/** The user message of a `/goal <task>` turn. It starts with `[` so it is never read as a command. */
function goalRequest(task: string): string {
  return (
    `[Goal request] The user started a sustained goal with /goal:\n\n${task}\n\n` +
    'Record it now with create_goal: one self-contained objective that states the end state, what is in scope and ' +
    'how to verify it is done (anything recurring belongs to the cron tool, not to the goal). If something essential ' +
    'is missing, ask one short question instead. Then work toward it with your tools; you will be asked to continue ' +
    "round after round until you call update_goal with action 'complete' (or 'block' or 'cancel')."
  );
}
