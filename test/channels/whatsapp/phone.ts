/**
 * A WhatsApp user's phone, for the fake server: it starts a Signal session with the bot's linked device from the
 * pre-keys the bot uploaded (libsignal's SessionBuilder, as a real phone does), and encrypts each message with
 * libsignal's SessionCipher: the first as a pre-key message (`pkmsg`), later ones as `msg`. The plaintext is the
 * protobuf Message with WhatsApp's random padding, exactly what Baileys unpads and decodes.
 */
import { createRequire } from 'node:module';
import { type BinaryNode, proto } from 'baileys';
import {
  GroupCipher,
  GroupSessionBuilder,
  SenderKeyDistributionMessage,
  SenderKeyName,
  SenderKeyRecord,
} from 'baileys/lib/Signal/Group/index.js';
import type { FakeWhatsApp, MediaType, UploadedBundle } from './fake-whatsapp.js';

interface SignalKeyPair {
  pubKey: Buffer;
  privKey: Buffer;
}
interface SignalAddress {
  toString(): string;
}
interface Libsignal {
  ProtocolAddress: new (id: string, device: number) => SignalAddress;
  SessionBuilder: new (
    store: unknown,
    address: SignalAddress,
  ) => {
    initOutgoing(device: unknown): Promise<void>;
  };
  SessionCipher: new (
    store: unknown,
    address: SignalAddress,
  ) => {
    encrypt(data: Buffer): Promise<{ type: number; body: Buffer }>;
    decryptPreKeyWhisperMessage(data: Buffer): Promise<Buffer>;
    decryptWhisperMessage(data: Buffer): Promise<Buffer>;
  };
  keyhelper: { generateIdentityKeyPair(): SignalKeyPair; generateRegistrationId(): number };
}

const libsignal = createRequire(import.meta.url)('libsignal') as Libsignal;

const withType = (key: Buffer) => (key.length === 33 ? key : Buffer.concat([Buffer.from([5]), key]));

/** WhatsApp pads every plaintext with 1–16 bytes, each the pad's length. */
function pad(data: Uint8Array): Buffer {
  const n = 1 + (data.length % 16);
  return Buffer.concat([Buffer.from(data), Buffer.alloc(n, n)]);
}

/** libsignal's storage interface, in memory. */
class MemoryStore {
  readonly sessions = new Map<string, unknown>();
  constructor(
    readonly identity: SignalKeyPair,
    readonly registrationId: number,
  ) {}
  async getOurIdentity() {
    return this.identity;
  }
  async getOurRegistrationId() {
    return this.registrationId;
  }
  async isTrustedIdentity() {
    return true;
  }
  async loadSession(address: string) {
    return this.sessions.get(address);
  }
  async storeSession(address: string, record: unknown) {
    this.sessions.set(address, record);
  }
  async loadPreKey() {
    return undefined;
  }
  async removePreKey() {}
  async loadSignedPreKey() {
    return undefined;
  }
}

export class Phone {
  readonly store = new MemoryStore(
    libsignal.keyhelper.generateIdentityKeyPair(),
    libsignal.keyhelper.generateRegistrationId(),
  );
  private usedPreKeys = 0;
  private nextMessage = 1;

  constructor(
    readonly fake: FakeWhatsApp,
    readonly number: string,
    readonly name = 'Phone user',
  ) {
    fake.phones.set(number, this);
  }

  /** A copy the bot encrypted for this phone, on the session this phone started. */
  async decrypt(type: string, body: Buffer): Promise<proto.IMessage> {
    const cipher = await this.cipher();
    const plain =
      type === 'pkmsg' ? await cipher.decryptPreKeyWhisperMessage(body) : await cipher.decryptWhisperMessage(body);
    const n = plain[plain.length - 1] ?? 0;
    return proto.Message.decode(plain.subarray(0, plain.length - n));
  }

  /** Sender keys of group members (here: the bot), as WhatsApp's group protocol hands them out. */
  private readonly senderKeys = new Map<string, SenderKeyRecord>();
  private readonly senderKeyStore = {
    loadSenderKey: async (name: SenderKeyName) => this.senderKeys.get(name.toString()) ?? new SenderKeyRecord(),
    storeSenderKey: async (name: SenderKeyName, record: SenderKeyRecord) => {
      this.senderKeys.set(name.toString(), record);
    },
  };

  private senderKeyName(group: string, author: string): SenderKeyName {
    return new SenderKeyName(group, { id: author, deviceId: 0, toString: () => author });
  }

  /** The bot's sender key for `group`, from the senderKeyDistributionMessage it sent this phone pairwise. */
  async acceptSenderKey(group: string, author: string, distribution: Uint8Array): Promise<void> {
    const message = new SenderKeyDistributionMessage(null, null, null, null, distribution);
    await new GroupSessionBuilder(this.senderKeyStore).process(this.senderKeyName(group, author), message);
  }

