/**
 * spawn: hands a task to a subagent — a separate model run with its own, smaller toolbox (files, search, shell,
 * web; no messaging, no spawning, no cron). In the background by default: the result comes back into this
 * conversation as a follow-up the model sees; `wait: true` runs it now and returns the result as the tool result.
 */
import { z } from 'zod';
import { defineTool, fail, type ToolResult } from './types.js';

/** Where a subagent reports back: the session (and chat) of the turn that spawned it. */
export interface SpawnOrigin {
  sessionKey: string;
  channel: string;
  chatId: string;
}

export interface SpawnRequest {
  task: string;
  label?: string;
  temperature?: number;
  wait: boolean;
  origin: SpawnOrigin;
  /** The spawning turn's signal: cancels a `wait: true` subagent with its turn. */
  signal: AbortSignal;
}

/** What the tool needs (SubagentManager in src/agent/subagents.ts). */
export interface Spawner {
  spawn(request: SpawnRequest): Promise<ToolResult>;
}

const parameters = z.object({
  task: z
    .string()
    .min(1)
    .describe(
      'The complete task for the subagent. It sees nothing of this conversation, so include every detail it needs ' +
        '(paths, names, what to produce and where).',
    ),
  label: z.string().max(60).optional().describe('A short name for the task, shown in /status and in its report.'),
  temperature: z.number().min(0).max(2).optional().describe('Sampling temperature for the subagent (optional).'),
  wait: z
    .boolean()
    .optional()
    .describe('true: run it now and get the result as this tool result. false (default): run it in the background.'),
});

export function createSpawnTool(spawner: Spawner) {
  return defineTool({
    name: 'spawn',
    description:
      'Start a subagent for a self-contained task (research, a long file or shell job). It works with file, ' +
      'search, shell and web tools but cannot message the user. By default it runs in the background and its ' +
      'result arrives in this conversation later (do not poll or wait for it); set wait to true to get the ' +
      'result now.',
    parameters,
    async execute(args, ctx) {
      const channel = ctx.channel ?? 'cli';
      const chatId = ctx.chatId ?? 'direct';
      const sessionKey = ctx.sessionKey ?? `${channel}:${chatId}`;
      if (sessionKey.startsWith('subagent:')) return fail('a subagent cannot start another subagent.');
      return spawner.spawn({
        task: args.task,
        ...(args.label ? { label: args.label } : {}),
        ...(args.temperature !== undefined ? { temperature: args.temperature } : {}),
        wait: args.wait ?? false,
        origin: { sessionKey, channel, chatId },
        signal: ctx.signal,
      });
    },
  });
}
