/**
 * Attachments in both directions: what users send is saved under `<dataDir>/media/<channel>/` (size-capped, private
 * to the user, names sanitised) and handed to the agent as local paths; what the agent sends is classified by
 * extension so platforms can pick photo / audio / document uploads.
 */
import { randomBytes } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import { basename, extname, join } from 'node:path';
import { errorMessage } from '../util/errors.js';
import type { AttachmentKind, IncomingAttachment } from './platform.js';

const IMAGE_EXTENSIONS = new Set(['.jpg', '.jpeg', '.png', '.gif', '.webp']);
const AUDIO_EXTENSIONS = new Set(['.mp3', '.m4a', '.wav', '.aac', '.ogg', '.oga', '.opus', '.flac']);
const VIDEO_EXTENSIONS = new Set(['.mp4', '.mov', '.webm', '.mkv', '.avi', '.3gp']);
const MIME_EXTENSIONS: Record<string, string> = {
  'image/jpeg': '.jpg',
  'image/png': '.png',
  'image/gif': '.gif',
  'image/webp': '.webp',
  'audio/ogg': '.ogg',
  'audio/mpeg': '.mp3',
  'video/mp4': '.mp4',
  'application/pdf': '.pdf',
  // Office files sent without a name still get the extension read_file goes by.
  'application/vnd.openxmlformats-officedocument.wordprocessingml.document': '.docx',
  'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet': '.xlsx',
  'application/vnd.openxmlformats-officedocument.presentationml.presentation': '.pptx',
};

export class AttachmentTooLarge extends Error {}

export function kindOfPath(path: string): AttachmentKind {
  const ext = extname(path).toLowerCase();
  if (IMAGE_EXTENSIONS.has(ext)) return 'image';
  if (AUDIO_EXTENSIONS.has(ext)) return 'audio';
  if (VIDEO_EXTENSIONS.has(ext)) return 'video';
  return 'file';
}

/** A file name that cannot escape the directory or hide (`../x`, `.bashrc`, control characters). */
export function safeFileName(name: string | undefined, fallback: string): string {
  const base = basename((name ?? '').replace(/\\/g, '/'))
    .replace(/[^\w.-]+/g, '_')
    .replace(/^[.-]+/, '')
    .slice(-80);
  return base || fallback;
}

/**
 * Downloads one attachment into `dir` and returns its path. Stops and deletes the partial file as soon as it passes
 * `maxBytes` (the declared size is checked first, but platforms may not declare it or may lie).
 */
export async function saveAttachment(attachment: IncomingAttachment, dir: string, maxBytes: number): Promise<string> {
  if (attachment.size !== undefined && attachment.size > maxBytes) {
    throw new AttachmentTooLarge(`${describeSize(attachment.size)} is over the ${describeSize(maxBytes)} limit`);
  }
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const fallbackExt = (attachment.mimeType && MIME_EXTENSIONS[attachment.mimeType]) ?? '';
  const name = safeFileName(attachment.name, `${attachment.kind}${fallbackExt}`);
  const path = join(dir, `${Date.now()}-${randomBytes(3).toString('hex')}-${name}`);
  const controller = new AbortController();
  // Opened before the file is created: a source refused at once must leave no (empty) file behind.
  let source: AsyncIterable<Uint8Array>;
  try {
    source = await attachment.open(controller.signal);
  } catch (err) {
    throw new Error(`download failed: ${errorMessage(err)}`);
  }
  const out = createWriteStream(path, { mode: 0o600 });
  let written = 0;
  try {
    for await (const chunk of source) {
      written += chunk.byteLength;
      if (written > maxBytes) {
        controller.abort();
        throw new AttachmentTooLarge(`it is over the ${describeSize(maxBytes)} limit`);
      }
      if (!out.write(chunk)) await new Promise<void>((resolve) => out.once('drain', () => resolve()));
    }
    await new Promise<void>((resolve, reject) => out.end((err?: Error | null) => (err ? reject(err) : resolve())));
    return path;
  } catch (err) {
    out.destroy();
    await rm(path, { force: true });
    if (err instanceof AttachmentTooLarge) throw err;
    throw new Error(`download failed: ${errorMessage(err)}`);
  }
}

function describeSize(bytes: number): string {
  return bytes >= 1024 * 1024
    ? `${(bytes / 1024 / 1024).toFixed(1)} MB`
    : `${Math.max(1, Math.round(bytes / 1024))} KB`;
}
