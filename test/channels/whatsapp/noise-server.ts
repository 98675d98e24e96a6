/**
 * The server half of WhatsApp's Noise XX handshake (Noise_XX_25519_AESGCM_SHA256), mirroring Baileys'
 * noise-handler step by step: one running hash and chaining key, AES-256-GCM with the hash as associated data while
 * handshaking, then two transport keys from HKDF. X25519 agreement and the certificate signatures use libsignal's
 * curve (through Baileys' `Curve`), the primitives WhatsApp uses; hashing, HKDF and AES-GCM are node:crypto.
 */
import { createCipheriv, createDecipheriv, createHash, hkdfSync } from 'node:crypto';
import { Curve, NOISE_MODE, NOISE_WA_HEADER, proto } from 'baileys';

type KeyPair = { private: Uint8Array; public: Uint8Array };

const sha256 = (data: Uint8Array) => createHash('sha256').update(data).digest();
const iv = (counter: number) => {
  const out = Buffer.alloc(12);
  out.writeUInt32BE(counter, 8);
  return out;
};
function gcm(encrypt: boolean, key: Buffer, nonce: Buffer, data: Uint8Array, aad: Buffer): Buffer {
  if (encrypt) {
    const cipher = createCipheriv('aes-256-gcm', key, nonce);
    cipher.setAAD(aad);
    return Buffer.concat([cipher.update(data), cipher.final(), cipher.getAuthTag()]);
  }
  const decipher = createDecipheriv('aes-256-gcm', key, nonce);
  decipher.setAAD(aad);
  decipher.setAuthTag(data.subarray(data.length - 16));
  return Buffer.concat([decipher.update(data.subarray(0, data.length - 16)), decipher.final()]);
}

/** The fake's certificate authority: a root (which the test makes Baileys trust) and a leaf for the server's key. */
export interface NoiseIdentity {
  root: KeyPair;
  intermediate: KeyPair;
  serverStatic: KeyPair;
}

export function newNoiseIdentity(): NoiseIdentity {
  return {
    root: Curve.generateKeyPair(),
    intermediate: Curve.generateKeyPair(),
    serverStatic: Curve.generateKeyPair(),
  };
}

function certChain(identity: NoiseIdentity): Buffer {
  const Details = proto.CertChain.NoiseCertificate.Details;
  const intermediateDetails = Details.encode({
    serial: 1,
    issuerSerial: 0,
    key: identity.intermediate.public,
    notBefore: 0,
    notAfter: 4_000_000_000,
  }).finish();
  const leafDetails = Details.encode({
    serial: 2,
    issuerSerial: 1,
    key: identity.serverStatic.public,
    notBefore: 0,
    notAfter: 4_000_000_000,
  }).finish();
  return Buffer.from(
    proto.CertChain.encode({
      intermediate: { details: intermediateDetails, signature: Curve.sign(identity.root.private, intermediateDetails) },
      leaf: { details: leafDetails, signature: Curve.sign(identity.intermediate.private, leafDetails) },
    }).finish(),
  );
}

/** One connection's Noise state, from the client's hello to the transport keys. */
export class NoiseServer {
  private hash: Buffer;
  private salt: Buffer;
  private key: Buffer;
  private counter = 0;
  private ephemeral = Curve.generateKeyPair();
  private readCounter = 0;
  private writeCounter = 0;
  private transport: { enc: Buffer; dec: Buffer } | undefined;
  /** The client's long-term noise key, known after its finish message. */
  clientStatic: Buffer | undefined;

  constructor(private readonly identity: NoiseIdentity) {
    const mode = Buffer.from(NOISE_MODE);
    this.hash = mode.length === 32 ? mode : sha256(mode);
    this.salt = this.hash;
    this.key = this.hash;
    this.authenticate(NOISE_WA_HEADER);
  }

  get ready(): boolean {
    return this.transport !== undefined;
  }

  private authenticate(data: Uint8Array) {
    this.hash = sha256(Buffer.concat([this.hash, data]));
  }

