/**
 * `nanobot trigger`: `trg_…` ids are nanobot's local triggers (made with /trigger in a chat, answered there); any
 * other name is our free-name trigger, queued for the gateway and answered in the last active chat, as before.
 * `--list` and `--remove` manage the `trg_…` ones (nanobot does that in its WebUI).
 */
import { LocalTriggerStore, TRIGGER_ID } from '../../triggers/local-store.js';
import { queueTrigger } from '../../triggers/queue.js';
import { UserError } from '../../util/errors.js';

export interface TriggerFlags {
  list?: boolean;
  remove?: string;
}

export async function runTrigger(
  workspace: string,
  id: string | undefined,
  message: string | undefined,
  flags: TriggerFlags,
  readStdin: () => Promise<string>,
  out: (line: string) => void = (line) => process.stdout.write(`${line}\n`),
): Promise<void> {
  const store = new LocalTriggerStore(workspace);
  if (flags.list) {
    const triggers = await store.list();
    if (!triggers.length) return out('No triggers. Create one with /trigger <name> in the chat it should answer.');
    for (const t of triggers) {
      const last = t.lastStatus ? `, last ${t.lastStatus}${t.lastError ? `: ${t.lastError}` : ''}` : '';
      out(`${t.id}  ${t.name}  → ${t.channel}:${t.chatId}${t.enabled ? '' : ' (disabled)'}${last}`);
    }
    return;
  }
  if (flags.remove !== undefined) {
    if (!(await store.delete(flags.remove.trim())))
      throw new UserError(`trigger not found: ${flags.remove}`, 'See them with `nanobot trigger --list`.');
    return out(`Removed ${flags.remove.trim()}.`);
  }
  if (!id)
    throw new UserError(
      'nanobot trigger needs a trigger id (or a name).',
      'Create one with /trigger <name> in a chat.',
    );
  const text = message === undefined || message === '-' ? await readStdin() : message;
  if (TRIGGER_ID.test(id)) {
    const delivery = await store.enqueue(id, text);
    const trigger = await store.get(id);
    const where = trigger ? ` for ${trigger.channel}:${trigger.chatId}` : '';
    return out(`Queued ${id} (${delivery.id})${where}; a running gateway delivers it.`);
  }
  await queueTrigger(workspace, id, text);
  out(`Queued trigger "${id}"; a running gateway delivers it.`);
}