  /** A group message (`skmsg`) the bot encrypted once for all members with its sender key. */
  async decryptGroup(group: string, author: string, body: Buffer): Promise<proto.IMessage> {
    const plain = await new GroupCipher(this.senderKeyStore, this.senderKeyName(group, author)).decrypt(body);
    const n = plain[plain.length - 1] ?? 0;
    return proto.Message.decode(plain.subarray(0, plain.length - n));
  }

  /** The texts the bot sent to this phone's chat. */
  texts(chat = this.jid): string[] {
    return (this.fake.sent.get(chat) ?? []).map(
      ({ message }) => message.conversation ?? message.extendedTextMessage?.text ?? '',
    );
  }

  get jid(): string {
    return `${this.number}@s.whatsapp.net`;
  }

  /** The session with the bot, started once: messages written at once (a burst) must not each start their own. */
  private session: Promise<unknown> | undefined;

  private async cipher() {
    const bundle = this.fake.bundle;
    if (!bundle) throw new Error('the bot has not uploaded its keys yet');
    const address = new libsignal.ProtocolAddress(this.fake.phone, this.fake.device);
    this.session ??= new libsignal.SessionBuilder(this.store, address).initOutgoing(this.deviceBundle(bundle));
    await this.session;
    return new libsignal.SessionCipher(this.store, address);
  }

  private deviceBundle(bundle: UploadedBundle) {
    const preKey = bundle.preKeys[this.usedPreKeys++ % bundle.preKeys.length];
    return {
      identityKey: withType(bundle.identityKey),
      registrationId: bundle.registrationId,
      signedPreKey: { ...bundle.signedPreKey, publicKey: withType(bundle.signedPreKey.publicKey) },
      ...(preKey ? { preKey: { keyId: preKey.keyId, publicKey: withType(preKey.publicKey) } } : {}),
    };
  }

  private readonly written = new Map<string, { message: proto.IMessage; group?: string }>();

  async resend(id: string): Promise<BinaryNode | undefined> {
    const original = this.written.get(id);
    return original
      ? this.stanza(original.message, { id, ...(original.group ? { group: original.group } : {}) })
      : undefined;
  }

  /** The `<message>` stanza the server delivers for a message this phone sends (to the bot, or in `group`). */
  async stanza(message: proto.IMessage, options: { id?: string; group?: string } = {}): Promise<BinaryNode> {
    const cipher = await this.cipher();
    const sealed = await cipher.encrypt(pad(proto.Message.encode(message).finish()));
    const id = options.id ?? `3EB0${this.number.slice(-4)}${String(this.nextMessage++).padStart(6, '0')}`;
    this.written.set(id, { message, ...(options.group ? { group: options.group } : {}) });
    return {
      tag: 'message',
      attrs: {
        id,
        from: options.group ?? this.jid,
        ...(options.group ? { participant: this.jid } : {}),
        type: 'text',
        t: String(Math.floor(Date.now() / 1000)),
        notify: this.name,
      },
      content: [{ tag: 'enc', attrs: { v: '2', type: sealed.type === 3 ? 'pkmsg' : 'msg' }, content: sealed.body }],
    };
  }

  /**
   * Sends a photo, voice note (`audio` + `ptt`), video or document: uploaded encrypted to the fake's media host, then
   * a media message with its key. `fileLength` may claim another size than the real one (a hostile sender).
   */
  async sendsMedia(
    type: Exclude<MediaType, 'sticker'>,
    data: Buffer,
    options: { mimetype: string; caption?: string; fileName?: string; ptt?: boolean; fileLength?: number } & {
      group?: string;
      mention?: boolean;
    },
  ): Promise<string> {
    const hosted = await this.fake.hostMedia(data, type);
    const media = {
      url: hosted.url,
      directPath: hosted.directPath,
      mediaKey: hosted.mediaKey,
      fileSha256: hosted.fileSha256,
      fileEncSha256: hosted.fileEncSha256,
      fileLength: options.fileLength ?? hosted.fileLength,
      mimetype: options.mimetype,
      ...(options.caption ? { caption: options.caption } : {}),
      ...(options.mention ? { contextInfo: { mentionedJid: [this.fake.botJid] } } : {}),
    };
    const message: proto.IMessage =
      type === 'image'
        ? { imageMessage: media }
        : type === 'video'
          ? { videoMessage: media }
          : type === 'audio'
            ? { audioMessage: { ...media, ptt: options.ptt === true } }
            : { documentMessage: { ...media, fileName: options.fileName ?? 'file' } };
    const node = await this.stanza(message, options.group ? { group: options.group } : {});
    node.attrs.type = 'media';
    this.fake.deliver(node);
    return node.attrs.id ?? '';
  }

  /** Sends a text now (or keeps it for the device's next login, when it is offline). */
  async says(text: string, options: { id?: string; group?: string; mention?: boolean } = {}): Promise<string> {
    const message: proto.IMessage = options.mention
      ? {
          extendedTextMessage: {
            text: `@${this.fake.phone} ${text}`,
            contextInfo: { mentionedJid: [this.fake.botJid] },
          },
        }
      : { conversation: text };
    const node = await this.stanza(message, options);
    this.fake.deliver(node);
    return node.attrs.id ?? '';
  }
}
