/**
 * The heartbeat's notification gate: after a heartbeat turn, one model call decides whether its result is worth a
 * message, by calling the `evaluate_notification` tool (nanobot's contract, so a workspace's `prompts/evaluator.md`
 * written for nanobot works here). The file replaces the gate's system prompt; missing or empty means the built-in
 * one. A prompt that does not lead to the tool call fails closed: nothing is sent.
 */
import type { ToolDefinition } from '../providers/types.js';
import { WorkspaceFs } from '../security/workspace-fs.js';

export const EVALUATOR_PROMPT_PATH = 'prompts/evaluator.md';
/** nanobot's cap on a workspace prompt override. */
export const WORKSPACE_PROMPT_MAX_CHARS = 32_000;

export const DEFAULT_EVALUATOR_PROMPT = `You are the notification gate of a personal AI assistant. A background check (the heartbeat) just ran a task the user set up, and you decide whether its result deserves a message to the user right now.

Notify when the result holds something new the user would want to know or act on: an alert, a change, a deadline, a finding, an error that needs them.
Stay silent for routine status, "all clear", "nothing to report", repeats of what they already know, or results with nothing actionable.

Always answer by calling the evaluate_notification tool exactly once, with should_notify true or false and a one-sentence reason.`;

export const EVALUATE_NOTIFICATION_TOOL: ToolDefinition = {
  type: 'function',
  function: {
    name: 'evaluate_notification',
    description: 'Decide whether the user should be notified about this background task result.',
    parameters: {
      type: 'object',
      properties: {
        should_notify: {
          type: 'boolean',
          description: 'true: the result has important or actionable news for the user; false: routine, safe to skip',
        },
        reason: { type: 'string', description: 'One sentence saying why' },
      },
      required: ['should_notify'],
    },
  },
};

/**
 * A workspace prompt override (`prompts/<name>.md`) as nanobot reads one: trailing whitespace trimmed, capped, and
 * undefined when missing, empty or unreadable. Read through the workspace-file layer: a link out of the workspace,
 * a FIFO or a huge file counts as missing.
 */
export async function readWorkspacePrompt(workspace: string, path: string): Promise<string | undefined> {
  const text = await new WorkspaceFs(workspace)
    .readText(path, { maxBytes: 4 * WORKSPACE_PROMPT_MAX_CHARS })
    .catch(() => '');
  const trimmed = text.trimEnd();
  return trimmed.trim() ? trimmed.slice(0, WORKSPACE_PROMPT_MAX_CHARS) : undefined;
}

/** The gate's system prompt in effect for this workspace. */
export async function evaluatorPrompt(workspace: string): Promise<string> {
  return (await readWorkspacePrompt(workspace, EVALUATOR_PROMPT_PATH)) ?? DEFAULT_EVALUATOR_PROMPT;
}
