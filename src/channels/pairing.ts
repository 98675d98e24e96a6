/**
 * Pairing: a stranger who writes to the agent in a direct chat gets a short code; the owner approves it with
 * `/pairing approve <code>` (in a chat, as an owner) or `nanobot channels pair approve <code>`.
 * One file for every channel, `<dataDir>/pairing.json` (0600), in nanobot's own format (pairing-file.ts), so
 * approvals carry over between nanobot and this project both ways. It is shared by the CLI and the running
 * gateway: writes hold a cross-process lock and replace the file atomically; reads notice a changed file by its
 * stat, so an approval from the CLI reaches the running gateway with its next message. Files an earlier version
 * wrote (`<dataDir>/pairing/<channel>.json`) are read too, and folded into `pairing.json` by the next write (then
 * renamed `*.json.migrated`, not deleted).
 */
import { randomInt } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, renameSync, type Stats, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { writeFileAtomic } from '../util/fs.js';
import { lockFile } from '../util/lock.js';
import { createLogger, type Logger } from '../util/log.js';
import {
  type ApprovedSender,
  type ChannelPairing,
  emptyChannel,
  type PairingData,
  type PendingPairing,
  parseLegacy,
  parseUpstream,
  serializeUpstream,
} from './pairing-file.js';

export type { ApprovedSender, PendingPairing } from './pairing-file.js';

/** No 0/O or 1/I: codes are read aloud and typed on phones. */
const CODE_ALPHABET = 'ABCDEFGHJKLMNPQRSTUVWXYZ23456789';
const CODE_LENGTH = 8;
export const PAIRING_CODE_TTL_MS = 10 * 60_000;
/** Bounds the file when many strangers write: the oldest requests give way. */
const MAX_PENDING_PER_CHANNEL = 50;

export interface PairingStoreOptions {
  /** `<dataDir>/pairing`: where an earlier version kept one file per channel. */
  dir: string;
  /** nanobot's `<dataDir>/pairing.json`; defaults to beside `dir`. */
  file?: string;
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

interface Cached<T> {
  ino: number;
  mtimeMs: number;
  size: number;
  data: T;
}

const unchanged = (cached: Cached<unknown> | undefined, stat: Stats): boolean =>
  cached?.ino === stat.ino && cached.mtimeMs === stat.mtimeMs && cached.size === stat.size;

export class PairingStore {
  private readonly now: () => number;
  private readonly log: Logger;
  private readonly file: string;
  private upstream: Cached<PairingData> | undefined;
  private readonly legacy = new Map<string, Cached<ChannelPairing>>();

  constructor(private readonly options: PairingStoreOptions) {
    this.now = options.now ?? Date.now;
    this.log = options.log ?? createLogger('warn');
    this.file = options.file ?? join(dirname(options.dir), 'pairing.json');
  }

  get dir(): string {
    return this.options.dir;
  }

  /** Synchronous and cheap (two stats per call): it runs for every message from a sender not in allowFrom. */
  isApproved(channel: string, senderId: string): boolean {
    if (!validChannel(channel)) return false;
    return Object.hasOwn(this.read(channel).approved, senderId);
  }

  approved(channel: string): Record<string, ApprovedSender> {
    if (!validChannel(channel)) return {};
    return { ...this.read(channel).approved };
  }

