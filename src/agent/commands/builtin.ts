/** The built-in commands: /new, /stop, /restart, /status, /help (and /model, /history from their own files). */
import { historyCommand } from './history.js';
import { modelCommand, modelForSession, sessionPreset } from './model.js';
import type { CommandRouter } from './router.js';
import { tokenStats } from './token-stats.js';
import type { Command } from './types.js';

export const newCommand: Command = {
  name: '/new',
  description: 'start a new conversation (the old one is kept on disk)',
  tier: 'exact',
  async run(ctx) {
    const session = await ctx.session();
    if (session.messages.length > 0) await ctx.runtime.archive(session);
    return 'New session started.';
  },
};

export const stopCommand: Command = {
  name: '/stop',
  description: 'cancel the running turn, its subagents and its goal (what they finished is kept)',
  tier: 'priority',
  async run(ctx) {
    // Session work first: a goal must be ended before the aborted turn decides whether to go on.
    const stopping = ctx.runtime.work.map((work) => work.stop(ctx.sessionKey));
    const stoppedTurn = ctx.runtime.stopTurn(ctx.sessionKey);
    const ended = (await Promise.all(stopping)).filter((line): line is string => line !== undefined);
    if (!stoppedTurn && ended.length === 0) return 'No active task to stop.';
    return [stoppedTurn ? 'Stopped. What was already done is kept.' : 'Stopped.', ...ended].join(' ');
  },
};

export const restartCommand: Command = {
  name: '/restart',
  description: 'restart the gateway process',
  tier: 'priority',
  async run(ctx) {
    const { restart } = ctx.runtime;
    if (!restart) return 'Restart is only available when running as the gateway (`nanobot gateway`).';
    await restart();
    return 'Restarting…';
  },
};

export const statusCommand: Command = {
  name: '/status',
  description: 'model, context use, tokens used and prompt-cache hits of this conversation',
  tier: 'priority',
  async run(ctx) {
    const session = await ctx.session();
    const catalog = ctx.runtime.models();
    const lines: string[] = [];
    if (catalog) {
      const model = modelForSession(catalog, session);
      lines.push(`Model: ${model.model} (provider ${model.provider}, preset ${sessionPreset(session) ?? 'default'})`);
      const used = ctx.runtime.contextTokens(session);
      const share = Math.round((used / model.contextWindowTokens) * 100);
      lines.push(`Context: ~${formatCount(used)} of ${formatCount(model.contextWindowTokens)} tokens (${share}%)`);
    } else {
      lines.push(`Context: ~${formatCount(ctx.runtime.contextTokens(session))} tokens`);
    }
    const stats = tokenStats(session);
    const reasoning = stats.total_reasoning_tokens
      ? ` incl. ${formatCount(stats.total_reasoning_tokens)} reasoning`
      : '';
    lines.push(
      `Tokens this session: ${formatCount(stats.total_tokens)} (prompt ${formatCount(stats.total_prompt_tokens)}, ` +
        `completion ${formatCount(stats.total_completion_tokens)}${reasoning}) in ${stats.llm_calls} LLM call${stats.llm_calls === 1 ? '' : 's'}`,
    );
    const hitRate = stats.total_prompt_tokens > 0 ? stats.total_cached_tokens / stats.total_prompt_tokens : 0;
    lines.push(
      `Prompt cache: ${Math.round(hitRate * 100)}% hit (${formatCount(stats.total_cached_tokens)} of ` +
        `${formatCount(stats.total_prompt_tokens)} prompt tokens)`,
    );
    if (stats.total_cost_usd > 0) lines.push(`Cost this session: ${formatUsd(stats.total_cost_usd)}`);
    for (const work of ctx.runtime.work) lines.push(...work.status(session));
    lines.push(`Active turn: ${ctx.runtime.isTurnActive(ctx.sessionKey) ? 'yes' : 'no'}`);
    return lines.join('\n');
  },
};

export function helpCommand(router: CommandRouter): Command {
  return { name: '/help', description: 'show this help', tier: 'exact', run: () => router.help() };
}

/** Every built-in, in the order /help lists them. */
export function builtinCommands(router: CommandRouter): Command[] {
  return [newCommand, stopCommand, restartCommand, statusCommand, modelCommand, historyCommand, helpCommand(router)];
}

function formatCount(n: number): string {
  return n.toLocaleString('en-US');
}

/** Cents for real money, four decimals for the fractions a few cached turns cost. */
function formatUsd(usd: number): string {
  return `$${usd.toFixed(usd >= 1 ? 2 : 4)}`;
}
