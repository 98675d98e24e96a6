/**
 * The pairing file formats. nanobot keeps every channel in one `~/.nanobot/pairing.json`:
 * `{ "approved": { "<channel>": ["<sender id>", …] }, "pending": { "ABCD-EFGH": { "channel", "sender_id",
 * "created_at", "expires_at" } } }` (times in seconds). That is the file written here too, so approvals carry over
 * both ways; what nanobot's format has no room for (the chat a code came from, usernames, when a sender was
 * approved) rides along in fields nanobot ignores. Earlier versions of this project kept `pairing/<channel>.json`;
 * those are still read.
 */
import { z } from 'zod';
import { describeIssues, parseJsonAs } from '../util/json.js';

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

/** One channel's part. */
export interface ChannelPairing {
  approved: Record<string, ApprovedSender>;
  pending: PendingPairing[];
}

export type PairingData = Record<string, ChannelPairing>;

export interface Parsed<T> {
  data: T;
  problems: string[];
}

export const emptyChannel = (): ChannelPairing => ({ approved: {}, pending: [] });

const Root = z.looseObject({ approved: z.unknown().optional(), pending: z.unknown().optional() });
const Ids = z.array(z.union([z.string(), z.number()]));
const UpstreamPending = z.looseObject({
  channel: z.string().min(1),
  sender_id: z.union([z.string(), z.number()]),
  expires_at: z.number(),
  created_at: z.number().catch(0),
  chat_id: z.string().optional().catch(undefined),
  username: z.string().optional().catch(undefined),
});
const Info = z.record(
  z.string(),
  z.record(
    z.string(),
    z.looseObject({ username: z.string().optional().catch(undefined), approved_at: z.string().catch('') }),
  ),
);

/** nanobot's `pairing.json`. Unusable parts read as empty, each named in `problems`. */
export function parseUpstream(text: string, path: string): Parsed<PairingData> {
  const parsed = parseJsonAs(text, Root, `pairing file ${path}`);
  if (!parsed.ok) return { data: {}, problems: [`${parsed.problem}; read as empty`] };
  const problems: string[] = [];
  const data: PairingData = {};
  const channel = (name: string) => {
    data[name] ??= emptyChannel();
    return data[name];
  };
  const info = Info.safeParse((parsed.value as Record<string, unknown>).approved_info ?? {});
  const approved = parsed.value.approved;
  if (approved !== undefined && (typeof approved !== 'object' || approved === null || Array.isArray(approved))) {
    problems.push(`pairing file ${path}: approved is not an object of channels; ignored`);
  } else {
    for (const [name, ids] of Object.entries(approved ?? {})) {
      const checked = Ids.safeParse(ids);
      if (!checked.success) {
        problems.push(`pairing file ${path}: approved.${name}: ${describeIssues(checked.error)}; ignored`);
        continue;
      }
      for (const id of checked.data.map(String)) {
        const about = info.success ? info.data[name]?.[id] : undefined;
        channel(name).approved[id] = {
          ...(about?.username ? { username: about.username } : {}),
          approvedAt: about?.approved_at ?? '',
        };
      }
    }
  }
  const pending = parsed.value.pending;
  if (pending !== undefined && (typeof pending !== 'object' || pending === null || Array.isArray(pending))) {
    problems.push(`pairing file ${path}: pending is not an object of codes; ignored`);
  } else {
    for (const [code, entry] of Object.entries(pending ?? {})) {
      const checked = UpstreamPending.safeParse(entry);
      if (!checked.success) {
        problems.push(`pairing file ${path}: pending.${code}: ${describeIssues(checked.error)}; dropped`);
        continue;
      }
      const p = checked.data;
      channel(p.channel).pending.push({
        code: code.toUpperCase().replace(/[^A-Z0-9]/g, ''),
        senderId: String(p.sender_id),
        ...(p.username ? { username: p.username } : {}),
        chatId: p.chat_id ?? String(p.sender_id),
        createdAt: Math.round(p.created_at * 1000),
        expiresAt: Math.round(p.expires_at * 1000),
      });
    }
  }
  return { data, problems };
}

/** nanobot's `pairing.json` for `data`: codes shown `ABCD-EFGH`, ids sorted, times in seconds. */
export function serializeUpstream(data: PairingData, formatCode: (code: string) => string): string {
  const approved: Record<string, string[]> = {};
  const info: Record<string, Record<string, { username?: string; approved_at: string }>> = {};
  const pending: Record<string, Record<string, unknown>> = {};
  for (const [name, part] of Object.entries(data).sort(([a], [b]) => a.localeCompare(b))) {
    const ids = Object.keys(part.approved).sort();
    if (ids.length) approved[name] = ids;
    for (const id of ids) {
      const sender = part.approved[id];
      if (!sender) continue;
      info[name] ??= {};
      info[name][id] = { ...(sender.username ? { username: sender.username } : {}), approved_at: sender.approvedAt };
    }
    for (const p of part.pending) {
      pending[formatCode(p.code)] = {
        channel: name,
        sender_id: p.senderId,
        created_at: p.createdAt / 1000,
        expires_at: p.expiresAt / 1000,
        chat_id: p.chatId,
        ...(p.username ? { username: p.username } : {}),
      };
    }
  }
  return `${JSON.stringify({ approved, pending, approved_info: info }, null, 2)}\n`;
}

const LegacyApproved = z.union([
  z.array(z.union([z.string(), z.number()])), // A hand-written list of ids is accepted too.
  z.record(
    z.string(),
    z.looseObject({ username: z.string().optional().catch(undefined), approvedAt: z.string().catch('') }),
  ),
]);
const LegacyPending = z.looseObject({
  code: z.string(),
  senderId: z.string(),
  expiresAt: z.number(),
  username: z.string().optional().catch(undefined),
  chatId: z.string().catch(''),
  createdAt: z.number().catch(0),
});

/**
 * An earlier version's `pairing/<channel>.json`. A damaged file must not lock everyone out or crash the gateway:
 * unusable parts read as empty, and each one is named in `problems`.
 */
export function parseLegacy(text: string, path: string): Parsed<ChannelPairing> {
  const parsed = parseJsonAs(text, Root, `pairing file ${path}`);
  if (!parsed.ok) return { data: emptyChannel(), problems: [`${parsed.problem}; read as empty`] };
  const problems: string[] = [];
  let approved: Record<string, ApprovedSender> = {};
  if (parsed.value.approved !== undefined) {
    const checked = LegacyApproved.safeParse(parsed.value.approved);
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
      const checked = LegacyPending.safeParse(entry);
      if (checked.success) pending.push(checked.data);
      else problems.push(`pairing file ${path}: pending.${i}: ${describeIssues(checked.error)}; dropped`);
    });
  }
  return { data: { approved, pending }, problems };
}
