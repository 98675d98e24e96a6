/**
 * Matrix through matrix-js-sdk: the SDK's /sync loop (one client for the channel's life, so a reconnect resumes from
 * the last `since` token and nothing sent meanwhile is lost; what the first sync after startup replays is history
 * and is not answered), HTML replies up to 4000 characters, streaming by `m.replace` edits, files through the media
 * repository, typing notices, and invites from allowed users accepted. Encrypted rooms (e2ee.ts): messages are
 * decrypted (one whose key is missing waits for the key), replies encrypted; an unencrypted message in an encrypted
 * room is not answered. With `e2eeEnabled: false`, an allowed user who writes in an encrypted room is told once, in
 * plain text, that the bot cannot read it.
 */
import { join } from 'node:path';
import type { IRequestOpts, MatrixClient, MatrixEvent, Room, SyncState, SyncStateData } from 'matrix-js-sdk';
import { errorMessage, UserError } from '../../util/errors.js';
import { type Logger, logFailure } from '../../util/log.js';
import { isAllowed } from '../access.js';
import type { ChannelCapabilities } from '../channel.js';
import { PairingStore } from '../pairing.js';
import type { ChatPlatform, OutgoingFile, OutgoingPart, PlatformLink, ReplyTarget } from '../platform.js';
import { editContent, fileContent, type MessageContent, textContent } from './content.js';
import type { CryptoStore } from './crypto-store.js';
import { decrypted, startCrypto } from './e2ee.js';
import { senderOf, toIncoming } from './events.js';
import { homeserverRoot, type MatrixSettings } from './index.js';
import { downloadMedia, uploadFile } from './media.js';
import { currentSession, describeConnectError, isTokenError, type MatrixSession, renewSession } from './session.js';

type Sdk = typeof import('matrix-js-sdk');

const CONNECT_TIMEOUT_MS = 60_000;
const REQUEST_TIMEOUT_MS = 30_000;
const MAX_RATE_LIMIT_WAIT_MS = 30_000;
/** The framework renews "typing" every 4 s while the agent works; a notice lapses soon after it stops. */
const TYPING_TIMEOUT_MS = 6_000;
const ENCRYPTED_NOTICE =
  'This room is end-to-end encrypted, and this assistant cannot read encrypted messages. ' +
  'Please talk to it in a room without encryption (for a direct chat: start one with encryption turned off).';

export interface MatrixPlatformOptions {
  sdk: Sdk;
  settings: () => MatrixSettings;
  log: Logger;
  /** The gateway's data dir: the password-login session and the pairing store (for invites) live under it. */
  dataDir: string;
}

export class MatrixPlatform implements ChatPlatform {
  readonly capabilities: ChannelCapabilities = {
    maxMessageLength: 4000,
    markup: 'html',
    editMessages: true,
    media: true,
    threads: true,
    buttons: false,
  };
  private client?: MatrixClient;
  /** The client's encryption keys on disk (when e2eeEnabled). */
  private crypto?: CryptoStore;
  /** The settings the client was made for: a config edit that changes them makes a new client. */
  private clientKey = '';
  /** The client's token comes from our password login (session.json), so it may be renewed. */
  private sessionSaved = false;
  /** The client's first (initial) sync is done: later events are live messages. */
  private live = false;
  private connected = false;
  private link?: PlatformLink;
  private detach?: () => void;
  /** Incoming messages in the order the SDK delivered them. */
  private inbound: Promise<void> = Promise.resolve();
  private readonly invitesSeen = new Set<string>();
  private readonly directRooms = new Set<string>();
  private readonly encryptedNoticeSent = new Set<string>();
  private readonly typingRooms = new Set<string>();
  /** Read-only view of the gateway's pairing store: paired users may invite the bot too. */
  private readonly pairing: PairingStore;

  constructor(private readonly options: MatrixPlatformOptions) {
    this.pairing = new PairingStore({ dir: join(options.dataDir, 'pairing') });
  }

