/**
 * Files both ways. In: QQ hands attachment URLs (often protocol-relative, //multimedia.nt.qq.com/…); each is fetched
 * through the SSRF guard (public addresses only, every redirect re-checked), except at the configured API origin
 * (the owner's own choice, where we already send the token: a loopback fake in tests); the framework caps the size.
 * Out: upload as base64 to /files, then a msg_type 7 message carrying the returned file_info.
 */
import { readFile, stat } from 'node:fs/promises';
import { z } from 'zod';
import { createNetworkPolicy, type NetworkPolicy } from '../../security/network.js';
import type { AttachmentKind, IncomingAttachment, OutgoingFile } from '../platform.js';

/** QQ takes uploads of this size at most; base64 makes the request a third larger. */
export const MAX_UPLOAD_BYTES = 20 * 1024 * 1024;

export const attachmentSchema = z.looseObject({
  url: z.string().min(1),
  filename: z.string().optional(),
  content_type: z.string().optional(),
  size: z.union([z.number(), z.string()]).transform(Number).optional(),
});
export type QqAttachment = z.infer<typeof attachmentSchema>;

let network: NetworkPolicy | undefined;
const guard = () => {
  network ??= createNetworkPolicy();
  return network;
};

function kindOf(contentType: string | undefined): AttachmentKind {
  const type = (contentType ?? '').toLowerCase();
  if (type.startsWith('image')) return 'image';
  if (type.startsWith('video')) return 'video';
  if (type.startsWith('voice') || type.startsWith('audio')) return 'audio';
  return 'file';
}

export function toAttachment(att: QqAttachment, trustedOrigin: string): IncomingAttachment {
  const size = att.size !== undefined && Number.isFinite(att.size) && att.size >= 0 ? att.size : undefined;
  return {
    kind: kindOf(att.content_type),
    ...(att.filename ? { name: att.filename } : {}),
    ...(att.content_type?.includes('/') ? { mimeType: att.content_type } : {}),
    ...(size !== undefined ? { size } : {}),
    open: (signal) => openUrl(att.url, trustedOrigin, signal),
  };
}

async function openUrl(raw: string, trustedOrigin: string, signal: AbortSignal): Promise<AsyncIterable<Uint8Array>> {
  let url: URL;
  try {
    // A protocol-relative URL takes the API's scheme: https, or http for a fake on this machine.
    url = new URL(raw, trustedOrigin);
  } catch {
    throw new Error('the attachment URL is not valid');
  }
  if ((url.protocol !== 'http:' && url.protocol !== 'https:') || !/^(https?:)?\/\//i.test(raw)) {
    throw new Error('the attachment URL is not an http(s) address');
  }
  const response =
    url.origin === trustedOrigin
      ? await fetch(url, { signal, redirect: 'manual' })
      : await guard().fetch(url, { signal, maxRedirects: 3 });
  if (!response.ok || !response.body) {
    await response.body?.cancel().catch(() => undefined);
    throw new Error(`the attachment download answered HTTP ${response.status}`);
  }
  return response.body as unknown as AsyncIterable<Uint8Array>;
}

/** QQ's file_type: 1 image, 2 video, 3 voice (silk), 4 file. */
export function fileTypeOf(kind: AttachmentKind): 1 | 2 | 4 {
  if (kind === 'image') return 1;
  if (kind === 'video') return 2;
  // Voice must be silk-encoded for QQ; any other audio goes as a file.
  return 4;
}

/** The file the message tool named (its path already checked), read for upload. */
export async function readUpload(file: OutgoingFile): Promise<Buffer> {
  const { size } = await stat(file.path);
  if (size > MAX_UPLOAD_BYTES) {
    throw new Error(`${file.name} is ${(size / 1024 / 1024).toFixed(1)} MB; QQ takes files up to 20 MB`);
  }
  return readFile(file.path);
}
