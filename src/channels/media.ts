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

const MIME_TYPES: Record<string, string> = {
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.png': 'image/png',
  '.gif': 'image/gif',
  '.webp': 'image/webp',
  '.mp3': 'audio/mpeg',
  '.m4a': 'audio/mp4',
  '.aac': 'audio/aac',
  '.ogg': 'audio/ogg',
  '.oga': 'audio/ogg',
  '.opus': 'audio/ogg',
  '.wav': 'audio/wav',
  '.flac': 'audio/flac',
  '.mp4': 'video/mp4',
  '.webm': 'video/webm',
  '.mov': 'video/quicktime',
  '.3gp': 'video/3gpp',
  '.pdf': 'application/pdf',
  '.txt': 'text/plain',
  '.md': 'text/markdown',
  '.csv': 'text/csv',
  '.json': 'application/json',
  '.zip': 'application/zip',
};

export class AttachmentTooLarge extends Error {}

/** The MIME type a platform is told for a file the agent sends, by its extension. */
export function mimeTypeOf(name: string): string {
  return MIME_TYPES[extname(name).toLowerCase()] ?? 'application/octet-stream';
}

export function kindOfPath(path: string): AttachmentKind {
  const ext = extname(path).toLowerCase();
  if (IMAGE_EXTENSIONS.has(ext)) return 'image';
  if (AUDIO_EXTENSIONS.has(ext)) return 'audio';
  if (VIDEO_EXTENSIONS.has(ext)) return 'video';
  return 'file';
}

/**
 * A file name that cannot escape the directory or hide (`../x`, `.bashrc`, control and bidi characters); letters and
 * digits of any script stay (季度报告.pdf keeps its name).
 */
export function safeFileName(name: string | undefined, fallback: string): string {
  const cleaned = basename((name ?? '').replace(/\\/g, '/')).replace(/[^\p{L}\p{M}\p{N}_.-]+/gu, '_');
  const base = Array.from(cleaned)
    .slice(-80)
    .join('')
    .replace(/^[.-]+/, '');
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
  const controller = new AbortController();
  // Opened before the file is created: a source refused at once must leave no (empty) file behind.
  let source: AsyncIterable<Uint8Array>;
  let head: IteratorResult<Uint8Array>;
  try {
    const iterator = (await attachment.open(controller.signal))[Symbol.asyncIterator]();
    head = await iterator.next();
    source = (async function* () {
      if (!head.done) yield head.value;
      for (let next = await iterator.next(); !next.done; next = await iterator.next()) yield next.value;
    })();
  } catch (err) {
    if (err instanceof AttachmentTooLarge) throw err;
    throw new Error(`download failed: ${errorMessage(err)}`);
  }
  // No name and no type (WeCom's images): the first bytes say whether it is an image, so the agent sees it as one.
  const fallbackExt =
    (attachment.mimeType && MIME_EXTENSIONS[attachment.mimeType]) ?? (head.done ? '' : sniffExtension(head.value));
  const name = safeFileName(attachment.name, `${attachment.kind}${fallbackExt}`);
  const path = join(dir, `${Date.now()}-${randomBytes(3).toString('hex')}-${name}`);
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
    // The file is opened asynchronously: wait until the stream is closed, or an open still under way would create
    // the file again after it was removed.
    if (!out.closed) await new Promise<void>((resolve) => out.once('close', () => resolve()).destroy());
    await rm(path, { force: true });
    if (err instanceof AttachmentTooLarge) throw err;
    throw new Error(`download failed: ${errorMessage(err)}`);
  }
}

const MAGIC: readonly [string, number[]][] = [
  ['.png', [0x89, 0x50, 0x4e, 0x47]],
  ['.jpg', [0xff, 0xd8, 0xff]],
  ['.gif', [0x47, 0x49, 0x46, 0x38]],
  ['.pdf', [0x25, 0x50, 0x44, 0x46]],
];

/** The extension the content's first bytes name (png, jpeg, gif, webp, pdf), or ''. */
export function sniffExtension(bytes: Uint8Array): string {
  const starts = (magic: number[], at = 0) => magic.every((byte, i) => bytes[at + i] === byte);
  if (starts([0x52, 0x49, 0x46, 0x46]) && starts([0x57, 0x45, 0x42, 0x50], 8)) return '.webp';
  return MAGIC.find(([, magic]) => starts(magic))?.[0] ?? '';
}

function describeSize(bytes: number): string {
  return bytes >= 1024 * 1024
    ? `${(bytes / 1024 / 1024).toFixed(1)} MB`
    : `${Math.max(1, Math.round(bytes / 1024))} KB`;
}
