/**
 * A loopback WhatsApp Web server for the real Baileys: the Noise XX handshake (noise-server.ts), binary nodes in
 * Baileys' own encoding, QR pairing (pair-device refs; the test's "phone" scans the code and the server sends
 * pair-success with an account identity the phone signs), the 515 restart, login (`success`), pre-key upload and
 * the usual IQs, and the end of the offline queue. Baileys checks the server's certificate chain against WhatsApp's
 * root key; `trustFakeRoot()` points that check at this fake's root, the test's equivalent of a test CA.
 */
import { createHmac, randomBytes } from 'node:crypto';
import { readFile, rm } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  type BinaryNode,
  Curve,
  decodeBinaryNode,
  encodeBinaryNode,
  encryptedStream,
  getBinaryNodeChild,
  getBinaryNodeChildren,
  proto,
  WA_CERT_DETAILS,
} from 'baileys';
import { type WebSocket, WebSocketServer } from 'ws';
import { FrameReader, frame, type NoiseIdentity, NoiseServer, newNoiseIdentity } from './noise-server.js';

const ACCOUNT_SIG_PREFIX = Buffer.from([6, 0]);

/** Makes Baileys (this process's copy) trust the fake's certificate root; returns the undo. */
export function trustFakeRoot(identity: NoiseIdentity): () => void {
  const original = WA_CERT_DETAILS.PUBLIC_KEY;
  WA_CERT_DETAILS.PUBLIC_KEY = Buffer.from(identity.root.public);
  return () => {
    WA_CERT_DETAILS.PUBLIC_KEY = original;
  };
}

/** The bot's uploaded keys: what a phone needs to start a Signal session with it. */
export interface UploadedBundle {
  registrationId: number;
  identityKey: Buffer;
  signedPreKey: { keyId: number; publicKey: Buffer; signature: Buffer };
  preKeys: { keyId: number; publicKey: Buffer }[];
}

/** What the fake needs of a phone (phone.ts). */
export interface PhoneLike {
  decrypt(type: string, body: Buffer): Promise<proto.IMessage>;
  /** The stanza of a message this phone sent, encrypted again (after the device asked for a retry). */
  resend(id: string): Promise<BinaryNode | undefined>;
  acceptSenderKey(group: string, author: string, distribution: Uint8Array): Promise<void>;
  decryptGroup(group: string, author: string, body: Buffer): Promise<proto.IMessage>;
}

export interface SentMessage {
  id: string;
  to: string;
  type?: string;
  message: proto.IMessage;
}

/** An uploaded (encrypted) media blob: the fields a media message carries to find and decrypt it. */
export interface HostedMedia {
  directPath: string;
  url: string;
  mediaKey: Buffer;
  fileSha256: Buffer;
  fileEncSha256: Buffer;
  fileLength: number;
}

export type MediaType = 'image' | 'audio' | 'video' | 'document' | 'sticker';

export interface FakeOptions {
  /** The account's phone number (the bot's number once linked). */
  phone?: string;
  lid?: string;
}

export class Connection {
  readonly noise: NoiseServer;
  private readonly reader = new FrameReader();
  payload: proto.ClientPayload | undefined;
  /** The pairing refs this connection shows as QR codes. */
  refs: string[] = [];
  readonly received: BinaryNode[] = [];

  constructor(
    readonly fake: FakeWhatsApp,
    readonly socket: WebSocket,
  ) {
    this.noise = new NoiseServer(fake.identity);
    socket.on('message', (data: Buffer) => {
      for (const piece of this.reader.push(Buffer.from(data))) void this.onFrame(piece).catch((err) => fake.fail(err));
    });
    socket.on('close', () => {
      fake.connections.delete(this);
      fake.ready.delete(this);
      this.countUnconfirmed();
    });
  }

  private queue: Promise<void> = Promise.resolve();

  private onFrame(data: Buffer): Promise<void> {
    const run = this.queue.then(async () => {
      if (!this.noise.ready && !this.payload) {
        if (this.helloDone) {
          this.payload = this.noise.clientFinish(data);
          await this.fake.onLogin(this);
        } else {
          this.helloDone = true;
          this.socket.send(frame(this.noise.serverHello(data)));
        }
        return;
      }
      const node = await decodeBinaryNode(this.noise.decrypt(data));
      this.received.push(node);
      await this.fake.onNode(this, node);
    });
    // A frame that fails (recorded in `errors`) must not stall every later frame on this connection.
    this.queue = run.catch(() => undefined);
    return run;
  }