  /** The sender's pending code, or a new one (valid 10 minutes). `created` is false when an unexpired code was reused. */
  async requestCode(
    channel: string,
    sender: { id: string; username?: string },
    chatId: string,
  ): Promise<{ code: string; created: boolean }> {
    checkChannel(channel);
    return this.update((all) => {
      all[channel] ??= emptyChannel();
      const data = all[channel];
      const existing = data.pending.find((p) => p.senderId === sender.id);
      if (existing) return { code: existing.code, created: false };
      const taken = new Set(Object.values(all).flatMap((part) => part.pending.map((p) => p.code)));
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
    if (!validChannel(channel)) return false;
    return this.update((all) => {
      const data = Object.hasOwn(all, channel) ? all[channel] : undefined;
      if (!data || !Object.hasOwn(data.approved, senderId)) return false;
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

  /** Channels with approvals or requests. */
  channels(): string[] {
    return [...new Set([...Object.keys(this.readUpstream()), ...this.legacyChannels()])].sort();
  }

  private async takePending(
    code: string,
    apply: (data: ChannelPairing, pending: PendingPairing) => void,
  ): Promise<PairingResult | undefined> {
    const wanted = normalizeCode(code);
    return this.update((all) => {
      for (const [channel, data] of Object.entries(all)) {
        const at = data.pending.findIndex((p) => p.code === wanted);
        const pending = data.pending[at];
        if (!pending) continue;
        data.pending.splice(at, 1);
        apply(data, pending);
        return {
          channel,
          senderId: pending.senderId,
          chatId: pending.chatId,
          ...(pending.username ? { username: pending.username } : {}),
        };
      }
      return undefined;
    });
  }

  /** One channel: nanobot's file, plus what an earlier version's file of that channel still holds. */
  private read(channel: string): ChannelPairing {
    const upstream = this.readUpstream();
    const ours = Object.hasOwn(upstream, channel) ? upstream[channel] : undefined;
    const old = /^[\w-]+$/.test(channel) ? this.readLegacy(channel) : undefined;
    if (!old) return ours ?? emptyChannel();
    if (!ours) return old;
    const codes = new Set(ours.pending.map((p) => p.code));
    return {
      approved: { ...old.approved, ...ours.approved },
      pending: [...ours.pending, ...old.pending.filter((p) => !codes.has(p.code))],
    };
  }

  private readUpstream(): PairingData {
    const stat = statSync(this.file, { throwIfNoEntry: false });
    if (!stat) return {};
    if (this.upstream && unchanged(this.upstream, stat)) return this.upstream.data;
    const { data, problems } = parseUpstream(readFileSync(this.file, 'utf8'), this.file);
    for (const problem of problems) this.log.warn(problem);
    this.upstream = { ino: stat.ino, mtimeMs: stat.mtimeMs, size: stat.size, data };
    return data;
  }

  private legacyPath(channel: string): string {
    return join(this.options.dir, `${channel}.json`);
  }

  private readLegacy(channel: string): ChannelPairing | undefined {
    const path = this.legacyPath(channel);
    const stat = statSync(path, { throwIfNoEntry: false });
    if (!stat) return undefined;
    const cached = this.legacy.get(channel);
    // Every write renames a new file into place, so a new inode means new content even within one mtime tick.
    if (cached && unchanged(cached, stat)) return cached.data;
    const { data, problems } = parseLegacy(readFileSync(path, 'utf8'), path);
    for (const problem of problems) this.log.warn(problem);
    this.legacy.set(channel, { ino: stat.ino, mtimeMs: stat.mtimeMs, size: stat.size, data });
    return data;
  }

  private legacyChannels(): string[] {
    try {
      return readdirSync(this.options.dir)
        .filter((file) => file.endsWith('.json') && !file.startsWith('.'))
        .map((file) => file.slice(0, -'.json'.length))
        .filter((name) => /^[\w-]+$/.test(name));
    } catch {
      return [];
    }
  }

  /**
   * Read-modify-write of nanobot's file under the cross-process lock; expired requests are dropped on the way, and
   * an earlier version's files are folded in (then renamed, once the new file holds them).
   */
  private async update<T>(change: (data: PairingData) => T): Promise<T> {
    mkdirSync(dirname(this.file), { recursive: true, mode: 0o700 });
    const release = await (await lockFile())(this.file, {
      realpath: false,
      stale: 10_000,
      retries: { retries: 50, minTimeout: 5, maxTimeout: 200, factor: 1.5 },
    });
    try {
      this.upstream = undefined;
      this.legacy.clear();
      const legacy = this.legacyChannels();
      const data: PairingData = {};
      for (const channel of new Set([...Object.keys(this.readUpstream()), ...legacy])) {
        data[channel] = structuredClone(this.read(channel));
      }
      const now = this.now();
      for (const part of Object.values(data)) part.pending = part.pending.filter((p) => p.expiresAt > now);
      const value = change(data);
      await writeFileAtomic(this.file, serializeUpstream(data, formatCode), 0o600);
      for (const channel of legacy) this.retireLegacy(channel);
      this.upstream = undefined;
      return value;
    } finally {
      await release().catch(() => {});
    }
  }

  private retireLegacy(channel: string): void {
    const path = this.legacyPath(channel);
    try {
      renameSync(path, `${path}.migrated`);
    } catch (error) {
      this.log.warn(`pairing file ${path}: could not rename it after folding it into ${this.file}: ${String(error)}`);
    }
    this.legacy.delete(channel);
  }
}

/** A channel name: word characters, and never a name every object has (`constructor`, `__proto__`…). */
/** A channel name, or an instance's runtime name (`feishu.<id>`, as upstream keys them). */
function validChannel(channel: string): boolean {
  return /^[\w-]+(\.[\w-]+)?$/.test(channel) && !(channel in Object.prototype);
}

function checkChannel(channel: string): void {
  if (!validChannel(channel)) throw new Error(`invalid channel name for pairing: ${channel}`);
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
