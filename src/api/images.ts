/**
 * Images sent to the API as `data:` URLs are saved under `<dataDir>/media/api/` and reach the agent as attachments,
 * like a photo sent in a chat. Remote image URLs are refused rather than fetched (the server would be an SSRF proxy).
 */
import { randomBytes } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

const EXTENSIONS: Record<string, string> = {
  'image/png': '.png',
  'image/jpeg': '.jpg',
  'image/gif': '.gif',
  'image/webp': '.webp',
};
const DATA_URL = /^data:(image\/[\w.+-]+);base64,(.*)$/s;

export class ImageInputError extends Error {
  constructor(
    message: string,
    readonly tooLarge = false,
  ) {
    super(message);
  }
}

/** Checks every URL first, then writes the files (0600) and returns their paths in order. */
export async function saveDataUrlImages(urls: readonly string[], dir: string, maxBytes: number): Promise<string[]> {
  const images = urls.map((url, index) => decode(url, index, maxBytes));
  if (images.length === 0) return [];
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const paths: string[] = [];
  for (const image of images) {
    const path = join(dir, `${Date.now()}-${randomBytes(4).toString('hex')}${image.extension}`);
    await writeFile(path, image.bytes, { mode: 0o600 });
    paths.push(path);
  }
  return paths;
}

function decode(url: string, index: number, maxBytes: number): { extension: string; bytes: Buffer } {
  const match = DATA_URL.exec(url);
  const which = `image ${index + 1}`;
  if (!match) {
    throw new ImageInputError(`${which}: send images as data: URLs (base64); remote image URLs are not fetched`);
  }
  const extension = EXTENSIONS[match[1] ?? ''];
  if (!extension) throw new ImageInputError(`${which}: ${match[1]} is not supported; use PNG, JPEG, GIF or WebP`);
  const bytes = Buffer.from(match[2] ?? '', 'base64');
  if (bytes.length === 0) throw new ImageInputError(`${which}: the data URL holds no image data`);
  if (bytes.length > maxBytes) {
    throw new ImageInputError(`${which} is over the ${Math.round(maxBytes / 1024 / 1024)} MB limit`, true);
  }
  return { extension, bytes };
}
