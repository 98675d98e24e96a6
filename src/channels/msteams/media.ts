/**
 * Files in Teams activities, both ways. In: a file shared in a 1:1 chat arrives as a `file.download.info`
 * attachment whose pre-authorised SharePoint link is fetched without the bot's token; a pasted image arrives with a
 * contentUrl on Teams' connector, which needs the token and so is fetched only from a trusted serviceUrl host (or is
 * a `data:` URL). Anything else (a card, the HTML copy of the text, a link to some other host) is not fetched.
 * Out: Teams lets a bot send images inline (a `data:` URL attachment); other files would need the user's OneDrive
 * and a consent card, which this channel does not do yet.
 */
import { readFile, stat } from 'node:fs/promises';
import { extname } from 'node:path';
import { Readable } from 'node:stream';
import { z } from 'zod';
import type { AttachmentKind, IncomingAttachment, OutgoingFile } from '../platform.js';
import type { ActivityAttachment } from './activity.js';
import { isTrustedServiceUrl, originOf } from './trust.js';

export const FILE_DOWNLOAD_INFO = 'application/vnd.microsoft.teams.file.download.info';
/** Inline images larger than this are refused by Teams clients in practice. */
export const MAX_INLINE_IMAGE_BYTES = 1024 * 1024;
const SHAREPOINT_SUFFIXES = ['.sharepoint.com', '.sharepoint.us', '.sharepoint.de', '.sharepoint.cn'];
const DOWNLOAD_TIMEOUT_MS = 120_000;

const DownloadInfo = z.looseObject({ downloadUrl: z.string().min(1).max(8192), fileType: z.string().optional() });

const IMAGE_TYPES: Record<string, string> = {
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.gif': 'image/gif',
  '.webp': 'image/webp',
};

export interface MediaContext {
  trustedHosts: readonly string[];
  /** The bot's token, for images on Teams' own hosts. */
  token: () => Promise<string>;
  fetch?: typeof fetch;
}

/** The attachments of a message the agent should receive (at most `limit`). */
export function incomingAttachments(
  attachments: readonly ActivityAttachment[],
  context: MediaContext,
  limit = 10,
): IncomingAttachment[] {
  const out: IncomingAttachment[] = [];
  for (const attachment of attachments) {
    if (out.length >= limit) break;
    const incoming = toIncoming(attachment, context);
    if (incoming) out.push(incoming);
  }
  return out;
}

function toIncoming(attachment: ActivityAttachment, context: MediaContext): IncomingAttachment | undefined {
  const fetcher = context.fetch ?? globalThis.fetch;
  if (attachment.contentType === FILE_DOWNLOAD_INFO) {
    const info = DownloadInfo.safeParse(attachment.content);
    if (!info.success) return undefined;
    const name = attachment.name ?? `file.${info.data.fileType ?? 'bin'}`;
    return {
      kind: kindOfName(name),
      name,
      open: async (signal) => {
        const url = info.data.downloadUrl;
        if (!isFileHost(url, context.trustedHosts)) throw new Error(`not downloading from ${originOf(url)}`);
        return download(fetcher, url, undefined, signal);
      },
    };
  }
  const type = attachment.contentType.toLowerCase();
  const kind = type.startsWith('image/') ? 'image' : type.startsWith('audio/') ? 'audio' : undefined;
  if (!kind || !attachment.contentUrl) return undefined;
  const contentUrl = attachment.contentUrl;
  return {
    kind,
    ...(attachment.name ? { name: attachment.name } : {}),
    mimeType: type,
    open: async (signal) => {
      if (contentUrl.startsWith('data:')) return dataUrlContent(contentUrl);
      if (!isTrustedServiceUrl(contentUrl, context.trustedHosts)) {
        throw new Error(`not sending the bot's token to ${originOf(contentUrl)} (not a Teams host)`);
      }
      return download(fetcher, contentUrl, await context.token(), signal);
    },
  };
}

/** SharePoint/OneDrive (where Teams keeps shared files), or a trusted connector host. */
function isFileHost(value: string, trusted: readonly string[]): boolean {
  if (isTrustedServiceUrl(value, trusted)) return true;
  try {
    const url = new URL(value);
    const host = url.hostname.toLowerCase();
    return (
      url.protocol === 'https:' &&
      !url.username &&
      !url.password &&
      SHAREPOINT_SUFFIXES.some((suffix) => host.endsWith(suffix) && host.length > suffix.length)
    );
  } catch {
    return false;
  }
}

async function download(
  fetcher: typeof fetch,
  url: string,
  token: string | undefined,
  signal: AbortSignal,
): Promise<AsyncIterable<Uint8Array>> {
  const response = await fetcher(url, {
    ...(token ? { headers: { authorization: `Bearer ${token}` } } : {}),
    // A redirect could carry the token (or the request) elsewhere: none is followed.
    redirect: 'error',
    signal: AbortSignal.any([signal, AbortSignal.timeout(DOWNLOAD_TIMEOUT_MS)]),
  });
  if (!response.ok || !response.body) throw new Error(`the download answered HTTP ${response.status}`);
  return response.body as unknown as AsyncIterable<Uint8Array>;
}

function dataUrlContent(url: string): AsyncIterable<Uint8Array> {
  const match = /^data:[^,;]*(;[^,]*)?,(.*)$/s.exec(url);
  if (!match) throw new Error('a malformed data: URL');
  const payload = match[2] ?? '';
  const bytes = match[1]?.includes(';base64')
    ? Buffer.from(payload, 'base64')
    : Buffer.from(decodeURIComponent(payload), 'utf8');
  return Readable.from([bytes]);
}

function kindOfName(name: string): AttachmentKind {
  const ext = extname(name).toLowerCase();
  if (IMAGE_TYPES[ext]) return 'image';
  if (['.mp3', '.m4a', '.wav', '.ogg', '.aac'].includes(ext)) return 'audio';
  if (['.mp4', '.mov', '.webm'].includes(ext)) return 'video';
  return 'file';
}

/** An image the agent sends, as an inline attachment; other files get an error that says why. */
export async function inlineImage(file: OutgoingFile): Promise<Record<string, unknown>> {
  const type = IMAGE_TYPES[extname(file.name).toLowerCase()] ?? IMAGE_TYPES[extname(file.path).toLowerCase()];
  if (!type) {
    throw new Error(`Teams bots can send images only (${file.name} would need OneDrive, which is not supported yet)`);
  }
  const { size } = await stat(file.path);
  if (size > MAX_INLINE_IMAGE_BYTES) {
    throw new Error(`${file.name} is ${Math.ceil(size / 1024)} KB; Teams shows inline images up to 1 MB`);
  }
  const data = await readFile(file.path);
  return { contentType: type, contentUrl: `data:${type};base64,${data.toString('base64')}`, name: file.name };
}
