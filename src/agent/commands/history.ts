/** /history [n]: the last n user/assistant exchanges of this conversation, as the user saw them. */
import { contentText } from '../../memory/tokens.js';
import type { ChatMessage } from '../../providers/types.js';
import { publicContent, stripRuntimeContext } from '../../session/runtime-context.js';
import { isGoalNudge } from '../goals.js';
import { CONTINUE_AFTER_LENGTH } from '../prompts.js';
import type { Command } from './types.js';

const DEFAULT_EXCHANGES = 10;
const MAX_EXCHANGES = 50;
const MAX_MESSAGE_CHARS = 300;

export const historyCommand: Command = {
  name: '/history',
  usage: '/history [n]',
  description: `show the last n exchanges (default ${DEFAULT_EXCHANGES}, max ${MAX_EXCHANGES})`,
  tier: 'prefix',
  async run(ctx) {
    const count = parseCount(ctx.args);
    if (count === undefined) return `Usage: /history [n] — n from 1 to ${MAX_EXCHANGES}.`;
    const exchanges = groupExchanges((await ctx.session()).messages).slice(-count);
    if (exchanges.length === 0) return 'No messages in this conversation yet.';
    const body = exchanges.map((lines) => lines.join('\n')).join('\n\n');
    return `Last ${exchanges.length} exchange${exchanges.length === 1 ? '' : 's'}:\n\n${body}`;
  },
};

/** Default when empty, clamped to the maximum; undefined when not a positive whole number. */
function parseCount(args: string): number | undefined {
  if (!args) return DEFAULT_EXCHANGES;
  if (!/^\d+$/.test(args)) return undefined;
  const n = Number(args);
  return n < 1 ? undefined : Math.min(n, MAX_EXCHANGES);
}

/** One exchange per user message, with the assistant text that followed it; tool traffic is left out. */
function groupExchanges(messages: ChatMessage[]): string[][] {
  const exchanges: string[][] = [];
  for (const message of messages) {
    if (message.role !== 'user' && message.role !== 'assistant') continue;
    let text = contentText(publicContent(message)).text;
    if (message.role === 'user') text = stripRuntimeContext(text);
    text = text.trim();
    // Skipped: an assistant message that only called tools, and the loop's own "continue" nudges.
    if (!text || text === CONTINUE_AFTER_LENGTH || isGoalNudge(text)) continue;
    const line = `${message.role === 'user' ? 'You' : 'Assistant'}: ${shorten(text)}`;
    const last = exchanges.at(-1);
    if (message.role === 'user' || !last) exchanges.push([line]);
    else last.push(line);
  }
  return exchanges;
}

function shorten(text: string): string {
  const oneLine = text.replace(/\s+/g, ' ');
  return oneLine.length <= MAX_MESSAGE_CHARS ? oneLine : `${oneLine.slice(0, MAX_MESSAGE_CHARS - 1)}…`;
}
