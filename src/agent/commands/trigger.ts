/** `/trigger <name>`: creates nanobot's local trigger bound to this chat (`nanobot trigger trg_… "message"` answers here). */
import { LocalTriggerStore } from '../../triggers/local-store.js';
import type { Command } from './types.js';

const USAGE = 'Usage: /trigger <name>\n\nCreate a named local trigger bound to this chat session.';

export function triggerCommand(workspace: string): Command {
  return {
    name: '/trigger',
    description: 'create a named trigger bound to this chat, for `nanobot trigger <id> "message"`',
    usage: '/trigger <name>',
    tier: 'prefix',
    async run(ctx) {
      if (!ctx.args) return USAGE;
      const trigger = await new LocalTriggerStore(workspace).create({
        name: ctx.args,
        channel: ctx.channel,
        chatId: ctx.chatId,
        sessionKey: ctx.sessionKey,
      });
      return `Trigger created: ${trigger.name}\nID: ${trigger.id}\n\nCommand:\nnanobot trigger ${trigger.id} "message"`;
    },
  };
}
