/**
 * Linking this gateway as a device of the phone's WhatsApp account: Baileys shows a QR code (rotated every ~20 s),
 * the phone scans it, the server confirms the pairing and asks for a fresh connection (515 "restart required"), and
 * the login is done once that connection opens with the saved keys. A session the phone has logged out is cleared
 * first, so the login starts over from a new code.
 */
import { errorMessage, UserError } from '../../util/errors.js';
import type { LoginContext } from '../definition.js';
import { forgetSession, hasLinkedSession } from './auth-store.js';
import { authFolder, socketUrl, type WhatsAppSdk, type WhatsAppSettings } from './index.js';
import { authStoreFor, openSocket, type WASocket } from './socket.js';

/** Fresh connections one login may need (pairing, then the restart the server asks for). */
const MAX_CONNECTIONS = 4;

export async function linkDevice(sdk: WhatsAppSdk, settings: WhatsAppSettings, context: LoginContext): Promise<void> {
  const folder = authFolder(settings, context.dataDir);
  const url = socketUrl(settings);
  const wasLinked = await hasLinkedSession(folder);
  if (!wasLinked) {
    await forgetSession(folder); // half a pairing from an earlier attempt would be reused otherwise
    context.out('Open WhatsApp on your phone → Settings → Linked devices → Link a device, and scan this code:\n');
  }
  let store = await authStoreFor(sdk, folder);
  for (let attempt = 0; attempt < MAX_CONNECTIONS; attempt++) {
    const outcome = await oneConnection(sdk, openSocket(sdk, { url, store, log: context.log }), context);
    if (outcome.kind === 'open') {
      await store.saveCreds();
      context.out(`WhatsApp is linked${outcome.account ? ` as ${outcome.account}` : ''}; the keys are in ${folder}.\n`);
      return;
    }
    if (outcome.kind === 'restart') {
      // The pairing's keys are in memory; the new connection must log in with them, so they are on disk first.
      await store.saveCreds();
      continue;
    }
    if (outcome.kind === 'logged-out') {
      await forgetSession(folder);
      store = await authStoreFor(sdk, folder);
      context.out('The saved WhatsApp session was logged out on the phone; link it again with this code:\n');
      continue;
    }
    throw new UserError(`WhatsApp login failed: ${outcome.reason}`, 'Run `nanobot channels login whatsapp` again.');
  }
  throw new UserError('WhatsApp login did not finish.', 'Run `nanobot channels login whatsapp` again.');
}

type Outcome =
  | { kind: 'open'; account?: string }
  | { kind: 'restart' }
  | { kind: 'logged-out' }
  | { kind: 'failed'; reason: string };

function oneConnection(sdk: WhatsAppSdk, socket: WASocket, context: LoginContext): Promise<Outcome> {
  return new Promise((resolve, reject) => {
    const finish = (outcome: Outcome | Error) => {
      context.signal?.removeEventListener('abort', abort);
      socket.ev.removeAllListeners('connection.update');
      if (outcome instanceof Error) {
        socket.end(undefined);
        reject(outcome);
        return;
      }
      if (outcome.kind === 'open') socket.end(undefined);
      resolve(outcome);
    };
    const abort = () =>
      finish(new UserError('WhatsApp login cancelled.', 'Run `nanobot channels login whatsapp` again.'));
    if (context.signal?.aborted) return abort();
    context.signal?.addEventListener('abort', abort, { once: true });
    socket.ev.on('connection.update', (update) => {
      if (update.qr) {
        if (context.qr) context.qr(update.qr);
        else context.out(`${update.qr}\n`);
      }
      if (update.connection === 'open') {
        const account = socket.user?.id ? sdk.jidDecode(socket.user.id)?.user : undefined;
        finish({ kind: 'open', ...(account ? { account: `+${account}` } : {}) });
      } else if (update.connection === 'close') {
        const code = statusCode(update.lastDisconnect?.error);
        if (code === sdk.DisconnectReason.restartRequired) finish({ kind: 'restart' });
        else if (code === sdk.DisconnectReason.loggedOut) finish({ kind: 'logged-out' });
        else if (code === sdk.DisconnectReason.timedOut)
          finish({ kind: 'failed', reason: 'the QR code expired before it was scanned' });
        else finish({ kind: 'failed', reason: describeClose(update.lastDisconnect?.error) });
      }
    });
  });
}

/** Baileys closes with a Boom error whose `output.statusCode` says why. */
export function statusCode(error: unknown): number | undefined {
  const code = (error as { output?: { statusCode?: unknown } } | undefined)?.output?.statusCode;
  return typeof code === 'number' ? code : undefined;
}

export function describeClose(error: unknown): string {
  const code = statusCode(error);
  const message = error === undefined ? 'the connection closed' : errorMessage(error);
  return code === undefined ? message : `${message} (status ${code})`;
}
