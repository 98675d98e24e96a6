/**
 * create_goal / update_goal: the model's side of sustained goals (nanobot's names and arguments). Both are always
 * in the tool list, so the cached prompt prefix never changes; whether a call is allowed is decided when it runs:
 * create_goal only after the user typed `/goal <task>`, update_goal only while a goal is active.
 */
import { z } from 'zod';
import { defineTool, fail, ok, type ToolResult } from './types.js';

export type GoalAction = 'complete' | 'cancel' | 'block' | 'replace';
export type GoalResult = { ok: true; message: string } | { ok: false; error: string };

/** What the tools need (Goals in src/agent/goals.ts implements it). */
export interface GoalService {
  create(sessionKey: string | undefined, objective: string, uiSummary: string | undefined): GoalResult;
  update(
    sessionKey: string | undefined,
    action: GoalAction,
    details: { recap?: string; objective?: string; uiSummary?: string },
  ): GoalResult;
}

const createParameters = z.object({
  objective: z
    .string()
    .min(1)
    .max(12_000)
    .describe(
      'The sustained objective: self-contained (paths, names, counts it depends on), bounded, safe to resume, ' +
        'and explicit about how to tell it is done.',
    ),
  ui_summary: z.string().max(120).nullish().describe('Optional one-line label for status displays.'),
});

const updateParameters = z.object({
  action: z.enum(['complete', 'cancel', 'block', 'replace']).describe('How to update the active goal.'),
  recap: z
    .string()
    .max(8_000)
    .nullish()
    .describe('A short, honest recap for the user (expected for complete, cancel and block).'),
  objective: z.string().max(12_000).nullish().describe("The new objective; only for action 'replace'."),
  ui_summary: z.string().max(120).nullish().describe('Optional one-line label for a replacement goal.'),
});

export function createGoalTools(goals: GoalService) {
  const createGoal = defineTool({
    name: 'create_goal',
    description:
      'Record a sustained goal, only when the user started one with /goal. The runtime then keeps you working on ' +
      'it round after round until you call update_goal. Never infer goals from ordinary requests.',
    parameters: createParameters,
    async execute(args, ctx) {
      return toToolResult(goals.create(ctx.sessionKey, args.objective, args.ui_summary ?? undefined));
    },
  });
  const updateGoal = defineTool({
    name: 'update_goal',
    description:
      "Update the active sustained goal: 'complete' only once the objective is achieved and verified, 'cancel' " +
      "when the user cancels, 'block' when progress is genuinely blocked, 'replace' only when the user changes " +
      'the objective.',
    parameters: updateParameters,
    async execute(args, ctx) {
      return toToolResult(
        goals.update(ctx.sessionKey, args.action, {
          ...(args.recap ? { recap: args.recap } : {}),
          ...(args.objective ? { objective: args.objective } : {}),
          ...(args.ui_summary ? { uiSummary: args.ui_summary } : {}),
        }),
      );
    },
  });
  return [createGoal, updateGoal];
}

function toToolResult(result: GoalResult): ToolResult {
  return result.ok ? ok(result.message) : fail(result.error);
}