  async connect(link: PlatformLink): Promise<void> {
    const client = await this.clientFor(this.options.settings(), link.log);
    this.link = link;
    this.detach = this.listen(client, link);
    try {
      await this.startSyncing(client, link);
    } catch (err) {
      this.detach();
      this.detach = undefined;
      client.stopClient();
      throw err;
    }
    this.connected = true;
    link.log.info(`connected to ${client.baseUrl} as ${client.getUserId()}`);
  }

  async disconnect(): Promise<void> {
    this.connected = false;
    this.link = undefined;
    this.detach?.();
    this.detach = undefined;
    // The client and its store stay: the next connect resumes the sync where this one stopped.
    this.client?.stopClient();
    await this.inbound;
    await this.crypto?.save();
  }

  async sendText(target: ReplyTarget, part: OutgoingPart): Promise<string> {
    const client = this.requireClient();
    const eventId = await this.sendContent(client, target.chatId, textContent(part, target));
    this.stopTyping(client, target.chatId);
    return eventId;
  }

  async editText(target: ReplyTarget, messageId: string, part: OutgoingPart): Promise<void> {
    await this.sendContent(this.requireClient(), target.chatId, editContent(part, messageId));
  }

  async sendFile(target: ReplyTarget, file: OutgoingFile): Promise<void> {
    const client = this.requireClient();
    this.refuseEncrypted(client, target.chatId, 'file');
    const uploaded = await uploadFile(client, file);
    await this.sendContent(
      client,
      target.chatId,
      fileContent(target, { ...uploaded, name: file.name, kind: file.kind }),
    );
  }

  async sendTyping(target: ReplyTarget): Promise<void> {
    const client = this.requireClient();
    this.typingRooms.add(target.chatId);
    await client.sendTyping(target.chatId, true, TYPING_TIMEOUT_MS);
  }

  // ── connection ───────────────────────────────────────────────────────────────────────────────────────────

  /** The client for these settings (kept across reconnects), its access token checked with the homeserver. */
  private async clientFor(settings: MatrixSettings, log: Logger): Promise<MatrixClient> {
    const baseUrl = homeserverRoot(settings.homeserver);
    const key = JSON.stringify([baseUrl, settings.userId, settings.accessToken, settings.password, settings.deviceId]);
    const { sdk, dataDir } = this.options;
    try {
      let client = this.client && key === this.clientKey ? this.client : undefined;
      let saved = this.sessionSaved;
      let session: MatrixSession | undefined;
      if (!client) {
        session = await currentSession(sdk, settings, baseUrl, dataDir, log);
        client = this.newClient(baseUrl, settings, session);
        saved = session.saved;
      }
      let device: string | undefined;
      try {
        device = await this.verify(client, settings);
      } catch (err) {
        // A token from our own password login that the server forgot: log in again.
        if (!saved || !isTokenError(err)) throw err;
        session = await renewSession(sdk, settings, baseUrl, dataDir, log);
        client = this.newClient(baseUrl, settings, session);
        device = await this.verify(client, settings);
      }
      if (client !== this.client) {
        this.crypto = undefined;
        if (session && settings.e2eeEnabled) {
          const deviceId = this.deviceFor(session, device);
          // The encryption keys belong to one device: the client must know which one the token is.
          if (deviceId !== client.getDeviceId()) client = this.newClient(baseUrl, settings, { ...session, deviceId });
          this.crypto = await startCrypto(client, dataDir, log);
        }
        this.client?.stopClient();
        this.client = client;
        this.clientKey = key;
        this.sessionSaved = saved;
        this.live = false;
        this.invitesSeen.clear();
      }
      return client;
    } catch (err) {
      throw describeConnectError(err, baseUrl);
    }
  }