  private helloDone = false;

  /** Messages sent on this connection that the device has not acknowledged (a receipt) yet. */
  readonly unacked = new Map<string, BinaryNode>();

  send(node: BinaryNode): void {
    if (this.socket.readyState !== this.socket.OPEN) return;
    if (node.tag === 'message' && node.attrs.id) this.unacked.set(node.attrs.id, node);
    this.socket.send(frame(this.noise.encrypt(encodeBinaryNode(node))));
  }

  /**
   * What the device never confirmed is delivered again after its next login, as WhatsApp's server does. A copy the
   * device had already decrypted then fails (Signal's counter moved on); its retry receipt makes the sender's phone
   * encrypt the message again (`onRetry`).
   */
  private countUnconfirmed(): void {
    this.fake.unconfirmedAtDrop += this.unacked.size;
    this.fake.offline.unshift(...this.unacked.values());
    this.unacked.clear();
  }

  close(): void {
    this.countUnconfirmed();
    this.socket.terminate();
  }
}

export class FakeWhatsApp {
  readonly identity = newNoiseIdentity();
  readonly connections = new Set<Connection>();
  readonly phone: string;
  readonly lid: string;
  /** The phone's account identity (signs the linked device). */
  readonly accountKey = Curve.generateKeyPair();
  /** The linked device's number (`<phone>:<device>`), once paired. */
  device = 7;
  bundle: UploadedBundle | undefined;
  /** Problems inside the fake (a test asserts there were none). */
  readonly errors: Error[] = [];
  /** Refuse logins of this device (the phone unlinked it): `<failure reason="401">`. */
  loggedOut = false;
  /** Every node the clients sent, in order. */
  readonly log: BinaryNode[] = [];
  onClientNode: ((connection: Connection, node: BinaryNode) => Promise<boolean> | boolean) | undefined;
  /** The phones the fake plays (by number): they decrypt what the bot sends them. */
  readonly phones = new Map<string, PhoneLike>();
  /** What the bot sent, by chat JID, in order (decrypted by the phones). */
  readonly sent = new Map<string, SentMessage[]>();
  /** Messages kept for the device while it is offline; sent after its next login, then `ib offline`. */
  readonly offline: BinaryNode[] = [];
  private nextId = 1;
  /** The upload host a media connection (`w:m`) names: `host:port` of media-host.ts, when a test runs one. */
  mediaHost: string | undefined;
  /** Groups by JID: their subject and members' numbers (the bot is a member of each). */
  readonly groups = new Map<string, { subject: string; members: string[] }>();
  /** Encrypted media blobs by path, as WhatsApp's media host (mmg.whatsapp.net) serves them. */
  private readonly media = new Map<string, Buffer>();
  /** Every media download request (path), in order. */
  readonly mediaRequests: string[] = [];

  private constructor(
    private readonly http: Server,
    private readonly wss: WebSocketServer,
    options: FakeOptions,
  ) {
    this.phone = options.phone ?? '4915550001';
    this.lid = options.lid ?? '88880001';
    wss.on('connection', (socket) => {
      if (this.refusing) socket.terminate();
      else this.connections.add(new Connection(this, socket));
    });
  }

  static async start(options: FakeOptions = {}): Promise<FakeWhatsApp> {
    let fake: FakeWhatsApp | undefined;
    const http = createServer((req, res) => (fake ? fake.serveMedia(req, res) : res.writeHead(404).end()));
    const wss = new WebSocketServer({ server: http, path: '/ws/chat' });
    await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
    fake = new FakeWhatsApp(http, wss, options);
    return fake;
  }

  /**
   * What a phone does before sending a photo, voice note or document: encrypts it with a fresh media key (Baileys'
   * own `encryptedStream`: AES-256-CBC, HMAC, WhatsApp's HKDF info per media type) and uploads the blob; the media
   * message then carries the key and the blob's path on the media host (here this fake's HTTP origin).
   */
  async hostMedia(plain: Buffer, type: MediaType): Promise<HostedMedia> {
    const encrypted = await encryptedStream(plain, type);
    const blob = await readFile(encrypted.encFilePath);
    await rm(encrypted.encFilePath, { force: true });
    const directPath = `/v/t62.7118-24/${randomBytes(8).toString('hex')}.enc?ccb=11-4`;
    this.media.set(directPath, blob);
    return {
      directPath,
      url: `http://127.0.0.1:${this.port}${directPath}`,
      mediaKey: encrypted.mediaKey,
      fileSha256: encrypted.fileSha256,
      fileEncSha256: encrypted.fileEncSha256,
      fileLength: encrypted.fileLength,
    };
  }

