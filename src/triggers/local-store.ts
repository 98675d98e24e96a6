/**
 * nanobot's local triggers, in its own format and place: `/trigger <name>` in a chat creates `trg_XXXXXXXX` bound to
 * that chat in `<workspace>/triggers/triggers.json`; `nanobot trigger trg_… "message"` drops a delivery into
 * `triggers/inbox/`; the gateway moves it to `processing/`, runs the message as a turn in the bound session, answers
 * in that chat and deletes it (a failed delivery goes back to the inbox, after 10 attempts to `failed/`). Every
 * change happens under nanobot's flock on `triggers/.lock`, so its processes and ours interoperate.
 */
import { randomBytes, randomInt } from 'node:crypto';
import { join } from 'node:path';
import { z } from 'zod';
import { withWorkspaceFlock } from '../security/workspace-flock.js';
import { WorkspaceFs } from '../security/workspace-fs.js';
import { errorMessage, UserError } from '../util/errors.js';

const ROOT = 'triggers';
const STORE = join(ROOT, 'triggers.json');
const LOCK = join(ROOT, '.lock');
const INBOX = join(ROOT, 'inbox');
const PROCESSING = join(ROOT, 'processing');
const FAILED = join(ROOT, 'failed');
const ID_ALPHABET = 'ABCDEFGHJKLMNPQRSTUVWXYZ23456789';
/** nanobot's id shape; anything else on the command line is one of our free-name triggers. */
export const TRIGGER_ID = /^trg_[A-HJ-NP-Z2-9]{8}$/;
const MAX_RUN_HISTORY = 20;
export const MAX_DELIVERY_ATTEMPTS = 10;

const nullableString = z.string().nullish();
const TriggerSchema = z.looseObject({
  id: z.string().min(1),
  name: z.string().default(''),
  enabled: z.boolean().default(true),
  channel: z.string().default(''),
  chatId: z.string().default(''),
  sessionKey: z.string().default(''),
  senderId: z.string().nullish(),
  originMetadata: z.record(z.string(), z.unknown()).nullish(),
  createdAtMs: z.number().nullish(),
  updatedAtMs: z.number().nullish(),
  lastMessage: nullableString,
  lastRunAtMs: z.number().nullish(),
  lastStatus: nullableString,
  lastError: nullableString,
  runHistory: z
    .array(z.looseObject({ runAtMs: z.number().nullish(), status: z.string(), error: nullableString }))
    .nullish(),
});
export type LocalTrigger = z.infer<typeof TriggerSchema>;

const DeliverySchema = z.looseObject({
  id: z.string().min(1),
  triggerId: z.string().min(1),
  content: z.string(),
  createdAtMs: z.number().default(0),
  attempts: z.number().default(0),
  lastError: nullableString,
});
export type TriggerDelivery = z.infer<typeof DeliverySchema> & { file: string };

const SNAKE: Record<string, string> = {
  chat_id: 'chatId',
  session_key: 'sessionKey',
  sender_id: 'senderId',
  origin_metadata: 'originMetadata',
  created_at_ms: 'createdAtMs',
  updated_at_ms: 'updatedAtMs',
  last_message: 'lastMessage',
  last_run_at_ms: 'lastRunAtMs',
  last_status: 'lastStatus',
  last_error: 'lastError',
  run_history: 'runHistory',
  trigger_id: 'triggerId',
};
/** nanobot reads snake_case as a fallback; so do we. */
function camel(value: unknown): unknown {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return value;
  const out: Record<string, unknown> = { ...value };
  for (const [snake, name] of Object.entries(SNAKE))
    if (snake in out && !(name in out)) {
      out[name] = out[snake];
      delete out[snake];
    }
  return out;
}

export class TriggerNotFoundError extends UserError {}

export class LocalTriggerStore {
  private readonly wfs: WorkspaceFs;

  constructor(readonly workspace: string) {
    this.wfs = new WorkspaceFs(workspace);
  }

  path(rel = ROOT): string {
    return this.wfs.pathOf(rel);
  }

  async create(input: { name: string; channel: string; chatId: string; sessionKey: string; metadata?: object }) {
    const name = input.name.trim().split(/\s+/).join(' ').slice(0, 120) || 'Local trigger';
    if (!input.channel || !input.chatId || !input.sessionKey)
      throw new UserError('A trigger needs a chat: create it with /trigger <name> in the chat it should answer.');
    return this.locked(async () => {
      const triggers = this.load();
      const now = Date.now();
      const trigger: LocalTrigger = {
        id: newId(new Set(triggers.map((t) => t.id))),
        name,
        enabled: true,
        channel: input.channel,
        chatId: input.chatId,
        sessionKey: input.sessionKey,
        senderId: 'trigger',
        originMetadata: { ...(input.metadata ?? {}) },
        createdAtMs: now,
        updatedAtMs: now,
        lastMessage: '',
        lastRunAtMs: null,
        lastStatus: null,
        lastError: null,
        runHistory: [],
      };
      this.save([...triggers, trigger]);
      return trigger;
    });
  }

