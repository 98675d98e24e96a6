/**
 * Pairing: a stranger who writes to the agent in a direct chat gets a short code; the owner approves it with
 * `/pairing approve <code>` (in a chat, as an owner) or `nanobot channels pair approve <code>`.
 * One file per channel, `<dataDir>/pairing/<channel>.json` (0600), shared by the CLI and the running gateway:
 * writes hold a cross-process lock and replace the file atomically; reads notice a changed file by its mtime,
 * so an approval from the CLI reaches the running gateway with its next message.
 */
import { randomInt } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { writeFileAtomic } from '../util/fs.js';
import { describeIssues, parseJsonAs } from '../util/json.js';
import { lockFile } from '../util/lock.js';
import { createLogger, type Logger } from '../util/log.js';

/** No 0/O or 1/I: codes are read aloud and typed on phones. */
const CODE_ALPHABET = 'ABCDEFGHJKLMNPQRSTUVWXYZ23456789';
const CODE_LENGTH = 8;
export const PAIRING_CODE_TTL_MS = 10 * 60_000;
/** Bounds the file when many strangers write: the oldest requests give way. */
const MAX_PENDING_PER_CHANNEL = 50;

export interface PendingPairing {
  code: string;
  senderId: string;
  username?: string;
  chatId: string;
  createdAt: number;
  expiresAt: number;
}

export interface ApprovedSender {
  username?: string;
  approvedAt: string;
}

interface PairingFile {
  approved: Record<string, ApprovedSender>;
  pending: PendingPairing[];
}

export interface PairingStoreOptions {
  /** Usually `<dataDir>/pairing`. */
  dir: string;
  now?: () => number;
  /** Where a damaged file is reported (default: stderr). */
  log?: Logger;
}

export interface PairingResult {
  channel: string;
  senderId: string;
  username?: string;
  chatId: string;
}

export class PairingStore {
  private readonly now: () => number;
  private readonly log: Logger;
  private readonly cache = new Map<string, { ino: number; mtimeMs: number; size: number; data: PairingFile }>();

  constructor(private readonly options: PairingStoreOptions) {
    this.now = options.now ?? Date.now;
    this.log = options.log ?? createLogger('warn');
  }

  get dir(): string {
    return this.options.dir;
  }

  /** Synchronous and cheap (a stat per call): it runs for every message from a sender not in allowFrom. */
  isApproved(channel: string, senderId: string): boolean {
    return Object.hasOwn(this.read(channel).approved, senderId);
  }

  approved(channel: string): Record<string, ApprovedSender> {
    return { ...this.read(channel).approved };
  }

  /** The sender's pending code, or a new one (valid 10 minutes). `created` is false when an unexpired code was reused. */
  async requestCode(
    channel: string,
    sender: { id: string; username?: string },
    chatId: string,
  ): Promise<{ code: string; created: boolean }> {
    return this.update(channel, (data) => {
      const existing = data.pending.find((p) => p.senderId === sender.id);
      if (existing) return { code: existing.code, created: false };
      const taken = new Set(data.pending.map((p) => p.code));
      let code = generateCode();
      while (taken.has(code)) code = generateCode();
      const createdAt = this.now();
      data.pending.push({
        code,
        senderId: sender.id,
        ...(sender.username ? { username: sender.username } : {}),
        chatId,
        createdAt,
        expiresAt: createdAt + PAIRING_CODE_TTL_MS,
      });
      data.pending.splice(0, Math.max(0, data.pending.length - MAX_PENDING_PER_CHANNEL));
      return { code, created: true };
    });
  }

  /** Approves the sender behind a pending code, on whichever channel issued it. */
  async approve(code: string): Promise<PairingResult | undefined> {
    return this.takePending(code, (data, pending) => {
      data.approved[pending.senderId] = {
        ...(pending.username ? { username: pending.username } : {}),
        approvedAt: new Date(this.now()).toISOString(),
      };
    });
  }

  async deny(code: string): Promise<PairingResult | undefined> {
    return this.takePending(code, () => {});
  }

  async revoke(channel: string, senderId: string): Promise<boolean> {
    return this.update(channel, (data) => {
      if (!Object.hasOwn(data.approved, senderId)) return false;
      delete data.approved[senderId];
      return true;
    });
  }

  /** Unexpired requests of every channel, oldest first. */
  listPending(): (PendingPairing & { channel: string })[] {
    const now = this.now();
    return this.channels()
      .flatMap((channel) => this.read(channel).pending.map((p) => ({ ...p, channel })))
      .filter((p) => p.expiresAt > now)
      .sort((a, b) => a.createdAt - b.createdAt);
  }

  /** Channels with a pairing file. */
  channels(): string[] {
    try {
      return readdirSync(this.options.dir)
        .filter((file) => file.endsWith('.json') && !file.startsWith('.'))
        .map((file) => file.slice(0, -'.json'.length))
        .sort();
    } catch {
      return [];
    }
  }

  private async takePending(
    code: string,
    apply: (data: PairingFile, pending: PendingPairing) => void,
  ): Promise<PairingResult | undefined> {
    const wanted = normalizeCode(code);
    for (const channel of this.channels()) {
      if (!this.read(channel).pending.some((p) => p.code === wanted)) continue;
      const result = await this.update(channel, (data) => {
        const at = data.pending.findIndex((p) => p.code === wanted);
        const pending = data.pending[at];
        if (!pending) return undefined;
        data.pending.splice(at, 1);
        apply(data, pending);
        return {
          channel,
          senderId: pending.senderId,
          chatId: pending.chatId,
          ...(pending.username ? { username: pending.username } : {}),
        };
      });
      if (result) return result;
    }
    return undefined;
  }

