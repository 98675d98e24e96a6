/**
 * Local triggers: `nanobot trigger <name> [message]` drops a file in `<workspace>/triggers/`; the gateway turns each
 * file into an agent turn and deletes it only once the turn is done, so a trigger is delivered at least once even
 * if the gateway is down or restarts mid-turn.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, type FSWatcher, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, watch } from 'node:fs';
import { join } from 'node:path';
import { UserError } from '../util/errors.js';
import { writeFileAtomic } from '../util/fs.js';
import { type Logger, silentLogger } from '../util/log.js';

export interface Trigger {
  name: string;
  message: string;
  createdAt: string;
}

const NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;

export const triggersDir = (workspace: string) => join(workspace, 'triggers');

export async function queueTrigger(
  workspace: string,
  name: string,
  message: string,
  now = new Date(),
): Promise<string> {
  if (!NAME.test(name)) {
    throw new UserError(
      `Invalid trigger name "${name}".`,
      'Use letters, digits, dot, dash or underscore (at most 64).',
    );
  }
  if (!message.trim()) throw new UserError('The trigger message is empty.', 'Pass a message, or pipe one in with `-`.');
  const file = join(triggersDir(workspace), `${now.getTime()}-${randomBytes(3).toString('hex')}.json`);
  const trigger: Trigger = { name, message, createdAt: now.toISOString() };
  await writeFileAtomic(file, `${JSON.stringify(trigger)}\n`);
  return file;
}

export interface TriggerWatcherOptions {
  workspace: string;
  /** Handles one trigger; the file is deleted after this resolves (a throw keeps it for the next pass). */
  deliver: (trigger: Trigger) => Promise<void>;
  log?: Logger;
  pollMs?: number;
}

export class TriggerWatcher {
  private watcher: FSWatcher | undefined;
  private timer: NodeJS.Timeout | undefined;
  private draining: Promise<void> | undefined;
  private again = false;
  private readonly log: Logger;

  constructor(private readonly options: TriggerWatcherOptions) {
    this.log = options.log ?? silentLogger;
  }

  start(): void {
    const dir = triggersDir(this.options.workspace);
    mkdirSync(dir, { recursive: true });
    try {
      this.watcher = watch(dir, () => void this.drain());
    } catch {
      // Polling below still picks files up.
    }
    this.timer = setInterval(() => void this.drain(), this.options.pollMs ?? 5_000);
    this.timer.unref();
    void this.drain();
  }

  async stop(): Promise<void> {
    this.watcher?.close();
    clearInterval(this.timer);
    await this.draining;
  }

  /** Delivers every queued trigger, oldest first; concurrent calls coalesce into one more pass. */
  drain(): Promise<void> {
    if (this.draining) {
      this.again = true;
      return this.draining;
    }
    this.draining = (async () => {
      do {
        this.again = false;
        await this.pass();
      } while (this.again);
    })().finally(() => {
      this.draining = undefined;
    });
    return this.draining;
  }

  private async pass(): Promise<void> {
    const dir = triggersDir(this.options.workspace);
    if (!existsSync(dir)) return;
    for (const name of readdirSync(dir)
      .filter((n) => n.endsWith('.json'))
      .sort()) {
      const file = join(dir, name);
      let trigger: Trigger;
      try {
        trigger = JSON.parse(readFileSync(file, 'utf8')) as Trigger;
      } catch {
        this.log.warn(`trigger ${name} is not valid JSON; renamed to ${name}.invalid`);
        renameSync(file, `${file}.invalid`);
        continue;
      }
      try {
        await this.options.deliver(trigger);
        rmSync(file, { force: true });
      } catch (err) {
        this.log.warn(`trigger ${trigger.name} failed, will retry: ${(err as Error).message}`);
        return;
      }
    }
  }
}