  /** Newest change first, as nanobot lists them. */
  async list(): Promise<LocalTrigger[]> {
    const triggers = await this.locked(async () => this.load());
    return triggers.sort((a, b) => (b.updatedAtMs ?? 0) - (a.updatedAtMs ?? 0) || b.id.localeCompare(a.id));
  }

  async get(id: string): Promise<LocalTrigger | undefined> {
    return (await this.list()).find((t) => t.id === id);
  }

  /** Enables, disables or renames a trigger (nanobot's enable/update); undefined when there is none with that id. */
  async change(id: string, change: { enabled?: boolean; name?: string }): Promise<LocalTrigger | undefined> {
    return this.locked(async () => {
      const triggers = this.load();
      const trigger = triggers.find((t) => t.id === id);
      if (!trigger) return undefined;
      if (change.enabled !== undefined) trigger.enabled = change.enabled;
      const name = change.name?.trim().split(/\s+/).join(' ').slice(0, 120);
      if (name) trigger.name = name;
      trigger.updatedAtMs = Date.now();
      this.save(triggers);
      return trigger;
    });
  }

  /** Removes the trigger and its queued deliveries; false when there is none with that id. */
  async delete(id: string): Promise<boolean> {
    return this.locked(async () => {
      const triggers = this.load();
      const rest = triggers.filter((t) => t.id !== id);
      if (rest.length === triggers.length) return false;
      this.save(rest);
      for (const dir of [INBOX, PROCESSING, FAILED])
        for (const entry of this.wfs.readdirIfExistsSync(dir)) {
          const rel = join(dir, entry.name);
          if (entry.kind === 'file' && this.readDelivery(rel)?.triggerId === id) this.wfs.rmSync(rel);
        }
      return true;
    });
  }

  /** Queues `content` for the gateway to deliver in the trigger's chat (nanobot's file format). */
  async enqueue(id: string, content: string): Promise<TriggerDelivery> {
    if (!content.trim()) throw new UserError('The trigger message is empty.', 'Pass a message, or pipe one in.');
    return this.locked(async () => {
      const triggers = this.load();
      const trigger = triggers.find((t) => t.id === id);
      if (!trigger)
        throw new TriggerNotFoundError(`trigger not found: ${id}`, 'See them with `nanobot trigger --list`.');
      if (!trigger.enabled) throw new UserError(`trigger is disabled: ${id}`);
      const delivery = {
        id: `tdl_${randomBytes(6).toString('hex')}`,
        triggerId: id,
        content,
        createdAtMs: Date.now(),
        attempts: 0,
        lastError: null,
      };
      const file = join(INBOX, `${delivery.createdAtMs}-${delivery.id}.json`);
      this.wfs.writeFileAtomicSync(file, JSON.stringify({ version: 1, delivery }), { mode: 0o600 });
      trigger.lastMessage = content.slice(0, 4000);
      trigger.updatedAtMs = delivery.createdAtMs;
      this.save(triggers);
      return { ...delivery, file };
    });
  }

  /** Moves up to `limit` queued deliveries into processing/ and returns them, oldest first. */
  async claim(limit = 20): Promise<TriggerDelivery[]> {
    return this.locked(async () => {
      const claimed: TriggerDelivery[] = [];
      for (const name of this.files(INBOX).slice(0, limit)) {
        const from = join(INBOX, name);
        const delivery = this.readDelivery(from);
        if (!delivery) {
          this.wfs.renameSync(from, join(FAILED, `${name}.bad`));
          continue;
        }
        const to = join(PROCESSING, name);
        this.wfs.renameSync(from, to);
        claimed.push({ ...delivery, file: to });
      }
      return claimed;
    });
  }

  /** Deliveries a stopped gateway left in processing/ go back to the inbox (counted as an attempt). */
  async recover(): Promise<number> {
    let count = 0;
    for (const name of this.files(PROCESSING)) {
      const delivery = this.readDelivery(join(PROCESSING, name));
      if (
        delivery &&
        (await this.retry({ ...delivery, file: join(PROCESSING, name) }, 'recovered from interrupted processing'))
      )
        count++;
    }
    return count;
  }

  async complete(delivery: TriggerDelivery): Promise<void> {
    await this.locked(async () => this.wfs.rmSync(delivery.file));
  }

