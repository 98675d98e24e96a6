/**
 * Files to and from WeChat's CDN: an inbound item becomes an attachment the framework opens (after access control)
 * by downloading and decrypting it; an outbound file is encrypted with a fresh key, uploaded into the slot
 * getuploadurl gives, and described as the message item that names it.
 */
import { createHash, randomBytes } from 'node:crypto';
import { readFile, stat } from 'node:fs/promises';
import { z } from 'zod';
import type { AttachmentKind, IncomingAttachment, OutgoingFile } from '../platform.js';
import type { IlinkApi } from './api.js';
import type { MediaItem } from './inbound.js';
import {
  decrypt,
  downloadUrl,
  encrypt,
  fetchCdn,
  ITEM,
  onCdn,
  paddedSize,
  parseAesKey,
  uploadCdn,
  uploadKind,
  uploadUrl,
} from './media.js';

const MAX_OUTBOUND_FILE_BYTES = 100 * 1024 * 1024;
const uploadAnswer = z.looseObject({
  upload_full_url: z.string().nullish().catch(''),
  upload_param: z.string().nullish().catch(''),
});

interface Cdn {
  cdnBaseUrl: string;
  fetch?: typeof fetch | undefined;
}

/** How to open an inbound item, or undefined when it cannot be fetched (no key for a non-image, no locator). */
export function cdnOpener(
  item: MediaItem,
  kind: AttachmentKind,
  cdn: Cdn & { maxBytes: number },
): IncomingAttachment['open'] | undefined {
  const key = parseAesKey(item.aeskey, item.media?.aes_key);
  // Without a key only a picture may come as plain bytes (as WeChat sends some); anything else is refused.
  if (!key && kind !== 'image') return undefined;
  const urls = [
    onCdn(item.media?.full_url, cdn.cdnBaseUrl),
    item.media?.encrypt_query_param ? downloadUrl(cdn.cdnBaseUrl, item.media.encrypt_query_param) : undefined,
  ].filter((url): url is string => url !== undefined);
  if (urls.length === 0) return undefined;
  return async (signal) => {
    let lastError: unknown;
    for (const url of urls) {
      try {
        const body = await fetchCdn(url, cdn.maxBytes, signal, cdn.fetch);
        const plain = key ? decrypt(body, key) : Buffer.from(body);
        return (async function* () {
          yield new Uint8Array(plain);
        })();
      } catch (err) {
        lastError = err;
      }
    }
    throw lastError instanceof Error ? lastError : new Error('download failed');
  };
}

/** Uploads a local file (a copy the message tool made under ~/.nanobot/media) and returns its message item. */
export async function uploadFile(
  api: IlinkApi,
  cdn: Cdn,
  chatId: string,
  file: OutgoingFile,
): Promise<Record<string, unknown>> {
  const size = (await stat(file.path)).size;
  if (size > MAX_OUTBOUND_FILE_BYTES) throw new Error(`${file.name} is too large for WeChat (${size} bytes)`);
  const data = await readFile(file.path);
  const key = randomBytes(16);
  const fileKey = randomBytes(16).toString('hex');
  const kind = uploadKind(file.kind);
  const slot = await api.post(
    'ilink/bot/getuploadurl',
    {
      filekey: fileKey,
      media_type: kind.mediaType,
      to_user_id: chatId,
      rawsize: data.byteLength,
      rawfilemd5: createHash('md5').update(data).digest('hex'),
      filesize: paddedSize(data.byteLength),
      no_need_thumb: true,
      aeskey: key.toString('hex'),
    },
    uploadAnswer,
    { timeoutMs: 15_000 },
  );
  const url =
    onCdn(slot.upload_full_url ?? undefined, cdn.cdnBaseUrl) ??
    (slot.upload_param ? uploadUrl(cdn.cdnBaseUrl, slot.upload_param, fileKey) : undefined);
  if (!url) throw new Error('WeChat getuploadurl gave no upload address on the configured CDN');
  const param = await uploadCdn(url, encrypt(data, key), cdn.fetch);
  const encrypted = paddedSize(data.byteLength);
  const media: Record<string, unknown> = {
    // The message names the key as base64 of its hex text (what WeChat clients expect).
    media: {
      encrypt_query_param: param,
      aes_key: Buffer.from(key.toString('hex')).toString('base64'),
      encrypt_type: 1,
    },
    ...(kind.itemType === ITEM.image ? { mid_size: encrypted } : {}),
    ...(kind.itemType === ITEM.video ? { video_size: encrypted } : {}),
    ...(kind.itemType === ITEM.file ? { file_name: file.name, len: String(data.byteLength) } : {}),
  };
  return { type: kind.itemType, [kind.key]: media };
}
