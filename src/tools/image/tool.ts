/**
 * `generate_image`: makes or edits images through the configured image provider and keeps each one as an artifact
 * under nanobot's media dir. The result names the artifacts' paths; the model delivers them with the `message`
 * tool's `media` and passes them back as `reference_images` for follow-up edits (upstream's contract). Registered
 * only when `tools.imageGeneration.enabled`, so the default tool list does not grow.
 */
import { z } from 'zod';
import { policyCheck, readCheckedFile } from '../../security/checked-open.js';
import type { PathPolicy } from '../../security/workspace.js';
import { defineTool, fail, ok } from '../types.js';
import { type ImageArtifact, storeImageArtifact } from './artifacts.js';
import { type ImageClient, ImageGenerationError, MAX_IMAGE_BYTES, type ReferenceImage, sniffImage } from './common.js';

export interface ImageGenerationSettings {
  provider: string;
  model: string;
  defaultAspectRatio: string;
  defaultImageSize: string;
  maxImagesPerTurn: number;
  saveDir: string;
}

export interface GenerateImageToolOptions {
  settings: ImageGenerationSettings;
  /** The provider's client; built on first use (a proxy or a sign-in may need loading). */
  client: () => Promise<ImageClient>;
  /** Reference images must be readable under this policy (the workspace and the media dir). */
  policy: PathPolicy;
  /** `<dataDir>/media`. */
  mediaDir: string;
  timeZone?: string;
  now?: () => Date;
}

const parameters = z.object({
  prompt: z
    .string()
    .min(1)
    .describe(
      'Detailed image generation or edit prompt. Include style, subject, composition, colors, and constraints.',
    ),
  reference_images: z
    .array(z.string())
    .max(8)
    .optional()
    .describe('Optional local image paths to edit from. Use generated artifact paths for iterative edits.'),
  aspect_ratio: z.string().optional().describe('Optional output aspect ratio, e.g. 1:1, 16:9, 9:16, 4:3.'),
  image_size: z.string().optional().describe('Optional size hint the provider supports, e.g. 1K, 2K, 4K, 1024x1024.'),
  count: z.int().min(1).max(8).optional().describe('Number of images to generate in this turn.'),
});

const NEXT_STEP =
  'Use these artifact paths as reference_images for follow-up edits. Call the message tool with the artifact paths ' +
  'in the media parameter to deliver the images to the user. Keep raw paths internal unless the user asks for debug ' +
  'details.';

export function createGenerateImageTool(options: GenerateImageToolOptions) {
  const { settings } = options;
  return defineTool({
    name: 'generate_image',
    description:
      'Generate or edit images and store them as persistent artifacts. Returns artifact ids and local paths. For ' +
      'edits, pass prior generated image paths or user image paths as reference_images.',
    parameters,
    async execute(args, ctx) {
      const requested = args.count ?? 1;
      if (requested > settings.maxImagesPerTurn) {
        return fail(`count exceeds tools.imageGeneration.maxImagesPerTurn (${settings.maxImagesPerTurn})`);
      }
      try {
        const references = (args.reference_images ?? []).filter(Boolean).map((path) => readReference(path, options));
        const client = await options.client();
        const artifacts: ImageArtifact[] = [];
        // One call per image at most: a provider that answers with fewer images than asked is asked again.
        for (let call = 0; call < requested && artifacts.length < requested; call++) {
          const answer = await client.generate({
            prompt: args.prompt,
            model: settings.model,
            referenceImages: references,
            aspectRatio: args.aspect_ratio || settings.defaultAspectRatio,
            imageSize: args.image_size || settings.defaultImageSize,
            signal: ctx.signal,
          });
          for (const image of answer.images.slice(0, requested - artifacts.length)) {
            artifacts.push(
              await storeImageArtifact(image, {
                mediaDir: options.mediaDir,
                saveDir: settings.saveDir,
                prompt: args.prompt,
                model: settings.model,
                provider: settings.provider,
                sourceImages: references.map((ref) => ref.name),
                ...(options.now ? { now: options.now() } : {}),
                ...(options.timeZone ? { timeZone: options.timeZone } : {}),
              }),
            );
          }
        }
        return ok(JSON.stringify({ artifacts, next_step: NEXT_STEP }));
      } catch (error) {
        if (error instanceof ImageGenerationError) return fail(error.message);
        return fail(`image generation failed: ${(error as Error).message}`);
      }
    },
  });
}

/** A reference image: inside the workspace or the media dir, a regular file (no link out), and an image. */
function readReference(path: string, options: GenerateImageToolOptions): ReferenceImage {
  const resolved = options.policy.resolve(path, 'read');
  if (!resolved.ok) {
    throw new ImageGenerationError(
      `reference_images must be inside the workspace or nanobot's media directory: ${resolved.error}`,
    );
  }
  let bytes: Buffer;
  try {
    bytes = readCheckedFile(resolved.path, policyCheck(options.policy, 'read'), MAX_IMAGE_BYTES);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') throw new ImageGenerationError(`reference image not found: ${path}`);
    throw new ImageGenerationError(`reference image cannot be read: ${path} (${(error as Error).message})`);
  }
  const mime = sniffImage(bytes);
  if (!mime) throw new ImageGenerationError(`unsupported reference image (png, jpeg, gif or webp only): ${path}`);
  return { bytes, mime, name: resolved.path };
}