  /** Back to the inbox, or to failed/ after MAX_DELIVERY_ATTEMPTS; true when it will be retried. */
  async retry(delivery: TriggerDelivery, error: string): Promise<boolean> {
    return this.locked(async () => {
      const { file, ...rest } = delivery;
      const next = { ...rest, attempts: rest.attempts + 1, lastError: error };
      const again = next.attempts < MAX_DELIVERY_ATTEMPTS;
      const name = file.split('/').at(-1) ?? `${next.createdAtMs}-${next.id}.json`;
      this.wfs.writeFileAtomicSync(join(again ? INBOX : FAILED, name), JSON.stringify({ version: 1, delivery: next }), {
        mode: 0o600,
      });
      this.wfs.rmSync(file);
      return again;
    });
  }

  /** Records a delivery's outcome on the trigger (nanobot's lastRunAtMs/lastStatus/runHistory). */
  async record(id: string, status: 'ok' | 'error', error?: string): Promise<void> {
    await this.locked(async () => {
      const triggers = this.load();
      const trigger = triggers.find((t) => t.id === id);
      if (!trigger) return;
      const now = Date.now();
      trigger.lastRunAtMs = now;
      trigger.lastStatus = status;
      trigger.lastError = status === 'ok' ? null : (error ?? 'delivery failed');
      trigger.updatedAtMs = now;
      trigger.runHistory = [...(trigger.runHistory ?? []), { runAtMs: now, status, error: trigger.lastError }].slice(
        -MAX_RUN_HISTORY,
      );
      this.save(triggers);
    });
  }

  // ── internals ──

  private locked<T>(fn: () => Promise<T>): Promise<T> {
    this.wfs.mkdirSync(ROOT, { mode: 0o700 });
    return withWorkspaceFlock(this.workspace, LOCK, fn);
  }

  private load(): LocalTrigger[] {
    const text = this.wfs.readTextIfExistsSync(STORE, { maxBytes: 16 * 1024 * 1024 });
    if (text === undefined || !text.trim()) return [];
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch (err) {
      throw new UserError(`${this.path(STORE)} is not valid JSON (${errorMessage(err)}).`, 'Fix or move the file.');
    }
    const raw = (parsed as { triggers?: unknown }).triggers;
    if (!Array.isArray(raw)) throw new UserError(`${this.path(STORE)} must be {"version":1,"triggers":[...]}.`);
    return raw.flatMap((entry) => {
      const result = TriggerSchema.safeParse(camel(entry));
      return result.success ? [result.data] : [];
    });
  }

  private save(triggers: LocalTrigger[]): void {
    const body = { version: 1, triggers: triggers.map(toStored) };
    this.wfs.writeFileAtomicSync(STORE, JSON.stringify(body, null, 2), { mode: 0o600 });
  }

  private files(dir: string): string[] {
    return this.wfs
      .readdirIfExistsSync(dir)
      .filter((entry) => entry.kind === 'file' && entry.name.endsWith('.json'))
      .map((entry) => entry.name)
      .sort();
  }

  private readDelivery(rel: string): z.infer<typeof DeliverySchema> | undefined {
    try {
      const data = JSON.parse(this.wfs.readTextSync(rel, { maxBytes: 1024 * 1024 })) as { delivery?: unknown };
      const result = DeliverySchema.safeParse(camel(data.delivery ?? data));
      return result.success ? result.data : undefined;
    } catch {
      return undefined;
    }
  }
}

/** nanobot's `to_dict` order and fields. */
function toStored(t: LocalTrigger): Record<string, unknown> {
  return {
    ...t,
    id: t.id,
    name: t.name,
    enabled: t.enabled,
    channel: t.channel,
    chatId: t.chatId,
    sessionKey: t.sessionKey,
    senderId: t.senderId ?? 'trigger',
    originMetadata: t.originMetadata ?? {},
    createdAtMs: t.createdAtMs ?? 0,
    updatedAtMs: t.updatedAtMs ?? 0,
    lastMessage: t.lastMessage ?? '',
    lastRunAtMs: t.lastRunAtMs ?? null,
    lastStatus: t.lastStatus ?? null,
    lastError: t.lastError ?? null,
    runHistory: (t.runHistory ?? []).map((r) => ({
      runAtMs: r.runAtMs ?? 0,
      status: r.status,
      error: r.error ?? null,
    })),
  };
}

function newId(taken: Set<string>): string {
  for (;;) {
    let suffix = '';
    for (let i = 0; i < 8; i++) suffix += ID_ALPHABET[randomInt(ID_ALPHABET.length)];
    if (!taken.has(`trg_${suffix}`)) return `trg_${suffix}`;
  }
}
