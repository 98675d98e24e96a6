/**
 * Conversation references: where each Teams conversation the bot has heard from can be written to (the connector's
 * serviceUrl, the conversation id, the last activity to reply to). A reference is only ever made from an activity
 * whose token was verified, so a reply address never comes from the model, a config edit or the workspace; they are
 * kept in `<dataDir>/msteams/conversations.json` (0600, in a 0700 folder) so replies, cron jobs and the message tool
 * still reach a conversation after a restart. As upstream does, references expire after `refTtlDays` without
 * traffic, Web Chat's are not kept (`pruneWebChatRefs`), and group and channel references stay in memory only
 * (`pruneNonPersonalRefs`); one whose host is no longer trusted is dropped when the file is read.
 */
import { chmod, mkdir, readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { z } from 'zod';
import { errorMessage } from '../../util/errors.js';
import { writeFileAtomic } from '../../util/fs.js';
import { parseJsonAs } from '../../util/json.js';
import type { Logger } from '../../util/log.js';
import { isTrustedServiceUrl, isWebChatServiceUrl } from './trust.js';

/** Enough for every chat of a large tenant; the least recently used go first beyond it. */
const MAX_REFERENCES = 10_000;
const DAY_MS = 86_400_000;

const StoredRef = z.looseObject({
  serviceUrl: z.string().min(1),
  conversationId: z.string().min(1),
  conversationType: z.string().default('personal'),
  channelId: z.string().default('msteams'),
  botId: z.string().default(''),
  tenantId: z.string().optional(),
  activityId: z.string().optional(),
  user: z.looseObject({ id: z.string(), name: z.string().optional(), upn: z.string().optional() }).optional(),
  updatedAt: z.number().nonnegative(),
});
export type ConversationRef = z.infer<typeof StoredRef>;

const RefsFile = z.looseObject({ version: z.literal(1), conversations: z.record(z.string(), z.unknown()) });

export interface RefsPolicy {
  refTtlDays: number;
  pruneWebChatRefs: boolean;
  pruneNonPersonalRefs: boolean;
  refTouchIntervalS: number;
  trustedServiceUrlHosts: readonly string[];
}

export function referencesPath(dataDir: string): string {
  return join(dataDir, 'msteams', 'conversations.json');
}

export class ConversationRefs {
  private readonly refs = new Map<string, ConversationRef>();
  private loaded = false;
  private saving: Promise<void> = Promise.resolve();
  private dirty = false;

  constructor(
    private readonly path: string,
    private readonly policy: () => RefsPolicy,
    private readonly log: Logger,
    private readonly now: () => number = Date.now,
  ) {}

  /** Reads the file once (later calls keep what is in memory). */
  async load(): Promise<void> {
    if (this.loaded) return;
    this.loaded = true;
    let text: string;
    try {
      text = await readFile(this.path, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') {
        this.log.warn(`cannot read ${this.path}: ${errorMessage(err)}; starting without saved conversations`);
      }
      return;
    }
    const parsed = parseJsonAs(text, RefsFile, this.path);
    if (!parsed.ok) {
      this.log.warn(`${parsed.problem}; starting without saved conversations`);
      return;
    }
    let dropped = 0;
    for (const [key, raw] of Object.entries(parsed.value.conversations)) {
      const ref = StoredRef.safeParse(raw);
      if (ref.success && key === ref.data.conversationId && this.keeps(ref.data, true)) this.refs.set(key, ref.data);
      else dropped += 1;
    }
    if (dropped > 0) this.log.info(`dropped ${dropped} saved conversation(s): expired, or no longer trusted`);
  }

  get(conversationId: string): ConversationRef | undefined {
    const ref = this.refs.get(conversationId);
    return ref && this.keeps(ref, false) ? ref : undefined;
  }

  /** Saves (in the background) the reference a verified activity gives. */
  remember(ref: ConversationRef): void {
    this.refs.delete(ref.conversationId);
    this.refs.set(ref.conversationId, ref);
    while (this.refs.size > MAX_REFERENCES) this.refs.delete(this.refs.keys().next().value ?? '');
    this.save();
  }

  /** A sent message keeps its conversation from expiring (written at most every `refTouchIntervalS`). */
  touch(conversationId: string): void {
    const ref = this.refs.get(conversationId);
    if (!ref) return;
    if (this.now() - ref.updatedAt < this.policy().refTouchIntervalS * 1000) return;
    this.remember({ ...ref, updatedAt: this.now() });
  }

  /** Resolves when what is in memory now is on disk. */
  async flush(): Promise<void> {
    await this.saving;
  }

  private keeps(ref: ConversationRef, persisted: boolean): boolean {
    const policy = this.policy();
    if (!isTrustedServiceUrl(ref.serviceUrl, policy.trustedServiceUrlHosts)) return false;
    if (policy.pruneWebChatRefs && isWebChatServiceUrl(ref.serviceUrl)) return false;
    if (persisted && policy.pruneNonPersonalRefs && ref.conversationType !== 'personal') return false;
    return this.now() - ref.updatedAt <= policy.refTtlDays * DAY_MS;
  }

  /** One write at a time; changes made meanwhile go out in one more write after it. */
  private save(): void {
    if (this.dirty) return;
    this.dirty = true;
    this.saving = this.saving.then(async () => {
      this.dirty = false;
      try {
        await this.write();
      } catch (err) {
        this.log.warn(`cannot save Teams conversations to ${this.path}: ${errorMessage(err)}`);
      }
    });
  }

  private async write(): Promise<void> {
    const conversations: Record<string, ConversationRef> = {};
    for (const [key, ref] of this.refs) if (this.keeps(ref, true)) conversations[key] = ref;
    const dir = dirname(this.path);
    await mkdir(dir, { recursive: true, mode: 0o700 });
    await chmod(dir, 0o700);
    await writeFileAtomic(this.path, `${JSON.stringify({ version: 1, conversations }, null, 2)}\n`, 0o600);
  }
}
