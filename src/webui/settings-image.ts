/**
 * `settings.image_generation.update`: writes `tools.imageGeneration` (provider, enabled, model, default ratio and
 * size, images per turn). The running gateway rebuilds its agent on the config change, so it applies at once.
 * Enabling needs a provider that is ready (its key, sign-in or base URL), as upstream checks.
 */
import { imageProviderName } from '../tools/image/providers.js';
import { type ActionHandler, WebuiApiError } from './api.js';
import { imageProviderRows } from './settings-image-section.js';
import { optionalBool, optionalInt, optionalText } from './settings-input.js';
import { configOf, objectAt, writeAndAnswer } from './settings-write.js';

const ASPECT_RATIOS = new Set(['1:1', '3:4', '9:16', '4:3', '16:9', '3:2', '2:3', '21:9']);

const text = (payload: Record<string, unknown>, snake: string, camel: string) =>
  optionalText(payload, snake) ?? optionalText(payload, camel);

export const updateImageGeneration: ActionHandler = async (context, payload) => {
  const loaded = configOf(context).loaded();
  const changes: Record<string, unknown> = {};
  const provider = optionalText(payload, 'provider');
  if (provider !== undefined) {
    const name = imageProviderName(provider);
    if (!name) throw new WebuiApiError(400, 'unknown image generation provider');
    changes.provider = name;
  }
  const enabled = optionalBool(payload, 'enabled');
  if (enabled !== undefined) changes.enabled = enabled;
  const model = optionalText(payload, 'model');
  if (model !== undefined) {
    if (!model.trim()) throw new WebuiApiError(400, 'image generation model is required');
    if (model.length > 200) throw new WebuiApiError(400, 'image generation model is too long');
    changes.model = model.trim();
  }
  const ratio = text(payload, 'default_aspect_ratio', 'defaultAspectRatio');
  if (ratio !== undefined) {
    if (!ASPECT_RATIOS.has(ratio.trim())) throw new WebuiApiError(400, 'unsupported image generation aspect ratio');
    changes.defaultAspectRatio = ratio.trim();
  }
  const size = text(payload, 'default_image_size', 'defaultImageSize');
  if (size !== undefined) {
    if (!/^[A-Za-z0-9:_-]{1,32}$/.test(size.trim())) throw new WebuiApiError(400, 'unsupported image generation size');
    changes.defaultImageSize = size.trim();
  }
  const max = optionalInt(payload, 'max_images_per_turn', 1, 8) ?? optionalInt(payload, 'maxImagesPerTurn', 1, 8);
  if (max !== undefined) changes.maxImagesPerTurn = max;

  const image = loaded.config.tools.imageGeneration;
  const willEnable = (changes.enabled ?? image.enabled) === true;
  if (willEnable) {
    const chosen = String(changes.provider ?? imageProviderName(image.provider) ?? image.provider);
    const rows = await imageProviderRows(loaded, process.env);
    if (!rows.find((row) => row.name === chosen)?.configured) {
      throw new WebuiApiError(400, 'image generation provider is not configured');
    }
  }
  return writeAndAnswer(context, (tree) => {
    Object.assign(objectAt(tree, 'tools', 'imageGeneration'), changes);
  });
};
