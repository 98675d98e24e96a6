/**
 * Files sent inside a `message` envelope (nanobot's WebUI: `media: [{data_url, name}]`). Every item is checked
 * before anything is written — a base64 `data:` URL of an allowed type (no SVG: it can carry script), at most
 * `maxFileBytes` decoded, at most 4 files and one video per message — then each is saved like an upload (0600,
 * a safe name, under `media/websocket/`). A refusal names nanobot's reason (`attachment_rejected` + `reason`).
 */
import { extname } from 'node:path';
import { saveAttachment } from '../media.js';
import type { AttachmentKind } from '../platform.js';
import type { InlineAttachment } from './frames.js';

export const MAX_INLINE_FILES = 4;
const MAX_INLINE_VIDEOS = 1;

const IMAGE_TYPES: Record<string, string> = {
  'image/png': '.png',
  'image/jpeg': '.jpg',
  'image/webp': '.webp',
  'image/gif': '.gif',
};
const VIDEO_TYPES: Record<string, string> = { 'video/mp4': '.mp4', 'video/webm': '.webm', 'video/quicktime': '.mov' };
const DOCUMENT_TYPES = new Set([
  'application/json',
  'application/pdf',
  'application/toml',
  'application/vnd.openxmlformats-officedocument.presentationml.presentation',
  'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
  'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
  'application/x-yaml',
  'application/xml',
  'application/yaml',
  'text/csv',
  'text/markdown',
  'text/plain',
  'text/xml',
  'text/yaml',
]);

const DATA_URL = /^data:([^;,]+)((?:;[^;,]*)*);base64,/;
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

export type InlineRejection = 'malformed' | 'too_many_attachments' | 'too_many_videos' | 'mime' | 'size' | 'decode';

export interface DecodedFile {
  name: string;
  mimeType: string;
  kind: AttachmentKind;
  bytes: Buffer;
}

export type DecodedMedia = { ok: true; files: DecodedFile[] } | { ok: false; reason: InlineRejection; hint: string };

/** Checks and decodes every item; nothing is written. */
export function decodeInlineMedia(items: readonly InlineAttachment[], maxFileBytes: number): DecodedMedia {
  const refuse = (reason: InlineRejection, hint: string): DecodedMedia => ({ ok: false, reason, hint });
  const files: DecodedFile[] = [];
  let videos = 0;
  for (const [index, item] of items.entries()) {
    const label = `attachment ${index + 1}${item.name ? ` (${item.name.slice(0, 80)})` : ''}`;
    const match = DATA_URL.exec(item.data_url);
    if (!match?.[1]) return refuse('decode', `${label} is not a base64 data: URL`);
    const mimeType = match[1].trim().toLowerCase();
    const kind: AttachmentKind | undefined = IMAGE_TYPES[mimeType]
      ? 'image'
      : VIDEO_TYPES[mimeType]
        ? 'video'
        : DOCUMENT_TYPES.has(mimeType)
          ? 'file'
          : undefined;
    if (!kind) return refuse('mime', `${label}: ${mimeType} files are not accepted`);
    if (kind === 'video' && ++videos > MAX_INLINE_VIDEOS) {
      return refuse('too_many_videos', `at most ${MAX_INLINE_VIDEOS} video per message`);
    }
    if (kind !== 'video' && files.length - videos + 1 > MAX_INLINE_FILES) {
      return refuse('too_many_attachments', `at most ${MAX_INLINE_FILES} attachments per message`);
    }
    const data = item.data_url.slice(match[0].length);
    // Checked on the encoded length first, so an oversized file is never decoded.
    if (Math.floor((data.length * 3) / 4) - 2 > maxFileBytes) {
      return refuse('size', `${label} is larger than ${Math.round(maxFileBytes / 1024 / 1024)} MB (maxMediaMb)`);
    }
    if (!BASE64.test(data)) return refuse('decode', `${label} is not valid base64`);
    const bytes = Buffer.from(data, 'base64');
    if (bytes.length === 0) return refuse('decode', `${label} is empty`);
    if (bytes.length > maxFileBytes) {
      return refuse('size', `${label} is larger than ${Math.round(maxFileBytes / 1024 / 1024)} MB (maxMediaMb)`);
    }
    files.push({ name: fileName(item.name, kind, mimeType), mimeType, kind, bytes });
  }
  return { ok: true, files };
}

/** Saves decoded files under `dir` as uploads are saved; returns their paths in order. */
export async function storeInlineMedia(files: readonly DecodedFile[], dir: string): Promise<string[]> {
  const paths: string[] = [];
  for (const file of files) {
    const bytes = file.bytes;
    paths.push(
      await saveAttachment(
        {
          kind: file.kind,
          name: file.name,
          mimeType: file.mimeType,
          size: bytes.length,
          open: async () => once(bytes),
        },
        dir,
        bytes.length,
      ),
    );
  }
  return paths;
}

async function* once(bytes: Buffer): AsyncIterable<Uint8Array> {
  yield bytes;
}

/** The client's name, with the extension its type says for images and videos (a PNG is never saved as `.html`). */
function fileName(name: string | undefined, kind: AttachmentKind, mimeType: string): string {
  const given = (name ?? '').trim().slice(0, 200);
  const ext = IMAGE_TYPES[mimeType] ?? VIDEO_TYPES[mimeType];
  if (!ext) return given || 'file';
  const stem = given ? given.slice(0, given.length - extname(given).length) : '';
  const sameExt = extname(given).toLowerCase();
  if (stem && (sameExt === ext || (ext === '.jpg' && sameExt === '.jpeg'))) return given;
  return `${stem || kind}${ext}`;
}
