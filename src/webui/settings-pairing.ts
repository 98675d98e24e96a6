/**
 * The pairing queue in nanobot's `PairingPayload` shape:
 *   GET /api/settings/pairing                       pending codes (and, beyond nanobot's shape, `approved` senders)
 *   settings.pairing.approve / .deny {code}         as `nanobot channels pair approve|deny` and `/pairing`
 *   settings.pairing.revoke {channel, sender_id}    ours (nanobot's WebUI has no revoke): `channels pair revoke`
 * Over the gateway's pairing store (the file the CLI changes too): an approved sender is admitted with their next
 * message, and told so in their chat as `/pairing approve` does.
 */
import { z } from 'zod';
import { formatCode, normalizeCode, type PairingStore } from '../channels/pairing.js';
import type { PairingAccess, WebUiBackend } from '../channels/websocket/backend.js';
import { type ActionHandler, WebuiApiError, type WebuiApiModule } from './api.js';

interface PairingLastAction {
  ok: boolean;
  action: string;
  message: string;
  code?: string;
  channel?: string;
  sender_id?: string;
}

function pairingOf(backend: WebUiBackend): PairingAccess {
  const pairing = backend.pairing?.();
  if (!pairing) throw new WebuiApiError(503, 'the pairing store needs a running gateway');
  return pairing;
}

export function pairingPayload(store: PairingStore, lastAction?: PairingLastAction, now: number = Date.now()) {
  const requests = store.listPending().map((pending) => ({
    code: formatCode(pending.code),
    channel: pending.channel,
    sender_id: pending.senderId,
    created_at_ms: pending.createdAt,
    expires_at_ms: pending.expiresAt,
    expires_in_seconds: Math.max(0, Math.floor((pending.expiresAt - now) / 1000)),
  }));
  const approved = store.channels().flatMap((channel) =>
    Object.entries(store.approved(channel)).map(([senderId, info]) => ({
      channel,
      sender_id: senderId,
      ...(info.username ? { username: info.username } : {}),
      ...(info.approvedAt ? { approved_at: info.approvedAt } : {}),
    })),
  );
  return { requests, approved, ...(lastAction ? { last_action: lastAction } : {}) };
}

/** A code as nanobot's WebUI sends it (`ABCD-EFGH`); anything that cannot be one is refused before the store. */
const codePayload = z.looseObject({
  code: z
    .string({ error: 'Missing pairing code' })
    .trim()
    .min(1, 'Missing pairing code')
    .max(32, 'Pairing code not found or expired'),
});

const revokePayload = z.looseObject({
  channel: z.string({ error: 'missing channel' }).regex(/^[\w-]{1,64}$/, 'invalid channel name'),
  sender_id: z.string({ error: 'missing sender_id' }).trim().min(1, 'missing sender_id').max(256),
});

function parse<T>(schema: z.ZodType<T>, payload: unknown): T {
  const result = schema.safeParse(payload);
  if (result.success) return result.data;
  throw new WebuiApiError(400, result.error.issues[0]?.message ?? 'invalid payload');
}

const approve: ActionHandler = async ({ backend }, payload) => {
  const { code } = parse(codePayload, payload);
  const pairing = pairingOf(backend);
  const approved = await pairing.store.approve(normalizeCode(code));
  if (!approved) throw new WebuiApiError(404, 'Pairing code not found or expired');
  pairing.notifyApproved(approved);
  return pairingPayload(pairing.store, {
    ok: true,
    action: 'approve',
    message: `Approved ${approved.senderId} for ${approved.channel}`,
    channel: approved.channel,
    sender_id: approved.senderId,
    code: formatCode(normalizeCode(code)),
  });
};

const deny: ActionHandler = async ({ backend }, payload) => {
  const { code } = parse(codePayload, payload);
  const { store } = pairingOf(backend);
  const shown = formatCode(normalizeCode(code));
  if (!(await store.deny(normalizeCode(code)))) throw new WebuiApiError(404, 'Pairing code not found or expired');
  return pairingPayload(store, { ok: true, action: 'deny', message: `Denied pairing code ${shown}`, code: shown });
};

const revoke: ActionHandler = async ({ backend }, payload) => {
  const { channel, sender_id: senderId } = parse(revokePayload, payload);
  const { store } = pairingOf(backend);
  if (!(await store.revoke(channel, senderId))) {
    throw new WebuiApiError(404, `${senderId} was not approved on ${channel} by pairing`);
  }
  return pairingPayload(store, {
    ok: true,
    action: 'revoke',
    message: `Revoked ${senderId} on ${channel}`,
    channel,
    sender_id: senderId,
  });
};

export const settingsPairingModule: WebuiApiModule = {
  routes: {
    'settings/pairing': async ({ backend }) => pairingPayload(pairingOf(backend).store),
  },
  actions: {
    'settings.pairing.approve': approve,
    'settings.pairing.deny': deny,
    'settings.pairing.revoke': revoke,
  },
};
