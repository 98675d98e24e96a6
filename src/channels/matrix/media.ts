/**
 * Files both ways through the homeserver's media repository: uploads for what the agent sends, authenticated
 * downloads (`/_matrix/client/v1/media`, with the older unauthenticated path for servers before Matrix 1.11) for
 * what users send.
 */
import { readFile } from 'node:fs/promises';
import type { MatrixClient } from 'matrix-js-sdk';
import { mimeTypeOf } from '../media.js';
import type { OutgoingFile } from '../platform.js';

export interface UploadedFile {
  url: string;
  mimeType: string;
  size: number;
}

export async function uploadFile(client: MatrixClient, file: OutgoingFile): Promise<UploadedFile> {
  const data = new Uint8Array(await readFile(file.path));
  const mimeType = mimeTypeOf(file.name);
  const { content_uri } = await client.uploadContent(data, { name: file.name, type: mimeType, includeFilename: true });
  return { url: content_uri, mimeType, size: data.byteLength };
}

export async function downloadMedia(
  client: MatrixClient,
  mxc: string,
  signal: AbortSignal,
): Promise<AsyncIterable<Uint8Array>> {
  const authenticated = client.mxcUrlToHttp(mxc, undefined, undefined, undefined, false, true, true);
  if (!authenticated) throw new Error(`not a media URI: ${mxc}`);
  const headers = { authorization: `Bearer ${client.getAccessToken() ?? ''}` };
  let response = await fetch(authenticated, { headers, signal });
  if (response.status === 404 || response.status === 405) {
    const legacy = client.mxcUrlToHttp(mxc, undefined, undefined, undefined, false, true, false);
    if (legacy) response = await fetch(legacy, { signal });
  }
  if (!response.ok || !response.body) throw new Error(`the homeserver answered HTTP ${response.status} for ${mxc}`);
  return response.body as AsyncIterable<Uint8Array>;
}
