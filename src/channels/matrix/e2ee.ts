/**
 * End-to-end encryption (`channels.matrix.e2eeEnabled`, on by default as in nanobot): matrix-js-sdk's Rust crypto
 * (matrix-sdk-crypto-wasm) with its store kept on disk (crypto-store.ts). The device keeps the id of its access
 * token, so the keys it uploaded stay valid across restarts. Like nanobot, it shares room keys with every device in
 * the room, verified or not, and accepts messages from unverified devices; it is itself an unverified device until
 * its owner verifies it.
 */
import type { MatrixClient, MatrixEvent } from 'matrix-js-sdk';
import { UserError } from '../../util/errors.js';
import type { Logger } from '../../util/log.js';
import { channelSdk } from '../settings.js';
import { CryptoStore, cryptoStorePath, type FakeIndexedDb, writeDeviceStatus } from './crypto-store.js';

type Sdk = typeof import('matrix-js-sdk');

/** Starts the client's Rust crypto on the store saved for this device; returns that store (to save it later). */
export async function startCrypto(client: MatrixClient, dataDir: string, log: Logger): Promise<CryptoStore> {
  const userId = client.getSafeUserId();
  const deviceId = client.getDeviceId();
  if (!deviceId) {
    throw new UserError(
      'End-to-end encryption needs the device of the Matrix access token, and the homeserver did not say it.',
      'Set channels.matrix.deviceId to the device the access token belongs to, or use a password login.',
    );
  }
  const fake = await channelSdk(
    'matrix',
    'Matrix',
    'fake-indexeddb',
    () => import('fake-indexeddb') as unknown as Promise<FakeIndexedDb>,
  );
  const path = cryptoStorePath(dataDir, userId, deviceId);
  const store = await CryptoStore.open(fake, path, log);
  await quietRustLogs();
  await client.initRustCrypto({ useIndexedDB: true });
  // The device's new keys are on disk before the SDK uploads them.
  await store.save();
  const crypto = client.getCrypto();
  const keys = await crypto?.getOwnDeviceKeys();
  const shown = fingerprint(keys?.ed25519 ?? '');
  // Its own device counts as trusted locally; verified means cross-signed by the account, as Element shows it.
  const verified = (await crypto?.getDeviceVerificationStatus(userId, deviceId))?.crossSigningVerified === true;
  await writeDeviceStatus(dataDir, { deviceId, fingerprint: shown, verified });
  log.info(`end-to-end encryption on: device ${deviceId}, fingerprint ${shown}${verified ? '' : ' (not verified)'}`);
  return store;
}

/**
 * The SDK turns the Rust side's tracing on at debug level as it starts the crypto, written straight to the console
 * (every to-device message, every key id): its warnings and errors are all a gateway's output should show.
 */
async function quietRustLogs(): Promise<void> {
  const wasm = await channelSdk(
    'matrix',
    'Matrix',
    '@matrix-org/matrix-sdk-crypto-wasm',
    () => import('@matrix-org/matrix-sdk-crypto-wasm'),
  );
  const proto = wasm.Tracing.prototype as { turnOn(): void; minLevel: unknown; quieted?: true };
  if (proto.quieted) return;
  const turnOn = proto.turnOn;
  proto.turnOn = function (this: typeof proto) {
    this.minLevel = wasm.LoggerLevel.Warn;
    turnOn.call(this);
  };
  proto.quieted = true;
}

/** The ed25519 key in groups of four, as Element shows a session key. */
export function fingerprint(key: string): string {
  return key.replace(/(.{4})(?=.)/g, '$1 ');
}

/**
 * The event decrypted, or `undefined` while its room key is missing: then `retry` runs once the key arrives
 * (the SDK decrypts again as soon as a room key comes, by to-device message or key request).
 */
export async function decrypted(
  sdk: Sdk,
  client: MatrixClient,
  event: MatrixEvent,
  retry: (event: MatrixEvent) => void,
  log: Logger,
): Promise<MatrixEvent | undefined> {
  await client.decryptEventIfNeeded(event);
  if (!event.isDecryptionFailure()) return event;
  log.info(`waiting for the room key of ${event.getId()} from ${event.getSender()} (${event.decryptionFailureReason})`);
  const onDecrypted = (ev: MatrixEvent) => {
    if (ev.isDecryptionFailure()) return;
    event.off(sdk.MatrixEventEvent.Decrypted, onDecrypted);
    retry(ev);
  };
  event.on(sdk.MatrixEventEvent.Decrypted, onDecrypted);
  return undefined;
}