  private path(channel: string): string {
    if (!/^[\w-]+$/.test(channel)) throw new Error(`invalid channel name for pairing: ${channel}`);
    return join(this.options.dir, `${channel}.json`);
  }

  private read(channel: string): PairingFile {
    const path = this.path(channel);
    const stat = statSync(path, { throwIfNoEntry: false });
    if (!stat) return emptyFile();
    const cached = this.cache.get(channel);
    // Every write renames a new file into place, so a new inode means new content even within one mtime tick.
    const unchanged = cached?.ino === stat.ino && cached.mtimeMs === stat.mtimeMs && cached.size === stat.size;
    if (cached && unchanged) return cached.data;
    const { data, problems } = parseFile(readFileSync(path, 'utf8'), path);
    for (const problem of problems) this.log.warn(problem);
    this.cache.set(channel, { ino: stat.ino, mtimeMs: stat.mtimeMs, size: stat.size, data });
    return data;
  }

  /** Read-modify-write under the cross-process lock; expired requests are dropped on the way. */
  private async update<T>(channel: string, change: (data: PairingFile) => T): Promise<T> {
    mkdirSync(this.options.dir, { recursive: true, mode: 0o700 });
    const path = this.path(channel);
    const release = await (await lockFile())(path, {
      realpath: false,
      stale: 10_000,
      retries: { retries: 50, minTimeout: 5, maxTimeout: 200, factor: 1.5 },
    });
    try {
      this.cache.delete(channel);
      const data = structuredClone(this.read(channel));
      const now = this.now();
      data.pending = data.pending.filter((p) => p.expiresAt > now);
      const value = change(data);
      await writeFileAtomic(path, `${JSON.stringify(data, null, 2)}\n`, 0o600);
      this.cache.delete(channel);
      return value;
    } finally {
      await release().catch(() => {});
    }
  }
}

/** `ABCD-EFGH`: 8 characters from a 32-letter alphabet (40 bits), shown with a dash for reading. */
export function generateCode(): string {
  let code = '';
  for (let i = 0; i < CODE_LENGTH; i++) code += CODE_ALPHABET[randomInt(CODE_ALPHABET.length)];
  return code;
}

export function formatCode(code: string): string {
  return `${code.slice(0, 4)}-${code.slice(4)}`;
}

/** Accepts `abcd-efgh`, `ABCDEFGH`, spaces… */
export function normalizeCode(input: string): string {
  return input.toUpperCase().replace(/[^A-Z0-9]/g, '');
}

export function pairingReply(code: string): string {
  const shown = formatCode(code);
  return (
    'Hi! This assistant only answers people its owner has approved.\n\n' +
    `Your pairing code is: \`${shown}\` (valid for 10 minutes)\n\n` +
    `Ask the owner to approve it with \`/pairing approve ${shown}\` or \`nanobot channels pair approve ${shown}\`.`
  );
}

function emptyFile(): PairingFile {
  return { approved: {}, pending: [] };
}

const FileShape = z.looseObject({ approved: z.unknown().optional(), pending: z.unknown().optional() });
const Approved = z.union([
  z.array(z.union([z.string(), z.number()])), // A hand-written list of ids is accepted too.
  z.record(
    z.string(),
    z.looseObject({ username: z.string().optional().catch(undefined), approvedAt: z.string().catch('') }),
  ),
]);
const Pending = z.looseObject({
  code: z.string(),
  senderId: z.string(),
  expiresAt: z.number(),
  username: z.string().optional().catch(undefined),
  chatId: z.string().catch(''),
  createdAt: z.number().catch(0),
});

/**
 * A damaged file must not lock everyone out or crash the gateway: unusable parts read as empty, and each one is
 * named in `problems` so the owner learns why a sender is no longer approved.
 */
function parseFile(text: string, path: string): { data: PairingFile; problems: string[] } {
  const parsed = parseJsonAs(text, FileShape, `pairing file ${path}`);
  if (!parsed.ok) return { data: emptyFile(), problems: [`${parsed.problem}; read as empty`] };
  const problems: string[] = [];
  let approved: Record<string, ApprovedSender> = {};
  if (parsed.value.approved !== undefined) {
    const checked = Approved.safeParse(parsed.value.approved);
    if (!checked.success) problems.push(`pairing file ${path}: approved: ${describeIssues(checked.error)}; ignored`);
    else if (Array.isArray(checked.data)) {
      approved = Object.fromEntries(checked.data.map((id) => [String(id), { approvedAt: '' }]));
    } else approved = checked.data;
  }
  const pending: PendingPairing[] = [];
  if (parsed.value.pending !== undefined) {
    const list = Array.isArray(parsed.value.pending) ? parsed.value.pending : [];
    if (!Array.isArray(parsed.value.pending)) problems.push(`pairing file ${path}: pending is not a list; ignored`);
    list.forEach((entry, i) => {
      const checked = Pending.safeParse(entry);
      if (checked.success) pending.push(checked.data);
      else problems.push(`pairing file ${path}: pending.${i}: ${describeIssues(checked.error)}; dropped`);
    });
  }
  return { data: { approved, pending }, problems };
}
