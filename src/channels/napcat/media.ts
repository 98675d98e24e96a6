/**
 * Files both ways. In: the URL a segment carries is fetched through the SSRF guard (public addresses only, each
 * redirect re-checked), except at the OneBot server's own origin (the implementation serving its own cache, where
 * we already connect); the framework caps the size. Out: the file travels inside the action as base64, so it works
 * when the implementation runs on another machine or in a container.
 */
import { readFile, stat } from 'node:fs/promises';
import { z } from 'zod';
import { createNetworkPolicy, type NetworkPolicy } from '../../security/network.js';
import type { AttachmentKind, IncomingAttachment, OutgoingFile } from '../platform.js';
import type { MediaSegment, Segment } from './segments.js';

/** base64 grows a file by a third, and the whole action is one WebSocket frame. */
export const MAX_OUTGOING_BYTES = 30 * 1024 * 1024;

let network: NetworkPolicy | undefined;
const guard = () => {
  network ??= createNetworkPolicy();
  return network;
};

/** The http(s) origin of the OneBot server (ws → http, wss → https). */
export function trustedOrigin(wsUrl: string): string {
  const url = new URL(wsUrl);
  url.protocol = url.protocol === 'wss:' ? 'https:' : 'http:';
  return url.origin;
}

/** Opens a URL an event named: at the server's own origin directly (no redirects), elsewhere through the guard. */
export async function openUrl(url: string, origin: string, signal: AbortSignal): Promise<AsyncIterable<Uint8Array>> {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new Error('the file URL is not valid');
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new Error('the file URL is not http(s)');
  if (parsed.origin === origin) {
    const response = await fetch(parsed, { signal, redirect: 'manual' });
    if (response.status >= 300 && response.status < 400) {
      await response.body?.cancel().catch(() => undefined);
      throw new Error(`the OneBot server redirected the file download (HTTP ${response.status})`);
    }
    if (!response.ok || !response.body) throw new Error(`the file download answered HTTP ${response.status}`);
    return response.body as unknown as AsyncIterable<Uint8Array>;
  }
  const response = await guard().fetch(parsed, { signal, maxRedirects: 3 });
  if (!response.ok || !response.body) throw new Error(`the file download answered HTTP ${response.status}`);
  return response.body as unknown as AsyncIterable<Uint8Array>;
}

/** What `get_file` / `get_image` answer (go-cqhttp, NapCat): a URL, or the content as base64. */
const fileInfoSchema = z.looseObject({
  url: z.string().optional(),
  base64: z.string().optional(),
  file_name: z.string().optional(),
});

export interface MediaSource {
  origin: string;
  /** Calls an action on the current connection. */
  call(action: string, params: Record<string, unknown>): Promise<unknown>;
}

/** A media segment as an attachment: its URL, or (none given) what get_file/get_image say about its file id. */
export function toAttachment(media: MediaSegment, source: MediaSource): IncomingAttachment {
  return {
    kind: media.kind,
    ...(media.name ? { name: media.name } : {}),
    ...(media.size !== undefined ? { size: media.size } : {}),
    open: async (signal) => {
      if (media.url) return openUrl(media.url, source.origin, signal);
      if (!media.fileId) throw new Error('the OneBot server gave no URL for it');
      const [action, params] =
        media.kind === 'image'
          ? ['get_image', { file: media.fileId }]
          : ['get_file', { file_id: media.fileId, file: media.fileId }];
      const info = fileInfoSchema.parse((await source.call(action, params)) ?? {});
      if (info.url && /^https?:\/\//i.test(info.url)) return openUrl(info.url, source.origin, signal);
      if (info.base64) return oneChunk(Buffer.from(info.base64, 'base64'));
      // A local path is on the implementation's machine (maybe not ours): never read paths it names.
      throw new Error(`the OneBot server gave no download URL for it (${action})`);
    },
  };
}

async function* chunks(data: Uint8Array): AsyncIterable<Uint8Array> {
  yield data;
}
const oneChunk = async (data: Uint8Array) => chunks(data);

const SEGMENT_OF: Record<AttachmentKind, string> = { image: 'image', audio: 'record', video: 'video', file: 'file' };

/** A local file (the message tool checked the path) as a segment carrying it in base64. */
export async function fileSegment(file: OutgoingFile): Promise<Segment> {
  const { size } = await stat(file.path);
  if (size > MAX_OUTGOING_BYTES) {
    throw new Error(`${file.name} is ${(size / 1024 / 1024).toFixed(1)} MB; QQ files go up to 30 MB here`);
  }
  const base64 = (await readFile(file.path)).toString('base64');
  const type = SEGMENT_OF[file.kind];
  return { type, data: { file: `base64://${base64}`, ...(type === 'file' ? { name: file.name } : {}) } };
}
