/**
 * WeChat media on its CDN: files are AES-128-ECB encrypted (PKCS#7) with a per-file key. Downloading takes the
 * item's `encrypt_query_param` to `<cdnBaseUrl>/download`; uploading asks `getuploadurl` for a slot, POSTs the
 * encrypted bytes to `<cdnBaseUrl>/upload` and gets the download parameter back in `x-encrypted-param`.
 * Only the configured CDN's origin is ever fetched: a URL the server hands over for another host is not followed.
 */
import { createCipheriv, createDecipheriv } from 'node:crypto';
import type { AttachmentKind } from '../platform.js';
import { IlinkHttpError, readBytesCapped } from './api.js';

/** The 16-byte key of an inbound item: `aeskey` (hex, images) or `media.aes_key` (base64 of raw bytes or of hex). */
export function parseAesKey(hexKey: string | undefined, base64Key: string | undefined): Buffer | undefined {
  if (hexKey && /^[0-9a-fA-F]{32}$/.test(hexKey)) return Buffer.from(hexKey, 'hex');
  if (!base64Key) return undefined;
  const decoded = Buffer.from(base64Key, 'base64');
  if (decoded.length === 16) return decoded;
  const text = decoded.toString('latin1');
  if (decoded.length === 32 && /^[0-9a-fA-F]{32}$/.test(text)) return Buffer.from(text, 'hex');
  return undefined;
}

export function encrypt(data: Uint8Array, key: Buffer): Buffer {
  const cipher = createCipheriv('aes-128-ecb', key, null);
  return Buffer.concat([cipher.update(data), cipher.final()]);
}

/** Decrypts; a body whose padding is not valid PKCS#7 is refused rather than handed on as garbage. */
export function decrypt(data: Uint8Array, key: Buffer): Buffer {
  if (data.byteLength === 0 || data.byteLength % 16 !== 0) throw new Error('the encrypted file is damaged');
  const decipher = createDecipheriv('aes-128-ecb', key, null);
  try {
    return Buffer.concat([decipher.update(data), decipher.final()]);
  } catch {
    throw new Error('the file could not be decrypted (wrong key or damaged)');
  }
}

/** The size getuploadurl is told: PKCS#7 always adds 1–16 bytes. */
export function paddedSize(rawSize: number): number {
  return Math.ceil((rawSize + 1) / 16) * 16;
}

/** A URL the server handed over, kept only when it is on the configured CDN's origin. */
export function onCdn(candidate: string | undefined, cdnBaseUrl: string): string | undefined {
  if (!candidate) return undefined;
  try {
    const url = new URL(candidate);
    return url.origin === new URL(cdnBaseUrl).origin && !url.username && !url.password ? url.toString() : undefined;
  } catch {
    return undefined;
  }
}

export function downloadUrl(cdnBaseUrl: string, encryptedParam: string): string {
  return `${cdnBaseUrl.replace(/\/+$/, '')}/download?encrypted_query_param=${encodeURIComponent(encryptedParam)}`;
}

export function uploadUrl(cdnBaseUrl: string, uploadParam: string, fileKey: string): string {
  return (
    `${cdnBaseUrl.replace(/\/+$/, '')}/upload?encrypted_query_param=${encodeURIComponent(uploadParam)}` +
    `&filekey=${encodeURIComponent(fileKey)}`
  );
}

/** GETs a CDN file (at most `maxBytes`), no redirects. */
export async function fetchCdn(
  url: string,
  maxBytes: number,
  signal: AbortSignal,
  fetchImpl: typeof fetch = fetch,
): Promise<Uint8Array> {
  const response = await fetchImpl(url, { redirect: 'error', signal: AbortSignal.any([signal, timeout()]) });
  if (!response.ok) {
    await response.body?.cancel().catch(() => undefined);
    throw new IlinkHttpError(`WeChat CDN download: HTTP ${response.status}`, response.status);
  }
  return readBytesCapped(response, maxBytes, 'CDN download');
}

/** POSTs encrypted bytes to the CDN; returns the `x-encrypted-param` the message then names. */
export async function uploadCdn(url: string, body: Buffer, fetchImpl: typeof fetch = fetch): Promise<string> {
  const response = await fetchImpl(url, {
    method: 'POST',
    headers: { 'Content-Type': 'application/octet-stream' },
    body: new Uint8Array(body),
    redirect: 'error',
    signal: timeout(),
  });
  await response.body?.cancel().catch(() => undefined);
  if (!response.ok) throw new IlinkHttpError(`WeChat CDN upload: HTTP ${response.status}`, response.status);
  const param = response.headers.get('x-encrypted-param');
  if (!param) throw new Error('WeChat CDN upload: the answer has no x-encrypted-param');
  return param;
}

const timeout = () => AbortSignal.timeout(120_000);

/** iLink's item types, and the getuploadurl media types that go with them. */
export const ITEM = { text: 1, image: 2, voice: 3, file: 4, video: 5 } as const;
const UPLOAD_TYPE = { image: 1, video: 2, file: 3, audio: 4 } as const;

export function uploadKind(kind: AttachmentKind): {
  mediaType: number;
  itemType: number;
  key: 'image_item' | 'voice_item' | 'file_item' | 'video_item';
} {
  if (kind === 'image') return { mediaType: UPLOAD_TYPE.image, itemType: ITEM.image, key: 'image_item' };
  if (kind === 'video') return { mediaType: UPLOAD_TYPE.video, itemType: ITEM.video, key: 'video_item' };
  if (kind === 'audio') return { mediaType: UPLOAD_TYPE.audio, itemType: ITEM.voice, key: 'voice_item' };
  return { mediaType: UPLOAD_TYPE.file, itemType: ITEM.file, key: 'file_item' };
}
