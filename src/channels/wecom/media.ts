/**
 * Files both ways. In: an image, file or video message carries a download URL (valid for five minutes) and its own
 * `aeskey`; the content is AES-256-CBC encrypted (the SDK's `decryptFile`: the key is the base64 aeskey, the IV its
 * first 16 bytes, PKCS#7 padding to 32 bytes). The URL is fetched through the SSRF guard (public addresses only,
 * every redirect re-checked), except at the origin of a configured `wsUrl` (the owner's own endpoint: a loopback fake
 * in tests), and never more than the size cap is read: CBC needs the whole file before it can be decrypted.
 * Out: the SDK's chunked upload over the long connection (init → chunks of 512 KB → finish) gives a media_id.
 */
import { readFile, stat } from 'node:fs/promises';
import { createNetworkPolicy, type NetworkPolicy } from '../../security/network.js';
import { AttachmentTooLarge } from '../media.js';
import type { AttachmentKind, IncomingAttachment, OutgoingFile } from '../platform.js';

/** The SDK's upload limit: 100 chunks of 512 KB. */
export const MAX_UPLOAD_BYTES = 100 * 512 * 1024;

export type WecomMediaType = 'image' | 'file' | 'voice' | 'video';

let network: NetworkPolicy | undefined;
const guard = () => {
  network ??= createNetworkPolicy();
  return network;
};

export interface EncryptedMedia {
  url: string;
  aeskey?: string;
  name?: string;
}

export interface DownloadOptions {
  /** The origin fetched without the SSRF guard (that of a custom wsUrl), or undefined. */
  trustedOrigin: string | undefined;
  maxBytes: () => number;
  decrypt: (data: Buffer, aesKey: string) => Buffer;
}

export function toAttachment(
  kind: AttachmentKind,
  media: EncryptedMedia,
  options: DownloadOptions,
): IncomingAttachment {
  return {
    kind,
    ...(media.name ? { name: media.name } : {}),
    open: async (signal) => {
      const data = await download(media.url, options, signal);
      if (!media.aeskey) throw new Error('the file came without its key (aeskey)');
      const plain = options.decrypt(data, media.aeskey);
      return (async function* () {
        yield new Uint8Array(plain);
      })();
    },
  };
}

async function download(raw: string, options: DownloadOptions, signal: AbortSignal): Promise<Buffer> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new Error('the file URL is not valid');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error('the file URL is not an http(s) address');
  const response =
    options.trustedOrigin !== undefined && url.origin === options.trustedOrigin
      ? await fetch(url, { signal, redirect: 'manual' })
      : await guard().fetch(url, { signal, maxRedirects: 3 });
  if (!response.ok || !response.body) {
    await response.body?.cancel().catch(() => undefined);
    throw new Error(`the file download answered HTTP ${response.status}`);
  }
  // The ciphertext is at most 32 bytes of padding larger than the file.
  const limit = options.maxBytes() + 32;
  const declared = Number(response.headers.get('content-length') ?? Number.NaN);
  if (Number.isFinite(declared) && declared > limit) {
    await response.body.cancel().catch(() => undefined);
    throw tooLarge(options.maxBytes());
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
    size += chunk.byteLength;
    if (size > limit) throw tooLarge(options.maxBytes());
    chunks.push(Buffer.from(chunk));
  }
  return Buffer.concat(chunks);
}

const tooLarge = (max: number) =>
  new AttachmentTooLarge(
    `it is over the ${max >= 1024 * 1024 ? `${(max / 1024 / 1024).toFixed(1)} MB` : `${Math.ceil(max / 1024)} KB`} limit`,
  );

/** WeCom's media type for a file the agent sends; voice must be AMR for WeCom, so other audio goes as a file. */
export function mediaTypeOf(file: OutgoingFile): WecomMediaType {
  if (file.kind === 'image') return 'image';
  if (file.kind === 'video' && /\.mp4$/i.test(file.name)) return 'video';
  if (/\.amr$/i.test(file.name)) return 'voice';
  return 'file';
}

/** The file the message tool named (its path already checked), read for upload. */
export async function readUpload(file: OutgoingFile): Promise<Buffer> {
  const { size } = await stat(file.path);
  if (size === 0) throw new Error(`${file.name} is empty`);
  if (size > MAX_UPLOAD_BYTES) {
    throw new Error(`${file.name} is ${(size / 1024 / 1024).toFixed(1)} MB; WeCom takes files up to 50 MB`);
  }
  return readFile(file.path);
}