  private serveMedia(req: IncomingMessage, res: ServerResponse): void {
    const path = req.url ?? '';
    this.mediaRequests.push(path);
    const blob = req.method === 'GET' ? this.media.get(path) : undefined;
    if (!blob) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': blob.length }).end(blob);
  }

  get port(): number {
    return (this.http.address() as AddressInfo).port;
  }

  get url(): string {
    return `ws://127.0.0.1:${this.port}/ws/chat`;
  }

  get botJid(): string {
    return `${this.phone}@s.whatsapp.net`;
  }

  id(): string {
    return `fake-${this.nextId++}`;
  }

  fail(err: unknown): void {
    this.errors.push(err instanceof Error ? err : new Error(String(err)));
  }

  /** The connection that is logged in now (not a pairing one). */
  get live(): Connection | undefined {
    return [...this.ready].filter((c) => c.socket.readyState === c.socket.OPEN).at(-1);
  }

  async onLogin(connection: Connection): Promise<void> {
    const payload = connection.payload;
    if (!payload) return;
    if (payload.devicePairingData) {
      connection.refs = [1, 2, 3].map((n) => `ref-${this.nextId++}-${n}`);
      connection.send({
        tag: 'iq',
        attrs: { from: 's.whatsapp.net', type: 'set', id: this.id(), xmlns: 'md' },
        content: [
          {
            tag: 'pair-device',
            attrs: {},
            content: connection.refs.map((ref) => ({ tag: 'ref', attrs: {}, content: Buffer.from(ref) })),
          },
        ],
      });
      return;
    }
    if (this.loggedOut || String(payload.username) !== this.phone) {
      connection.send({ tag: 'failure', attrs: { reason: '401', location: 'fake' } });
      connection.close();
      return;
    }
    connection.send({
      tag: 'success',
      attrs: { t: String(Math.floor(Date.now() / 1000)), lid: `${this.lid}@lid`, props: '1', location: 'fake' },
    });
  }

