/**
 * A Matrix user with their own real matrix-js-sdk and Rust crypto (an in-memory store), talking to the fake
 * homeserver as Element would: sends encrypted messages in encrypted rooms and reads the bot's replies decrypted.
 */
import * as sdk from 'matrix-js-sdk';
import type { FakeHomeserver } from './fake-homeserver.js';

export interface E2eeUser {
  client: sdk.MatrixClient;
  /** Sends a text message (encrypted, the room being encrypted); returns its event id. */
  say(roomId: string, body: string): Promise<string>;
  /** The bot's messages in the room as this user reads them: decrypted text, or why it cannot be read. */
  botTexts(roomId: string): Promise<string[]>;
  stop(): void;
}

export async function startE2eeUser(hs: FakeHomeserver, userId: string): Promise<E2eeUser> {
  const { accessToken, deviceId } = hs.addUser(userId);
  const client = sdk.createClient({ baseUrl: hs.url, accessToken, userId, deviceId });
  await client.initRustCrypto({ useIndexedDB: false });
  const prepared = new Promise<void>((resolve, reject) => {
    client.on(sdk.ClientEvent.Sync, (state) => {
      if (state === sdk.SyncState.Prepared) resolve();
      if (state === sdk.SyncState.Error) reject(new Error('user sync failed'));
    });
  });
  await client.startClient({ initialSyncLimit: 20, lazyLoadMembers: false });
  await prepared;
  return {
    client,
    async say(roomId, body) {
      const { event_id } = await client.sendEvent(roomId, sdk.EventType.RoomMessage, {
        msgtype: sdk.MsgType.Text,
        body,
      });
      return event_id;
    },
    async botTexts(roomId) {
      const events = client.getRoom(roomId)?.getLiveTimeline().getEvents() ?? [];
      const texts: string[] = [];
      for (const event of events) {
        if (event.getSender() !== hs.botId) continue;
        await client.decryptEventIfNeeded(event);
        if (event.isDecryptionFailure()) texts.push(`(undecryptable: ${event.decryptionFailureReason})`);
        else if (event.getType() === 'm.room.message') texts.push(String(event.getContent().body));
      }
      return texts;
    },
    stop: () => client.stopClient(),
  };
}
