/**
 * Files both ways. In: the robot API turns a message's downloadCode into a short-lived address, which is fetched
 * through the SSRF guard (public addresses only, every redirect re-checked), except at the configured API origin
 * (the owner's own choice: a loopback fake in tests); the framework caps the size. Out: upload to media/upload as
 * image, voice, video or file (as upstream; HTML is zipped first, DingTalk refuses it raw), then a sampleImageMsg
 * with the media_id for images and a sampleFile for the rest.
 */
import { readFile, stat } from 'node:fs/promises';
import { extname } from 'node:path';
import { createNetworkPolicy, type NetworkPolicy } from '../../security/network.js';
import { mimeTypeOf } from '../media.js';
import type { OutgoingFile } from '../platform.js';
import type { UploadType } from './api.js';
import { zipOne } from './zip.js';

/** DingTalk takes uploads of this size at most. */
export const MAX_UPLOAD_BYTES = 20 * 1024 * 1024;

let network: NetworkPolicy | undefined;
const guard = () => {
  network ??= createNetworkPolicy();
  return network;
};

/** Fetches a download address DingTalk gave. */
export async function openDownload(
  raw: string,
  trustedOrigin: string,
  signal: AbortSignal,
): Promise<AsyncIterable<Uint8Array>> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new Error('the download address is not a URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error('the download address is not http(s)');
  const response =
    url.origin === trustedOrigin
      ? await fetch(url, { signal, redirect: 'manual' })
      : await guard().fetch(url, { signal, maxRedirects: 3 });
  if (!response.ok || !response.body) {
    await response.body?.cancel().catch(() => undefined);
    throw new Error(`the download answered HTTP ${response.status}`);
  }
  return response.body as unknown as AsyncIterable<Uint8Array>;
}

export interface Upload {
  type: UploadType;
  data: Buffer;
  name: string;
  mimeType: string;
  /** sampleFile's fileType: the extension without its dot. */
  fileType: string;
}

/** The file the message tool named (its path already checked), read and shaped for DingTalk's upload. */
export async function prepareUpload(file: OutgoingFile): Promise<Upload> {
  const { size } = await stat(file.path);
  if (size > MAX_UPLOAD_BYTES) {
    throw new Error(`${file.name} is ${(size / 1024 / 1024).toFixed(1)} MB; DingTalk takes files up to 20 MB`);
  }
  let data: Buffer = await readFile(file.path);
  let name = file.name;
  let ext = extname(name).toLowerCase();
  if (ext === '.html' || ext === '.htm') {
    data = zipOne(name, data);
    name = `${name.slice(0, -ext.length) || 'attachment'}.zip`;
    ext = '.zip';
  }
  const type: UploadType =
    ext === '.zip' ? 'file' : file.kind === 'image' ? 'image' : file.kind === 'audio' ? 'voice' : file.kind;
  const fileType = (ext.slice(1) || 'bin').replace(/^jpeg$/, 'jpg');
  return { type, data, name, mimeType: mimeTypeOf(name), fileType };
}