  /** The phone scans a QR code: pair-success on the connection that showed it. */
  scan(qr: string): void {
    const [ref, , identityB64, advB64] = qr.replace(/^.*#/, '').split(',');
    const connection = [...this.connections].find((c) => ref !== undefined && c.refs.includes(ref));
    if (!connection || !identityB64 || !advB64) throw new Error(`no connection shows the code ${qr}`);
    const deviceIdentity = proto.ADVDeviceIdentity.encode({
      rawId: 1,
      timestamp: Math.floor(Date.now() / 1000),
      keyIndex: 1,
    }).finish();
    const companionIdentity = Buffer.from(identityB64, 'base64');
    const accountSignature = Curve.sign(
      this.accountKey.private,
      Buffer.concat([ACCOUNT_SIG_PREFIX, deviceIdentity, companionIdentity]),
    );
    const details = proto.ADVSignedDeviceIdentity.encode({
      details: deviceIdentity,
      accountSignatureKey: this.accountKey.public,
      accountSignature,
    }).finish();
    const hmac = createHmac('sha256', Buffer.from(advB64, 'base64')).update(details).digest();
    connection.send({
      tag: 'iq',
      attrs: {
        from: 's.whatsapp.net',
        type: 'set',
        id: this.id(),
        xmlns: 'md',
        t: String(Math.floor(Date.now() / 1000)),
      },
      content: [
        {
          tag: 'pair-success',
          attrs: {},
          content: [
            {
              tag: 'device-identity',
              attrs: {},
              content: Buffer.from(proto.ADVSignedDeviceIdentityHMAC.encode({ details, hmac }).finish()),
            },
            { tag: 'platform', attrs: { name: 'android' } },
            {
              tag: 'device',
              attrs: { jid: `${this.phone}:${this.device}@s.whatsapp.net`, lid: `${this.lid}:${this.device}@lid` },
            },
          ],
        },
      ],
    });
  }

  async onNode(connection: Connection, node: BinaryNode): Promise<void> {
    this.log.push(node);
    if (node.tag === 'receipt' || node.tag === 'ack') connection.unacked.delete(node.attrs.id ?? '');
    if (node.tag === 'receipt' && node.attrs.type === 'retry') {
      const number = (node.attrs.participant ?? node.attrs.to ?? '').split(/[:@]/)[0] ?? '';
      const again = await this.phones.get(number)?.resend(node.attrs.id ?? '');
      if (again) this.deliver(again);
      return;
    }
    if (this.onClientNode && (await this.onClientNode(connection, node))) return;
    if (node.tag === 'iq') return this.onIq(connection, node);
    if (node.tag === 'message') return this.onMessage(connection, node);
  }

  /**
   * The bot sends: each phone decrypts its copy; the server acks the stanza. In a group the pairwise copies carry the
   * bot's sender key; the message itself is one `skmsg`, which the members decrypt with that key.
   */
  private async onMessage(connection: Connection, node: BinaryNode): Promise<void> {
    const to = node.attrs.to ?? '';
    const copies = getBinaryNodeChildren(getBinaryNodeChild(node, 'participants'), 'to');
    const enc = getBinaryNodeChild(node, 'enc');
    const group = to.endsWith('@g.us');
    const direct = enc && !group ? [{ tag: 'to', attrs: { jid: to }, content: [enc] }] : [];
    const record = (message: proto.IMessage) => {
      const list = this.sent.get(to) ?? [];
      list.push({ id: node.attrs.id ?? '', message, to, ...(node.attrs.type ? { type: node.attrs.type } : {}) });
      this.sent.set(to, list);
    };
    for (const copy of [...copies, ...direct]) {
      const number = (copy.attrs.jid ?? '').split(/[:@]/)[0] ?? '';
      const phone = this.phones.get(number);
      const copyEnc = getBinaryNodeChild(copy, 'enc');
      if (!phone || !copyEnc) continue;
      const message = await phone.decrypt(copyEnc.attrs.type ?? '', bytes(copyEnc));
      const distribution = message.senderKeyDistributionMessage?.axolotlSenderKeyDistributionMessage;
      if (group && distribution) await phone.acceptSenderKey(to, this.botJid, distribution);
      else record(message);
    }
    if (group && enc?.attrs.type === 'skmsg') {
      const members = this.groups.get(to)?.members ?? [];
      const reader = members.map((number) => this.phones.get(number)).find((phone) => phone !== undefined);
      if (reader) record(await reader.decryptGroup(to, this.botJid, bytes(enc)));
    }
    connection.send({
      tag: 'ack',
      attrs: { class: 'message', id: node.attrs.id ?? '', from: to, t: String(Math.floor(Date.now() / 1000)) },
    });
  }

  /** `<group>` as the `w:g2` query answers it: phone-number addressing, every member plus the bot. */
  private groupNode(jid: string): BinaryNode | undefined {
    const group = this.groups.get(jid);
    if (!group) return undefined;
    const now = String(Math.floor(Date.now() / 1000));
    return {
      tag: 'group',
      attrs: { id: jid.split('@')[0] ?? '', subject: group.subject, s_t: now, creation: now, addressing_mode: 'pn' },
      content: [...group.members, this.phone].map((number) => ({
        tag: 'participant',
        attrs: { jid: `${number}@s.whatsapp.net` },
      })),
    };
  }

  private onIq(connection: Connection, node: BinaryNode): void {
    const { id, xmlns, type } = node.attrs;
    const reply = (content?: BinaryNode[]) =>
      connection.send({
        tag: 'iq',
        attrs: { id: id ?? '', type: 'result', from: 's.whatsapp.net' },
        ...(content ? { content } : {}),
      });
    if (type === 'result') {
      // The pairing's signed reply: pairing is done, the client must come back on a new connection.
      if (getBinaryNodeChild(node, 'pair-device-sign')) {
        connection.send({ tag: 'stream:error', attrs: { code: '515' } });
        connection.close();
      }
      return;
    }
    if (xmlns === 'encrypt' && type === 'get' && getBinaryNodeChild(node, 'count')) {
      // A few keys "left" (not none): Baileys then tops up with 5 instead of generating 812, which is slow.
      reply([{ tag: 'count', attrs: { value: String(Math.max(4, this.bundle?.preKeys.length ?? 0)) } }]);
      return;
    }
    if (xmlns === 'encrypt' && type === 'set' && getBinaryNodeChild(node, 'list')) {
      this.bundle = parseUpload(node, this.bundle);
      reply();
      return;
    }
    if (xmlns === 'passive' && getBinaryNodeChild(node, 'active')) {
      reply();
      // Nothing kept while offline (or what was): then the marker that ends the offline queue.
      const kept = this.offline.splice(0);
      for (const node of kept) connection.send(node);
      connection.send({
        tag: 'ib',
        attrs: { from: 's.whatsapp.net' },
        content: [{ tag: 'offline', attrs: { count: String(kept.length) } }],
      });
      this.ready.add(connection);
      return;
    }
    if (xmlns === 'w:m' && getBinaryNodeChild(node, 'media_conn')) {
      const hosts = this.mediaHost ? [{ tag: 'host', attrs: { hostname: this.mediaHost } }] : [];
      reply([{ tag: 'media_conn', attrs: { auth: 'fake-auth', ttl: '3600' }, content: hosts }]);
      return;
    }
    if (xmlns === 'w:g2' && type === 'get' && getBinaryNodeChild(node, 'query')) {
      const group = this.groupNode(node.attrs.to ?? '');
      reply([group ?? { tag: 'error', attrs: { code: '404', text: 'item-not-found' } }]);
      return;
    }
    if (xmlns === 'usync') {
      reply([usyncDevices(node, this.phone, this.device)]);
      return;
    }
    reply();
  }

  /** Delivers a stanza to the logged-in device now, or keeps it for its next login (offline delivery). */
  deliver(node: BinaryNode): void {
    const live = this.live;
    if (live) live.send(node);
    else this.offline.push(node);
  }

  /** Logged-in connections whose offline queue has been sent (live delivery is in order after it). */
  readonly ready = new Set<Connection>();

  /** Messages on the wire, not yet confirmed by the device, when a connection was cut. */
  unconfirmedAtDrop = 0;

  /** New connections are cut at once (the network is down) until `restore()`. */
  refusing = false;

  /** Drops every connection (the client sees the socket close). */
  dropAll(): void {
    for (const connection of this.connections) connection.close();
  }

  drop(): void {
    this.refusing = true;
    this.dropAll();
  }

  restore(): void {
    this.refusing = false;
  }

  async close(): Promise<void> {
    this.dropAll();
    await new Promise<void>((resolve) => this.wss.close(() => resolve()));
    await new Promise<void>((resolve) => this.http.close(() => resolve()));
  }
}

const bytes = (node: BinaryNode | undefined): Buffer => {
  const content = node?.content;
  if (content instanceof Uint8Array) return Buffer.from(content);
  if (typeof content === 'string') return Buffer.from(content);
  throw new Error(`<${node?.tag}> has no bytes`);
};
const uint = (data: Buffer) => data.readUIntBE(0, data.length);

/** `<iq xmlns="encrypt" type="set">`: registration id, identity, one-time pre-keys and the signed pre-key. */
function parseUpload(node: BinaryNode, previous: UploadedBundle | undefined): UploadedBundle {
  const list = getBinaryNodeChild(node, 'list');
  const skey = getBinaryNodeChild(node, 'skey');
  const preKeys = getBinaryNodeChildren(list, 'key').map((key) => ({
    keyId: uint(bytes(getBinaryNodeChild(key, 'id'))),
    publicKey: bytes(getBinaryNodeChild(key, 'value')),
  }));
  return {
    registrationId: uint(bytes(getBinaryNodeChild(node, 'registration'))),
    identityKey: bytes(getBinaryNodeChild(node, 'identity')),
    signedPreKey: {
      keyId: uint(bytes(getBinaryNodeChild(skey, 'id'))),
      publicKey: bytes(getBinaryNodeChild(skey, 'value')),
      signature: bytes(getBinaryNodeChild(skey, 'signature')),
    },
    preKeys: [...(previous?.preKeys ?? []), ...preKeys],
  };
}

/** Every queried user has one device, the phone (0); the bot's own account lists only the bot's device. */
function usyncDevices(node: BinaryNode, botPhone: string, botDevice: number): BinaryNode {
  const users = getBinaryNodeChildren(getBinaryNodeChild(getBinaryNodeChild(node, 'usync'), 'list'), 'user');
  return {
    tag: 'usync',
    attrs: {},
    content: [
      {
        tag: 'list',
        attrs: {},
        content: users.map((user) => {
          const jid = user.attrs.jid ?? '';
          const device = jid.startsWith(`${botPhone}@`) ? botDevice : 0;
          return {
            tag: 'user',
            attrs: { jid },
            content: [
              {
                tag: 'devices',
                attrs: {},
                content: [
                  { tag: 'device-list', attrs: {}, content: [{ tag: 'device', attrs: { id: String(device) } }] },
                ],
              },
            ],
          };
        }),
      },
    ],
  };
}