  /** The token's device (whoami), which a configured deviceId must match: keys made for another are refused. */
  private deviceFor(session: MatrixSession, whoamiDevice: string | undefined): string | undefined {
    if (session.deviceId && whoamiDevice && session.deviceId !== whoamiDevice) {
      throw new UserError(
        `The Matrix access token belongs to device ${whoamiDevice}, not to channels.matrix.deviceId (${session.deviceId}).`,
        'Correct deviceId (or leave it empty): end-to-end encryption keys are made for one device.',
      );
    }
    return whoamiDevice ?? session.deviceId;
  }

  private newClient(baseUrl: string, settings: MatrixSettings, session: MatrixSession): MatrixClient {
    const { sdk } = this.options;
    const platform = this;
    // A store whose sync token survives stop/start: a restarted client asks for what happened since, not for
    // a fresh initial sync (which would show messages sent while disconnected as old history). Its save hook,
    // which the SDK awaits after each processed sync and before the next request, writes the encryption keys.
    const store = new (class extends sdk.MemoryStore {
      override getSavedSyncToken(): Promise<string | null> {
        return Promise.resolve(this.getSyncToken());
      }
      override wantsSave(): boolean {
        return platform.crypto !== undefined;
      }
      override async save(): Promise<void> {
        await platform.crypto?.save();
      }
    })();
    return sdk.createClient({
      baseUrl,
      accessToken: session.accessToken,
      userId: settings.userId,
      ...(session.deviceId ? { deviceId: session.deviceId } : {}),
      store,
    });
  }

  /** Checks the token is the bot account's; returns its device. */
  private async verify(client: MatrixClient, settings: MatrixSettings): Promise<string | undefined> {
    const { user_id: owner, device_id: device } = await client.whoami();
    if (owner !== settings.userId) {
      throw new UserError(
        `The Matrix access token belongs to ${owner}, not to channels.matrix.userId (${settings.userId}).`,
        'Use the bot account’s token, or correct userId.',
      );
    }
    return device;
  }

