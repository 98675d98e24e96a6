/**
 * Gateways: OpenRouter (chat completions with `modalities: ["image", "text"]`, images answered as data URLs in
 * `choices[].message.images[]`) and AIHubMix (its unified predictions API, `/models/<owner>/<model>/predictions`,
 * answers holding base64 or URLs in several shapes).
 */
import {
  bearer,
  type ClientContext,
  fromBase64,
  fromDataUrl,
  type ImageAnswer,
  type ImageClient,
  type ImageFile,
  type ImageRequest,
  isDataUrl,
  isHttpUrl,
  isRecord,
  jsonOf,
  records,
  requireImages,
  requireKey,
  send,
  toDataUrl,
} from './common.js';

/** OpenRouter's app attribution headers (as upstream sends them). */
const OPENROUTER_HEADERS = {
  'HTTP-Referer': 'https://github.com/HKUDS/nanobot',
  'X-OpenRouter-Title': 'nanobot',
  'X-OpenRouter-Categories': 'cli-agent,personal-agent',
};

const base = (ctx: ClientContext, fallback: string) => (ctx.apiBase || fallback).replace(/\/+$/, '');
const signalOf = (request: ImageRequest) => (request.signal ? { signal: request.signal } : {});

export function openrouterClient(ctx: ClientContext): ImageClient {
  return {
    async generate(request: ImageRequest): Promise<ImageAnswer> {
      const key = requireKey(ctx, 'OpenRouter API key is not configured. Set providers.openrouter.apiKey.');
      const content =
        request.referenceImages.length > 0
          ? [
              { type: 'text', text: request.prompt },
              ...request.referenceImages.map((image) => ({ type: 'image_url', image_url: { url: toDataUrl(image) } })),
            ]
          : request.prompt;
      const imageConfig = {
        ...(request.aspectRatio ? { aspect_ratio: request.aspectRatio } : {}),
        ...(request.imageSize ? { image_size: request.imageSize } : {}),
      };
      const body = {
        model: request.model,
        messages: [{ role: 'user', content }],
        modalities: ['image', 'text'],
        stream: false,
        ...(Object.keys(imageConfig).length ? { image_config: imageConfig } : {}),
        ...ctx.extraBody,
      };
      const label = 'OpenRouter image generation';
      const response = await send(ctx, `${base(ctx, 'https://openrouter.ai/api/v1')}/chat/completions`, {
        label,
        headers: { ...bearer(key), ...OPENROUTER_HEADERS, ...ctx.extraHeaders },
        body,
        timeoutMs: 120_000,
        ...signalOf(request),
      });
      const payload = await jsonOf(response, label);
      const images: ImageFile[] = [];
      const text: string[] = [];
      for (const choice of records(payload.choices)) {
        const message = isRecord(choice.message) ? choice.message : {};
        if (typeof message.content === 'string' && message.content) text.push(message.content);
        for (const image of records(message.images)) {
          const url = image.image_url ?? image.imageUrl;
          const value = isRecord(url) ? url.url : undefined;
          if (isDataUrl(value)) images.push(fromDataUrl(value));
        }
      }
      requireImages(images, payload, 'openrouter');
      return { images, text: text.join('\n').trim() };
    },
  };
}

const AIHUBMIX_SIZES: Record<string, string> = {
  '1:1': '1024x1024',
  '3:4': '1024x1536',
  '9:16': '1024x1536',
  '4:3': '1536x1024',
  '16:9': '1536x1024',
};

/** Explicit dimensions pass; a compact hint (`1K`) becomes the ratio's orientation, else `auto`. */
export function aihubmixSize(aspectRatio?: string, imageSize?: string): string {
  if (imageSize?.toLowerCase().includes('x')) return imageSize;
  return (
    (aspectRatio && Object.hasOwn(AIHUBMIX_SIZES, aspectRatio) ? AIHUBMIX_SIZES[aspectRatio] : undefined) ?? 'auto'
  );
}

/** `gpt-image-2-free` is `openai/gpt-image-2-free` in AIHubMix's model paths. */
export function aihubmixModelPath(model: string): string {
  if (model.includes('/')) return model;
  return /^(gpt-image-|dall-e-)/.test(model) ? `openai/${model}` : model;
}

export function aihubmixClient(ctx: ClientContext): ImageClient {
  return {
    async generate(request: ImageRequest): Promise<ImageAnswer> {
      const key = requireKey(ctx, 'AIHubMix API key is not configured. Set providers.aihubmix.apiKey.');
      const refs = request.referenceImages.map(toDataUrl);
      const input = {
        prompt: request.prompt,
        n: 1,
        size: aihubmixSize(request.aspectRatio, request.imageSize),
        ...(refs.length ? { image: refs.length === 1 ? refs[0] : refs } : {}),
        ...ctx.extraBody,
      };
      const label = 'AIHubMix image generation';
      const url = `${base(ctx, 'https://aihubmix.com/v1')}/models/${aihubmixModelPath(request.model)}/predictions`;
      const response = await send(ctx, url, {
        label,
        headers: { ...bearer(key), ...ctx.extraHeaders },
        body: { input },
        timeoutMs: 300_000,
        ...signalOf(request),
      });
      const payload = await jsonOf(response, label);
      const images = await aihubmixImages(ctx, payload, request.signal);
      requireImages(images, payload, 'aihubmix');
      return { images, text: '' };
    },
  };
}

/** Every image in `data` / `output`: data URLs, http(s) URLs (downloaded), b64_json / bytesBase64 / base64 fields. */
async function aihubmixImages(
  ctx: ClientContext,
  payload: Record<string, unknown>,
  signal?: AbortSignal,
): Promise<ImageFile[]> {
  const images: ImageFile[] = [];
  const collect = async (value: unknown, depth: number): Promise<void> => {
    if (depth > 6) return;
    if (Array.isArray(value)) {
      for (const item of value) await collect(item, depth + 1);
      return;
    }
    if (typeof value === 'string') {
      if (isDataUrl(value)) images.push(fromDataUrl(value));
      else if (isHttpUrl(value)) images.push(await ctx.download(value, signal));
      return;
    }
    if (!isRecord(value)) return;
    if (typeof value.b64_json === 'string' && value.b64_json) images.push(fromBase64(value.b64_json));
    else if (value.b64_json !== undefined) await collect(value.b64_json, depth + 1);
    const raw = value.bytesBase64 ?? value.bytes_base64 ?? value.base64;
    if (typeof raw === 'string' && raw) images.push(fromBase64(raw));
    const imageUrl = value.image_url ?? value.imageUrl;
    if (imageUrl !== undefined) await collect(isRecord(imageUrl) ? imageUrl.url : imageUrl, depth + 1);
    if (value.url !== undefined) await collect(value.url, depth + 1);
    for (const key of ['images', 'image', 'output']) if (key in value) await collect(value[key], depth + 1);
  };
  if ('data' in payload) await collect(payload.data, 0);
  if ('output' in payload) await collect(payload.output, 0);
  return images;
}
