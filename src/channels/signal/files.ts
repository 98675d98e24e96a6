/**
 * Files both ways. In: signal-cli downloads what people send into its attachments directory and names each file in
 * the message (`id`); the channel reads it from there, and only from there (the id must be a plain file name, the
 * file a regular file in that very directory: no `..`, no symlink out, no FIFO). Out: the file goes inline as a data
 * URI, so the daemon needs no access to nanobot's media folder (it may run as another user, or in a container).
 */
import { constants } from 'node:fs';
import { open, realpath } from 'node:fs/promises';
import { join } from 'node:path';
import { mimeTypeOf } from '../media.js';
import type { AttachmentKind, IncomingAttachment, OutgoingFile } from '../platform.js';
import type { SignalAttachmentInfo } from './envelope.js';

/** What an attachment id may look like: signal-cli names files by a random id plus an extension. */
const ATTACHMENT_ID = /^[A-Za-z0-9_-][A-Za-z0-9._-]{0,199}$/;
/** Signal refuses attachments over 100 MiB. */
export const MAX_OUTGOING_BYTES = 100 * 1024 * 1024;

export class AttachmentRefused extends Error {}

/** The attachment as the framework downloads it: opened from the attachments directory, checked first. */
export function toAttachment(info: SignalAttachmentInfo, dir: string): IncomingAttachment {
  return {
    kind: kindOfType(info.contentType),
    ...(info.filename ? { name: info.filename } : {}),
    ...(info.contentType ? { mimeType: info.contentType } : {}),
    ...(info.size !== undefined ? { size: info.size } : {}),
    open: (signal) => openAttachment(dir, info.id, signal),
  };
}

function kindOfType(contentType: string | undefined): AttachmentKind {
  const major = contentType?.split('/')[0];
  return major === 'image' || major === 'audio' || major === 'video' ? major : 'file';
}

/**
 * Opens `<dir>/<id>` for reading, refusing anything that is not a regular file directly in `dir`: the id comes from
 * the message, so it is checked like any name a stranger chose, and the final component must not be a symlink.
 */
export async function openAttachment(
  dir: string,
  id: string,
  signal?: AbortSignal,
): Promise<AsyncIterable<Uint8Array>> {
  if (!ATTACHMENT_ID.test(id) || id.includes('..'))
    throw new AttachmentRefused(`attachment id ${JSON.stringify(id.slice(0, 80))} is not a file name`);
  let root: string;
  try {
    root = await realpath(dir);
  } catch {
    throw new AttachmentRefused(
      `signal-cli's attachments directory ${dir} does not exist (set channels.signal.attachmentsDir)`,
    );
  }
  let handle: Awaited<ReturnType<typeof open>>;
  try {
    // O_NONBLOCK: a FIFO planted under that name must not hang the channel; it is refused below.
    handle = await open(join(root, id), constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new AttachmentRefused(
      code === 'ENOENT'
        ? `signal-cli did not save attachment ${id} (is channels.signal.attachmentsDir where it saves them?)`
        : code === 'ELOOP'
          ? `attachment ${id} is a symbolic link: refused`
          : `cannot open attachment ${id}: ${code ?? String(err)}`,
    );
  }
  const stat = await handle.stat();
  if (!stat.isFile()) {
    await handle.close();
    throw new AttachmentRefused(`attachment ${id} is not a regular file: refused`);
  }
  const stream = handle.createReadStream();
  signal?.addEventListener('abort', () => stream.destroy(), { once: true });
  return stream;
}

/**
 * A file as signal-cli's data URI (`data:<type>;filename=<name>;base64,<data>`, the name URL-encoded as signal-cli
 * decodes it). The path is a copy the framework made under nanobot's media folder after its own checks.
 */
export async function dataUriOf(file: OutgoingFile): Promise<string> {
  const handle = await open(file.path, constants.O_RDONLY | constants.O_NOFOLLOW);
  try {
    const stat = await handle.stat();
    if (!stat.isFile()) throw new AttachmentRefused(`${file.name} is not a regular file`);
    if (stat.size > MAX_OUTGOING_BYTES)
      throw new AttachmentRefused(
        `${file.name} is ${Math.ceil(stat.size / 1024 / 1024)} MB: Signal takes up to 100 MB`,
      );
    const content = await handle.readFile();
    return `data:${mimeTypeOf(file.name)};filename=${encodeURIComponent(file.name)};base64,${content.toString('base64')}`;
  } finally {
    await handle.close();
  }
}