  /** Starts the SDK's sync loop; resolves after the first sync, rejects when it fails before that. */
  private async startSyncing(client: MatrixClient, link: PlatformLink): Promise<void> {
    const { ClientEvent, SyncState: State } = this.options.sdk;
    let stop = () => {};
    const prepared = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () => finish(new Error('the homeserver did not answer /sync within 60 s')),
        CONNECT_TIMEOUT_MS,
      );
      timer.unref?.();
      const onSync = (state: SyncState, _previous: SyncState | null, data?: SyncStateData) => {
        if (state === State.Prepared) finish();
        else if (state === State.Error || state === State.Reconnecting) finish(data?.error ?? new Error('sync failed'));
        else if (state === State.Stopped) finish(new Error('disconnected while connecting'));
      };
      const finish = (err?: unknown) => {
        clearTimeout(timer);
        client.off(ClientEvent.Sync, onSync);
        if (err === undefined) resolve();
        else reject(err);
      };
      stop = () => finish(new Error('disconnected while connecting'));
      client.on(ClientEvent.Sync, onSync);
    });
    prepared.catch(() => undefined);
    await client.startClient({ initialSyncLimit: 10, lazyLoadMembers: false });
    if (this.link !== link) stop();
    try {
      await prepared;
    } catch (err) {
      throw describeConnectError(err, client.baseUrl);
    }
  }

  private listen(client: MatrixClient, link: PlatformLink): () => void {
    const { ClientEvent, RoomEvent, SyncState: State } = this.options.sdk;
    const onTimeline = (
      event: MatrixEvent,
      room: Room | undefined,
      toStartOfTimeline: boolean | undefined,
      removed: boolean,
      data: { liveEvent?: boolean },
    ) => {
      // Back-pagination, and everything the initial sync replays, is history: only live events are messages.
      if (toStartOfTimeline || removed || !room || !data.liveEvent || !this.live) return;
      this.inbound = this.inbound
        .then(() => this.handle(client, event, room, link))
        .catch((err: unknown) => link.log.warn(`handling ${event.getId()} failed: ${errorMessage(err)}`));
    };
    const onSync = (state: SyncState, _previous: SyncState | null, data?: SyncStateData) => {
      if (state === State.Prepared) this.live = true;
      if ((state === State.Prepared || state === State.Syncing) && this.live) {
        void this.acceptInvites(client, link).catch(logFailure(link.log, 'accepting invites failed'));
      }
      if (!this.connected || (state !== State.Error && state !== State.Reconnecting)) return;
      this.connected = false;
      link.failed(new Error(`Matrix sync failed: ${errorMessage(data?.error ?? 'connection lost')}`));
    };
    client.on(RoomEvent.Timeline, onTimeline);
    client.on(ClientEvent.Sync, onSync);
    return () => {
      client.off(RoomEvent.Timeline, onTimeline);
      client.off(ClientEvent.Sync, onSync);
    };
  }

  // ── inbound ──────────────────────────────────────────────────────────────────────────────────────────────

  private async handle(client: MatrixClient, event: MatrixEvent, room: Room, link: PlatformLink): Promise<void> {
    const me = client.getSafeUserId();
    if (event.getSender() === me || room.getMyMembership() !== 'join') return;
    const settings = this.options.settings();
    if (event.isEncrypted() && this.crypto) {
      const retry = (later: MatrixEvent) => {
        this.inbound = this.inbound
          .then(() => (this.link === link ? this.handle(client, later, room, link) : undefined))
          .catch((err: unknown) => link.log.warn(`handling ${later.getId()} failed: ${errorMessage(err)}`));
      };
      if (!(await decrypted(this.options.sdk, client, event, retry, link.log))) return;
    } else if (event.getType() === 'm.room.encrypted') {
      return this.encryptedRoom(client, event, room, link);
    } else if (room.hasEncryptionStateEvent() && this.crypto) {
      // Anyone able to post in the room (or a homeserver) can send plain text that poses as the conversation.
      if (event.getType() === 'm.room.message')
        link.log.warn(`ignored an unencrypted message from ${event.getSender()} in encrypted room ${room.roomId}`);
      return;
    }
    if (event.getType() !== 'm.room.message') return;
    const displayName = room.getMember(me)?.rawDisplayName;
    const incoming = toIncoming(event, room, {
      me: { userId: me, ...(displayName && displayName !== me ? { displayName } : {}) },
      direct: this.isDirect(client, room),
      allowRoomMentions: settings.allowRoomMentions,
      download: (mxc, signal) => downloadMedia(client, mxc, signal),
    });
    if (incoming) await link.receive(incoming);
  }

  /** A direct chat: marked so in m.direct or when invited, or a room of just the bot and one person. */
  private isDirect(client: MatrixClient, room: Room): boolean {
    if (this.directRooms.has(room.roomId)) return true;
    const direct = client.getAccountData(this.options.sdk.EventType.Direct)?.getContent();
    const listed = Object.values(direct ?? {}).some((ids) => Array.isArray(ids) && ids.includes(room.roomId));
    return listed || room.getInvitedAndJoinedMemberCount() <= 2;
  }

  private async encryptedRoom(client: MatrixClient, event: MatrixEvent, room: Room, link: PlatformLink) {
    const sender = event.getSender();
    if (!sender || this.encryptedNoticeSent.has(room.roomId) || !this.allowed(client, sender)) return;
    this.encryptedNoticeSent.add(room.roomId);
    link.log.warn(`${room.roomId} is end-to-end encrypted; nanobot-ts cannot read encrypted rooms`);
    await this.sendContent(
      client,
      room.roomId,
      { msgtype: 'm.notice', body: ENCRYPTED_NOTICE, 'm.mentions': {} },
      true,
    );
  }

  /** Joins rooms that allowed (or paired) users invited the bot to; other invites are left alone. */
  private async acceptInvites(client: MatrixClient, link: PlatformLink): Promise<void> {
    const me = client.getSafeUserId();
    for (const room of client.getRooms()) {
      if (room.getMyMembership() !== 'invite' || this.invitesSeen.has(room.roomId)) continue;
      this.invitesSeen.add(room.roomId);
      const invite = room.currentState.getMember(me)?.events.member;
      const inviter = invite?.getSender() ?? room.getDMInviter();
      if (!inviter || !this.allowed(client, inviter)) {
        link.log.info(`ignored an invite to ${room.roomId} from ${inviter ?? 'an unknown user'} (not in allowFrom)`);
        continue;
      }
      try {
        await client.joinRoom(room.roomId);
        if (invite?.getContent().is_direct === true) this.directRooms.add(room.roomId);
        link.log.info(`joined ${room.name || room.roomId} (invited by ${inviter})`);
      } catch (err) {
        this.invitesSeen.delete(room.roomId);
        link.log.warn(`could not join ${room.roomId}: ${errorMessage(err)}`);
      }
    }
  }

  private allowed(client: MatrixClient, userId: string): boolean {
    const sender = senderOf(userId, { userId: client.getSafeUserId() }, undefined);
    return isAllowed(this.options.settings(), sender, (id) => this.pairing.isApproved('matrix', id));
  }

  // ── outbound ─────────────────────────────────────────────────────────────────────────────────────────────

  private requireClient(): MatrixClient {
    if (!this.client) throw new Error('matrix is not connected');
    return this.client;
  }

  private isEncrypted(client: MatrixClient, roomId: string): boolean {
    return client.getRoom(roomId)?.hasEncryptionStateEvent() === true;
  }

  private refuseEncrypted(client: MatrixClient, roomId: string, what = 'message'): void {
    if (!this.isEncrypted(client, roomId)) return;
    if (!this.crypto)
      throw new Error(`${roomId} is end-to-end encrypted and channels.matrix.e2eeEnabled is false: not sending`);
    if (what === 'file') throw new Error(`${roomId} is end-to-end encrypted; encrypted files are not supported yet`);
  }

  /**
   * PUT /rooms/{room}/send: straight to the homeserver (no local echo or send queue; the framework retries).
   * A rate limit of up to 30 s is waited out once, with the same transaction id, so a send is never doubled.
   */
  private async sendContent(client: MatrixClient, roomId: string, content: MessageContent, evenEncrypted = false) {
    if (!evenEncrypted) this.refuseEncrypted(client, roomId);
    if (this.crypto && this.isEncrypted(client, roomId)) return this.sendEncrypted(client, roomId, content);
    const { Method, MatrixError } = this.options.sdk;
    const txnId = encodeURIComponent(client.makeTxnId());
    const path = `/rooms/${encodeURIComponent(roomId)}/send/m.room.message/${txnId}`;
    const send = () =>
      // (The SDK types `priority` as required in these options; it is not.)
      client.http.authedRequest<{ event_id: string }>(Method.Put, path, undefined, content, {
        localTimeoutMs: REQUEST_TIMEOUT_MS,
      } as IRequestOpts);
    try {
      return (await send()).event_id;
    } catch (err) {
      if (!(err instanceof MatrixError) || !err.isRateLimitError()) throw err;
      const waitMs = err.getRetryAfterMs() ?? 1_000;
      if (waitMs > MAX_RATE_LIMIT_WAIT_MS) throw err;
      await new Promise((resolve) => setTimeout(resolve, waitMs));
      return (await send()).event_id;
    }
  }

  /** Through the SDK, which encrypts for every device in the room (sharing the room key first when needed). */
  private async sendEncrypted(client: MatrixClient, roomId: string, content: MessageContent): Promise<string> {
    try {
      // (The SDK's content types are a union per msgtype; ours is the same shape, checked in content.ts.)
      const { event_id } = await client.sendEvent(roomId, this.options.sdk.EventType.RoomMessage, content as never);
      return event_id;
    } finally {
      await this.crypto?.save();
    }
  }

  /** The reply is there: clear "typing…" now instead of letting it lapse. */
  private stopTyping(client: MatrixClient, roomId: string): void {
    if (!this.typingRooms.delete(roomId)) return;
    client.sendTyping(roomId, false, 0).catch(() => undefined);
  }
}
