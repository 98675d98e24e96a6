/**
 * Local triggers: `nanobot trigger <name> [message]` drops a file in `<workspace>/triggers/`; the gateway turns each
 * file into an agent turn and deletes it only once the turn is done, so a trigger is delivered at least once even
 * if the gateway is down or restarts mid-turn.
 */
import { randomBytes } from 'node:crypto';
import { type FSWatcher, watch } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { closeDirectory, entryPath, isNotFound, WorkspaceFs, WorkspaceFsError } from '../security/workspace-fs.js';
import { errorMessage, UserError } from '../util/errors.js';
import { parseJsonAs } from '../util/json.js';
import { type Logger, logFailure, silentLogger } from '../util/log.js';

export interface Trigger {
  name: string;
  message: string;
  createdAt: string;
}

/** What a trigger file must hold: `nanobot trigger` writes all three; a hand-written one may leave out createdAt. */
const TriggerFile = z.object({ name: z.string().min(1), message: z.string(), createdAt: z.string().catch('') });

const NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;

const TRIGGERS = 'triggers';
/** nanobot's trigger store shares the directory (local-store.ts): it is not a queued trigger. */
const LOCAL_STORE_FILE = 'triggers.json';
export const triggersDir = (workspace: string) => join(workspace, TRIGGERS);

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
  const rel = join(TRIGGERS, `${now.getTime()}-${randomBytes(3).toString('hex')}.json`);
  const trigger: Trigger = { name, message, createdAt: now.toISOString() };
  const wfs = new WorkspaceFs(workspace);
  try {
    await wfs.writeFileAtomic(rel, `${JSON.stringify(trigger)}\n`, { mode: 0o600, dirMode: 0o700 });
  } catch (error) {
    if (error instanceof WorkspaceFsError) {
      throw new UserError(
        `Cannot queue the trigger: ${error.message}.`,
        `Replace ${triggersDir(workspace)} with a plain directory.`,
      );
    }
    throw error;
  }
  return wfs.pathOf(rel);
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
  private readonly wfs: WorkspaceFs;
  private warnedRefusal = false;

  constructor(private readonly options: TriggerWatcherOptions) {
    this.log = options.log ?? silentLogger;
    this.wfs = new WorkspaceFs(options.workspace);
  }

  start(): void {
    try {
      // Watched through the opened directory: a triggers/ link out is refused here, and the watch stays on it.
      const dir = this.wfs.openDirectorySync(TRIGGERS, 0o700);
      try {
        this.watcher = watch(
          entryPath(dir, '.'),
          () => void this.drain().catch(logFailure(this.log, 'triggers: a pass failed')),
        );
      } finally {
        closeDirectory(dir);
      }
    } catch (error) {
      if (error instanceof WorkspaceFsError) this.warnRefused(error);
      // Polling below still picks files up.
    }
    this.timer = setInterval(
      () => void this.drain().catch(logFailure(this.log, 'triggers: a pass failed')),
      this.options.pollMs ?? 5_000,
    );
    this.timer.unref();
    void this.drain().catch(logFailure(this.log, 'triggers: a pass failed'));
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

  private warnRefused(error: WorkspaceFsError): void {
    if (this.warnedRefusal) return;
    this.warnedRefusal = true;
    this.log.warn(`triggers: ${error.message}; no trigger is run from there until it is a plain directory`);
  }

  /**
   * Every entry is read, renamed and deleted through the workspace-file layer: a triggers/ link out of the
   * workspace, or a trigger file that is a link, is never run, renamed or deleted.
   */
  private async pass(): Promise<void> {
    let names: string[];
    try {
      names = this.wfs
        .readdirIfExistsSync(TRIGGERS)
        .filter((e) => e.name.endsWith('.json') && e.name !== LOCAL_STORE_FILE && e.kind !== 'directory')
        .map((e) => e.name)
        .sort();
    } catch (error) {
      if (error instanceof WorkspaceFsError) return this.warnRefused(error);
      throw error;
    }
    for (const name of names) {
      const rel = join(TRIGGERS, name);
      let text: string;
      try {
        text = this.wfs.readTextSync(rel, { maxBytes: 1024 * 1024 });
      } catch (error) {
        if (isNotFound(error)) continue;
        if (error instanceof WorkspaceFsError) {
          // A link (or FIFO) in the queue: moved aside as itself, never followed.
          this.log.warn(`trigger ${name}: ${error.message}; renamed to ${name}.refused`);
          this.wfs.renameSync(rel, `${rel}.refused`);
          continue;
        }
        this.log.warn(`trigger ${name} could not be read (${errorMessage(error)}); renamed to ${name}.invalid`);
        this.wfs.renameSync(rel, `${rel}.invalid`);
        continue;
      }
      const parsed = parseJsonAs(text, TriggerFile, `trigger ${name}`);
      if (!parsed.ok) {
        this.log.warn(`${parsed.problem}; renamed to ${name}.invalid`);
        this.wfs.renameSync(rel, `${rel}.invalid`);
        continue;
      }
      const trigger: Trigger = parsed.value;
      try {
        await this.options.deliver(trigger);
        this.wfs.rmSync(rel);
      } catch (err) {
        this.log.warn(`trigger ${trigger.name} failed, will retry: ${(err as Error).message}`);
        return;
      }
    }
  }
}
