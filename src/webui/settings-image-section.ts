/**
 * The `image_generation` section of the WebUI's settings payload (nanobot's Settings → Image): the configured values
 * and every image provider, with whether it is ready (a key, a sign-in, a base URL) and the models to offer.
 */
import type { LoadedConfig } from '../config/load.js';
import { findSpec } from '../providers/registry.js';
import { secretHint } from '../security/secret-hints.js';
import { IMAGE_PROVIDERS, imageProviderName, imageProviderSettings } from '../tools/image/providers.js';
import { oauthStates } from './settings-providers.js';

/** A model to offer for each provider (upstream's first option). */
const MODEL_OPTIONS: Record<string, string[]> = {
  openrouter: ['openai/gpt-5.4-image-2'],
  openai: ['gpt-image-2', 'gpt-image-1', 'dall-e-3', 'dall-e-2'],
  openai_codex: ['gpt-5.4'],
  custom: [],
  aihubmix: ['gpt-image-2-free'],
  minimax: ['image-01'],
  gemini: ['gemini-2.5-flash-image', 'imagen-4.0-generate-001'],
  ollama: ['x/z-image-turbo'],
  stepfun: ['step-image-edit-2', 'step-1x-medium'],
  zhipu: ['glm-image', 'cogview-4', 'cogview-4-250304', 'cogview-3-flash'],
  modelscope: ['Qwen/Qwen-Image-2512'],
};

type Env = Record<string, string | undefined>;

export async function imageProviderRows(loaded: LoadedConfig, env: Env) {
  const oauth = await oauthStates(loaded);
  const providers = loaded.config.providers as Record<string, Record<string, unknown>>;
  return Object.keys(IMAGE_PROVIDERS).map((name) => {
    const settings = imageProviderSettings(name, providers, env);
    const spec = findSpec(name);
    const configured =
      name === 'openai_codex'
        ? oauth.get(name)?.configured === true
        : name === 'custom'
          ? Boolean(settings.apiBase)
          : !settings.keyRequired || Boolean(settings.apiKey);
    const models = MODEL_OPTIONS[name] ?? [];
    return {
      name,
      label: spec?.label ?? name,
      configured,
      auth_type: name === 'openai_codex' ? 'oauth' : 'api_key',
      api_key_hint: settings.keySource === 'config' ? secretHint(settings.apiKey ?? null) : null,
      api_base: settings.apiBase ?? null,
      default_api_base: spec?.defaultApiBase ?? null,
      models,
      default_model: models[0] ?? null,
    };
  });
}

/** `image_generation` of the settings payload. */
export async function imageGenerationSection(loaded: LoadedConfig, env: Env = process.env) {
  const image = loaded.config.tools.imageGeneration;
  const providers = await imageProviderRows(loaded, env);
  const selected = providers.find((row) => row.name === imageProviderName(image.provider));
  return {
    enabled: image.enabled,
    provider: image.provider,
    provider_configured: selected?.configured ?? false,
    model: image.model,
    default_aspect_ratio: image.defaultAspectRatio,
    default_image_size: image.defaultImageSize,
    max_images_per_turn: image.maxImagesPerTurn,
    save_dir: image.saveDir,
    providers,
  };
}
