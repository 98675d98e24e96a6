/**
 * One Baileys socket on the saved keys: the configuration shared by the login and the running channel. Baileys'
 * own log is kept quiet (it logs protocol frames, some with key material, at trace/debug): its warnings and errors
 * reach nanobot's debug log, nothing else.
 */
import type { ILogger } from 'baileys/lib/Utils/logger.js';
import type { Logger } from '../../util/log.js';
import { type AuthStore, openAuthStore } from './auth-store.js';
import type { WhatsAppSdk } from './index.js';

export type WASocket = ReturnType<WhatsAppSdk['makeWASocket']>;

/** Baileys' pino-shaped logger over ours: only warnings and errors, as one line without the frame objects. */
export function quietLogger(log: Logger): ILogger {
  const line = (obj: unknown, msg?: string) => {
    const text = msg ?? (typeof obj === 'string' ? obj : '');
    const err = obj && typeof obj === 'object' && 'err' in obj ? String((obj as { err: unknown }).err) : '';
    return `baileys: ${text}${err ? ` (${err.slice(0, 200)})` : ''}`;
  };
  const logger: ILogger = {
    level: 'warn',
    child: () => logger,
    trace: () => undefined,
    debug: () => undefined,
    info: () => undefined,
    warn: (obj, msg) => log.debug(line(obj, msg)),
    error: (obj, msg) => log.debug(line(obj, msg)),
  };
  return logger;
}

export async function authStoreFor(sdk: WhatsAppSdk, folder: string): Promise<AuthStore> {
  return openAuthStore(folder, {
    BufferJSON: sdk.BufferJSON,
    initAuthCreds: sdk.initAuthCreds,
    appStateKey: (value) => sdk.proto.Message.AppStateSyncKeyData.fromObject(value as Record<string, unknown>),
  });
}

export interface SocketOptions {
  url: URL;
  store: AuthStore;
  log: Logger;
}

export function openSocket(sdk: WhatsAppSdk, options: SocketOptions): WASocket {
  const logger = quietLogger(options.log);
  const socket = sdk.makeWASocket({
    auth: { creds: options.store.creds, keys: sdk.makeCacheableSignalKeyStore(options.store.keys, logger) },
    logger,
    waWebSocketUrl: options.url.href,
    browser: ['nanobot', 'Chrome', '1.0'],
    // Online presence would stop the phone from notifying its owner; nanobot is a device, not the person.
    markOnlineOnConnect: false,
    syncFullHistory: false,
    shouldSyncHistoryMessage: () => false,
    // Chats nanobot never answers in: status updates, broadcast lists, channels.
    shouldIgnoreJid: (jid) => jid === 'status@broadcast' || jid.endsWith('@broadcast') || jid.endsWith('@newsletter'),
  });
  oneSignalTransactionAtATime(socket);
  socket.ev.on('creds.update', () => {
    options.store.saveCreds().catch((err: unknown) => options.log.warn(`whatsapp: saving the session failed: ${err}`));
  });
  return socket;
}

/**
 * Baileys (7.0.0-rc14) runs each key-store transaction under a mutex of its own key: a reply's encryption under the
 * account's id, an incoming message's decryption under the sender's. Each reads the Signal session into its own
 * transaction cache and writes it back when it ends, so a reply encrypted while a message from the same person is
 * being decrypted reads the session from before that step, and reuses a message key: the phone cannot decrypt the
 * reply (lost replies in a burst, under load). One key for every transaction makes them take turns. Runs before the
 * socket handles its first frame (nothing is received before makeWASocket returns).
 */
export function oneSignalTransactionAtATime(socket: Pick<WASocket, 'authState'>): void {
  const keys = socket.authState.keys;
  const transaction = keys.transaction.bind(keys);
  keys.transaction = (work, _key) => transaction(work, 'nanobot-signal-store');
}
