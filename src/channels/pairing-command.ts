/**
 * `/pairing list | approve <code> | deny <code> | revoke <channel> <id>`: the text interface to the pairing store,
 * shared by the chat command and `nanobot channels pair`.
 */
import type { Command } from '../agent/commands/types.js';
import { formatCode, type PairingResult, type PairingStore } from './pairing.js';

/** What an approved sender is told in their chat. */
export const approvedNotice = 'You are approved: you can talk to the agent now.';

export const PAIRING_USAGE = '/pairing [list | approve <code> | deny <code> | revoke <channel> <id>]';

export interface PairingCommandResult {
  reply: string;
  /** Set when a sender was approved: the gateway tells them in their chat. */
  approved?: PairingResult;
}

export async function runPairingCommand(store: PairingStore, args: string): Promise<PairingCommandResult> {
  const [sub = 'list', ...rest] = args.trim().split(/\s+/).filter(Boolean);
  switch (sub.toLowerCase()) {
    case 'list':
      return { reply: listText(store) };
    case 'approve': {
      const code = rest[0];
      if (!code) return { reply: `Usage: ${PAIRING_USAGE}` };
      const approved = await store.approve(code);
      if (!approved)
        return { reply: `No pending pairing request has the code ${code} (codes expire after 10 minutes).` };
      return { reply: `Approved ${who(approved)} on ${approved.channel}. They can talk to the agent now.`, approved };
    }
    case 'deny': {
      const code = rest[0];
      if (!code) return { reply: `Usage: ${PAIRING_USAGE}` };
      const denied = await store.deny(code);
      return {
        reply: denied ? `Denied ${who(denied)} on ${denied.channel}.` : `No pending request has the code ${code}.`,
      };
    }
    case 'revoke': {
      const [channel, senderId] = rest;
      if (!channel || !senderId) return { reply: `Usage: ${PAIRING_USAGE}` };
      const revoked = await store.revoke(channel, senderId);
      return {
        reply: revoked
          ? `Revoked ${senderId} on ${channel}; they get a new pairing code if they write again.`
          : `${senderId} was not approved on ${channel} by pairing (allowFrom entries are changed in config.json).`,
      };
    }
    default:
      return { reply: `Unknown subcommand "${sub}". Usage: ${PAIRING_USAGE}` };
  }
}

function listText(store: PairingStore): string {
  const lines: string[] = [];
  const pending = store.listPending();
  if (pending.length === 0) lines.push('No pending pairing requests.');
  else {
    lines.push('Pending pairing requests:');
    for (const p of pending) {
      const minutes = Math.max(1, Math.ceil((p.expiresAt - Date.now()) / 60_000));
      lines.push(`- ${formatCode(p.code)}  ${p.channel}  ${who(p)}  (expires in ${minutes} min)`);
    }
  }
  const approved = store
    .channels()
    .flatMap((channel) => Object.entries(store.approved(channel)).map(([id, info]) => ({ channel, id, ...info })));
  if (approved.length > 0) {
    lines.push('Approved by pairing:');
    for (const a of approved) lines.push(`- ${a.channel}  ${who({ senderId: a.id, ...a })}`);
  }
  return lines.join('\n');
}

function who(sender: { senderId: string; username?: string }): string {
  return sender.username ? `@${sender.username.replace(/^@/, '')} (${sender.senderId})` : sender.senderId;
}

/**
 * `/pairing` for the agent's command router (the gateway registers it). Chat channels let only owners' `/pairing`
 * messages through (ChatChannel checks), and an approved sender is told in their chat via `notify`.
 */
export function pairingChatCommand(store: PairingStore, notify: (approved: PairingResult) => void): Command {
  return {
    name: '/pairing',
    description: 'approve or deny people who asked for access with a pairing code',
    usage: PAIRING_USAGE,
    tier: 'priority',
    async run(ctx) {
      const { reply, approved } = await runPairingCommand(store, ctx.args);
      if (approved) notify(approved);
      return reply;
    },
  };
}
