/**
 * Signed media URLs (nanobot's `/api/media/<sig>/<payload>`): how a client fetches a file the agent sent. An
 * `<img src>` cannot carry a token, so the URL itself is the capability: `payload` is the file's path relative to
 * the media directory and when the URL stops working, `sig` an HMAC of it under a secret that never leaves this
 * process. Only files under `~/.nanobot/media` get a URL (the `message` tool copies what it sends there, after its
 * own checks); whether the opened file really lies there is decided again when it is served (rest.ts).
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { basename, extname, isAbsolute, relative, resolve, sep } from 'node:path';
import type { MediaUrl } from './frames.js';

/** A URL works this long (a reload re-signs the files of an old chat). */
export const MEDIA_URL_TTL_MS = 24 * 60 * 60 * 1000;
export const MEDIA_URL_PREFIX = '/api/media/';
const MAC_BYTES = 16;
const MAX_PAYLOAD_CHARS = 2_048;

const IMAGE = new Set(['.png', '.jpg', '.jpeg', '.gif', '.webp']);
const VIDEO = new Set(['.mp4', '.webm', '.mov']);

export function mediaKind(name: string): MediaUrl['kind'] {
  const ext = extname(name).toLowerCase();
  if (IMAGE.has(ext)) return 'image';
  if (VIDEO.has(ext)) return 'video';
  return 'file';
}

export type VerifiedMedia =
  | { ok: true; path: string; name: string }
  | { ok: false; status: 400 | 401 | 404 | 410; error: string };

export class MediaSigner {
  private readonly root: string;

  constructor(
    /** `~/.nanobot/media`. */
    mediaRoot: string,
    private readonly secret: Buffer = randomBytes(32),
    private readonly now: () => number = Date.now,
    private readonly ttlMs = MEDIA_URL_TTL_MS,
  ) {
    this.root = resolve(mediaRoot);
  }

  /** The URL for a file under the media directory; undefined for any other path (it is not served). */
  sign(path: string): MediaUrl | undefined {
    const rel = relative(this.root, resolve(path));
    if (!rel || rel.startsWith('..') || isAbsolute(rel)) return undefined;
    const expires = Math.ceil((this.now() + this.ttlMs) / 1000);
    const payload = Buffer.from(`${expires}/${rel.split(sep).join('/')}`, 'utf8').toString('base64url');
    const name = basename(path);
    return { url: `${MEDIA_URL_PREFIX}${this.mac(payload)}/${payload}`, name, kind: mediaKind(name) };
  }

  /** `/api/media/<sig>/<payload>` → the file it names, if the signature is right and the URL has not expired. */
  verify(pathname: string): VerifiedMedia {
    const parts = pathname.slice(MEDIA_URL_PREFIX.length).split('/');
    const [sig, payload] = parts;
    if (!pathname.startsWith(MEDIA_URL_PREFIX) || parts.length !== 2 || !sig || !payload) {
      return { ok: false, status: 404, error: 'not found' };
    }
    if (payload.length > MAX_PAYLOAD_CHARS || !/^[A-Za-z0-9_-]+$/.test(payload) || !this.macMatches(sig, payload)) {
      return { ok: false, status: 401, error: 'invalid signature' };
    }
    const decoded = Buffer.from(payload, 'base64url').toString('utf8');
    const slash = decoded.indexOf('/');
    const expires = Number(decoded.slice(0, slash));
    const rel = decoded.slice(slash + 1);
    if (slash < 1 || !Number.isSafeInteger(expires) || !rel)
      return { ok: false, status: 400, error: 'invalid payload' };
    if (this.now() > expires * 1000) {
      return { ok: false, status: 410, error: 'this link has expired; reopen the chat for a fresh one' };
    }
    const path = resolve(this.root, rel);
    const inside = relative(this.root, path);
    if (!inside || inside.startsWith('..') || isAbsolute(inside)) return { ok: false, status: 404, error: 'not found' };
    return { ok: true, path, name: basename(path) };
  }

  private mac(payload: string): string {
    return createHmac('sha256', this.secret)
      .update(`nanobot-media:${payload}`)
      .digest()
      .subarray(0, MAC_BYTES)
      .toString('base64url');
  }

  private macMatches(sig: string, payload: string): boolean {
    const given = Buffer.from(sig, 'base64url');
    const expected = Buffer.from(this.mac(payload), 'base64url');
    return given.length === expected.length && timingSafeEqual(given, expected);
  }
}