  private mix(material: Buffer) {
    const out = Buffer.from(hkdfSync('sha256', material, this.salt, Buffer.alloc(0), 64));
    this.salt = out.subarray(0, 32);
    this.key = out.subarray(32);
    this.counter = 0;
  }

  private seal(plain: Uint8Array): Buffer {
    const out = gcm(true, this.key, iv(this.counter++), plain, this.hash);
    this.authenticate(out);
    return out;
  }

  private open(cipher: Buffer): Buffer {
    const out = gcm(false, this.key, iv(this.counter++), cipher, this.hash);
    this.authenticate(cipher);
    return out;
  }

  /** The client's hello → the server's hello (ephemeral, encrypted static key, encrypted certificate chain). */
  serverHello(clientHello: Buffer): Buffer {
    const hello = proto.HandshakeMessage.decode(clientHello).clientHello;
    if (!hello?.ephemeral) throw new Error('no client hello');
    const clientEphemeral = Buffer.from(hello.ephemeral);
    this.authenticate(clientEphemeral);
    this.authenticate(this.ephemeral.public);
    this.mix(Curve.sharedKey(this.ephemeral.private, clientEphemeral));
    const statik = this.seal(this.identity.serverStatic.public);
    this.mix(Curve.sharedKey(this.identity.serverStatic.private, clientEphemeral));
    const payload = this.seal(certChain(this.identity));
    return Buffer.from(
      proto.HandshakeMessage.encode({
        serverHello: { ephemeral: this.ephemeral.public, static: statik, payload },
      }).finish(),
    );
  }

  /** The client's finish → its ClientPayload (login or registration); the transport keys are set. */
  clientFinish(message: Buffer): proto.ClientPayload {
    const finish = proto.HandshakeMessage.decode(message).clientFinish;
    if (!finish?.static || !finish.payload) throw new Error('no client finish');
    const clientStatic = this.open(Buffer.from(finish.static));
    this.clientStatic = clientStatic;
    this.mix(Curve.sharedKey(this.ephemeral.private, clientStatic));
    const payload = proto.ClientPayload.decode(this.open(Buffer.from(finish.payload)));
    const out = Buffer.from(hkdfSync('sha256', Buffer.alloc(0), this.salt, Buffer.alloc(0), 64));
    // The client writes with the first half and reads with the second.
    this.transport = { dec: out.subarray(0, 32), enc: out.subarray(32) };
    return payload;
  }

  encrypt(plain: Buffer): Buffer {
    if (!this.transport) throw new Error('handshake not finished');
    return gcm(true, this.transport.enc, iv(this.writeCounter++), plain, Buffer.alloc(0));
  }

  decrypt(cipher: Buffer): Buffer {
    if (!this.transport) throw new Error('handshake not finished');
    return gcm(false, this.transport.dec, iv(this.readCounter++), cipher, Buffer.alloc(0));
  }
}

/** Splits a byte stream into WhatsApp frames (3-byte big-endian length, then the frame). */
export class FrameReader {
  private buffer = Buffer.alloc(0);
  private introSkipped = false;

  push(data: Buffer): Buffer[] {
    this.buffer = Buffer.concat([this.buffer, data]);
    if (!this.introSkipped) {
      if (this.buffer.length < NOISE_WA_HEADER.length) return [];
      this.buffer = this.buffer.subarray(NOISE_WA_HEADER.length);
      this.introSkipped = true;
    }
    const frames: Buffer[] = [];
    while (this.buffer.length >= 3) {
      const size = (this.buffer[0] ?? 0) * 65536 + (this.buffer[1] ?? 0) * 256 + (this.buffer[2] ?? 0);
      if (this.buffer.length < size + 3) break;
      frames.push(this.buffer.subarray(3, size + 3));
      this.buffer = this.buffer.subarray(size + 3);
    }
    return frames;
  }
}

export function frame(data: Buffer): Buffer {
  const head = Buffer.alloc(3);
  head.writeUIntBE(data.length, 0, 3);
  return Buffer.concat([head, data]);
}
