/**
 * Files that cross the WebUI by opaque reference, never by path: uploads (`POST /api/uploads` → a reference the
 * client puts in its `message` envelope). A client cannot name a path on the server, so it cannot make the agent
 * read a file it did not upload. (Files the agent sends go out by signed URL: media-urls.ts.)
 */
import { randomBytes } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { AttachmentTooLarge, kindOfPath, saveAttachment } from '../media.js';
import type { AttachmentKind } from '../platform.js';

export interface MediaRef {
  path: string;
  name: string;
  kind: AttachmentKind;
  size: number;
}

/** References live this long; a reference from an old page has to be uploaded again. */
const REF_TTL_MS = 24 * 60 * 60 * 1000;
const MAX_REFS = 2_000;

export class MediaRefs {
  private readonly refs = new Map<string, MediaRef & { at: number }>();

  constructor(private readonly now: () => number = Date.now) {}

  add(ref: MediaRef): string {
    this.prune();
    const id = randomBytes(18).toString('base64url');
    this.refs.set(id, { ...ref, at: this.now() });
    return id;
  }

  get(id: string): MediaRef | undefined {
    const entry = this.refs.get(id);
    if (!entry || this.now() - entry.at > REF_TTL_MS) return undefined;
    return entry;
  }

  private prune(): void {
    const cutoff = this.now() - REF_TTL_MS;
    for (const [id, entry] of this.refs) if (entry.at < cutoff) this.refs.delete(id);
    // Oldest first (Map keeps insertion order).
    while (this.refs.size >= MAX_REFS) {
      const oldest = this.refs.keys().next().value;
      if (oldest === undefined) break;
      this.refs.delete(oldest);
    }
  }
}

export class UploadError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/**
 * Saves the raw request body (the file) under `dir`: `Content-Length` must be exact and within `maxBytes`, the name
 * comes percent-encoded in `X-File-Name`. Compressed or chunked bodies are refused (their size is not known).
 */
export async function receiveUpload(req: IncomingMessage, dir: string, maxBytes: number): Promise<MediaRef> {
  if (req.headers['content-encoding'] && req.headers['content-encoding'] !== 'identity') {
    throw new UploadError(415, 'compressed uploads are not accepted');
  }
  const length = Number(req.headers['content-length']);
  if (!req.headers['content-length'] || !Number.isInteger(length) || length < 0) {
    throw new UploadError(411, 'send the file with an exact Content-Length');
  }
  if (length === 0) throw new UploadError(400, 'the file is empty');
  if (length > maxBytes) {
    throw new UploadError(413, `the file is larger than ${Math.round(maxBytes / 1024 / 1024)} MB (maxMediaMb)`);
  }
  const name = decodeName(req.headers['x-file-name']);
  const mimeType =
    String(req.headers['content-type'] ?? 'application/octet-stream')
      .split(';')[0]
      ?.trim() ?? '';
  const kind = kindOfMime(mimeType, name);
  try {
    const path = await saveAttachment(
      { kind, name, mimeType, size: length, open: async () => req as AsyncIterable<Uint8Array> },
      dir,
      maxBytes,
    );
    return { path, name, kind, size: length };
  } catch (err) {
    if (err instanceof AttachmentTooLarge) throw new UploadError(413, err.message);
    throw err;
  }
}

function decodeName(header: string | string[] | undefined): string {
  const raw = Array.isArray(header) ? header[0] : header;
  if (!raw) return 'file';
  try {
    return decodeURIComponent(raw).slice(0, 200) || 'file';
  } catch {
    return 'file';
  }
}

function kindOfMime(mimeType: string, name: string): AttachmentKind {
  if (mimeType.startsWith('image/')) return 'image';
  if (mimeType.startsWith('audio/')) return 'audio';
  if (mimeType.startsWith('video/')) return 'video';
  return kindOfPath(name);
}

/** The content type a file is served with: images and videos inline (never SVG, which can carry script), the rest as bytes. */
export function servedContentType(path: string): string {
  const lower = path.toLowerCase();
  if (/\.(jpe?g)$/.test(lower)) return 'image/jpeg';
  if (lower.endsWith('.png')) return 'image/png';
  if (lower.endsWith('.gif')) return 'image/gif';
  if (lower.endsWith('.webp')) return 'image/webp';
  if (lower.endsWith('.mp4')) return 'video/mp4';
  if (lower.endsWith('.webm')) return 'video/webm';
  if (lower.endsWith('.mov')) return 'video/quicktime';
  return 'application/octet-stream';
}
