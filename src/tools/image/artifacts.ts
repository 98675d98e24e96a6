/**
 * Generated images are kept as artifacts under nanobot's media dir, as upstream keeps them:
 * `<dataDir>/media/<saveDir>/YYYY-MM-DD/img_<id>.<ext>` with a JSON sidecar (`img_<id>.json`: id, path, mime,
 * prompt, model, provider, source_images, created_at). The media dir is nanobot's own, outside the workspace.
 */
import { randomBytes } from 'node:crypto';
import { isAbsolute, join } from 'node:path';
import { writeFileAtomic } from '../../util/fs.js';
import { type ImageFile, ImageGenerationError } from './common.js';

const EXTENSIONS: Record<string, string> = {
  'image/png': '.png',
  'image/jpeg': '.jpg',
  'image/webp': '.webp',
  'image/gif': '.gif',
};

export interface ImageArtifact {
  id: string;
  path: string;
  mime: string;
  prompt: string;
  model: string;
  provider: string;
  source_images: string[];
  created_at: string;
}

/** `saveDir` as path segments under the media dir; absolute paths, `.` and `..` are refused. */
export function safeSaveDir(saveDir: string): string[] {
  const normalized = saveDir.replaceAll('\\', '/').replace(/^\/+|\/+$/g, '');
  const parts = normalized.split('/');
  if (!normalized || isAbsolute(saveDir) || parts.some((part) => part === '' || part === '.' || part === '..')) {
    throw new ImageGenerationError('tools.imageGeneration.saveDir must be a relative folder inside the media dir');
  }
  return parts;
}

const pad = (n: number) => String(n).padStart(2, '0');

export interface StoreOptions {
  mediaDir: string;
  saveDir: string;
  prompt: string;
  model: string;
  provider: string;
  sourceImages: string[];
  now?: Date;
  /** `Intl` time zone for the day folder (agents.defaults.timezone); the local one otherwise. */
  timeZone?: string;
}

/** Writes the image and its sidecar (each atomically, 0600) and returns the sidecar's content. */
export async function storeImageArtifact(image: ImageFile, options: StoreOptions): Promise<ImageArtifact> {
  const extension = EXTENSIONS[image.mime];
  if (!extension) throw new ImageGenerationError(`unsupported image type: ${image.mime}`);
  const now = options.now ?? new Date();
  const day = dayOf(now, options.timeZone);
  const dir = join(options.mediaDir, ...safeSaveDir(options.saveDir), day);
  const id = `img_${randomBytes(6).toString('hex')}`;
  const path = join(dir, `${id}${extension}`);
  await writeFileAtomic(path, image.bytes, 0o600);
  const artifact: ImageArtifact = {
    id,
    path,
    mime: image.mime,
    prompt: options.prompt,
    model: options.model,
    provider: options.provider,
    source_images: options.sourceImages,
    created_at: now.toISOString(),
  };
  await writeFileAtomic(join(dir, `${id}.json`), `${JSON.stringify(artifact, null, 2)}\n`, 0o600);
  return artifact;
}

function dayOf(now: Date, timeZone?: string): string {
  if (timeZone) {
    try {
      return new Intl.DateTimeFormat('en-CA', { timeZone, year: 'numeric', month: '2-digit', day: '2-digit' }).format(
        now,
      );
    } catch {
      // an unknown zone: the local date
    }
  }
  return `${now.getFullYear()}-${pad(now.getMonth() + 1)}-${pad(now.getDate())}`;
}
