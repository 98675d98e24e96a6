/**
 * Google's Generative Language API (native, not the OpenAI shim chat uses): Imagen models through `:predict`
 * (text only), Gemini image models through `:generateContent` (reference images as `inlineData` parts). The key goes
 * in `x-goog-api-key`.
 */
import {
  type ClientContext,
  fromBase64,
  type ImageAnswer,
  type ImageClient,
  type ImageFile,
  type ImageRequest,
  isRecord,
  jsonOf,
  records,
  requireImages,
  requireKey,
  send,
} from './common.js';

const IMAGEN_RATIOS = new Set(['1:1', '9:16', '16:9', '3:4', '4:3']);
const FLASH_RATIOS = new Set(['1:1', '2:3', '3:2', '3:4', '4:3', '4:5', '5:4', '9:16', '16:9', '21:9']);
const FLASH_31_RATIOS = new Set([...FLASH_RATIOS, '1:4', '4:1', '1:8', '8:1']);

/** The `generationConfig.imageConfig` a Gemini image model accepts: only documented ratios and sizes are sent. */
export function geminiImageConfig(model: string, aspectRatio?: string, imageSize?: string): Record<string, string> {
  const lower = model.toLowerCase();
  const ratios =
    lower.includes('gemini-3.1-flash-lite-image') || lower.includes('gemini-3.1-flash-image')
      ? FLASH_31_RATIOS
      : lower.includes('gemini-') && lower.includes('image')
        ? FLASH_RATIOS
        : new Set<string>();
  const sizes = lower.includes('gemini-3.1-flash-lite-image')
    ? new Set(['1K'])
    : lower.includes('gemini-3.1-flash-image')
      ? new Set(['512', '1K', '2K', '4K'])
      : lower.includes('gemini-3-pro-image')
        ? new Set(['1K', '2K', '4K'])
        : new Set<string>();
  const config: Record<string, string> = {};
  if (aspectRatio && ratios.has(aspectRatio)) config.aspectRatio = aspectRatio;
  const size = imageSize?.trim().toUpperCase();
  if (size && sizes.has(size)) config.imageSize = size;
  return config;
}

export function geminiClient(ctx: ClientContext): ImageClient {
  const apiBase = (ctx.apiBase || 'https://generativelanguage.googleapis.com/v1beta').replace(/\/+$/, '');
  return {
    async generate(request: ImageRequest): Promise<ImageAnswer> {
      const key = requireKey(ctx, 'Gemini API key is not configured. Set providers.gemini.apiKey.');
      const headers = { 'x-goog-api-key': key, ...ctx.extraHeaders };
      const model = encodeURIComponent(request.model);
      const signal = request.signal ? { signal: request.signal } : {};
      if (request.model.toLowerCase().includes('imagen')) {
        if (request.referenceImages.length > 0) {
          ctx.warn?.(`Imagen models do not support reference images; ignoring them for ${request.model}`);
        }
        const label = 'Gemini Imagen generation';
        const ratio = request.aspectRatio && IMAGEN_RATIOS.has(request.aspectRatio) ? request.aspectRatio : undefined;
        const body = {
          instances: [{ prompt: request.prompt }],
          parameters: { sampleCount: 1, ...(ratio ? { aspectRatio: ratio } : {}) },
          ...ctx.extraBody,
        };
        const response = await send(ctx, `${apiBase}/models/${model}:predict`, {
          label,
          headers,
          body,
          timeoutMs: 120_000,
          ...signal,
        });
        const payload = await jsonOf(response, label);
        const images = records(payload.predictions)
          .map((prediction) => prediction.bytesBase64Encoded)
          .filter((b64): b64 is string => typeof b64 === 'string' && b64 !== '')
          .map((b64) => fromBase64(b64));
        requireImages(images, payload, 'gemini');
        return { images, text: '' };
      }
      const label = 'Gemini image generation';
      const imageConfig = geminiImageConfig(request.model, request.aspectRatio, request.imageSize);
      const body = {
        contents: [
          {
            role: 'user',
            parts: [
              ...request.referenceImages.map((image) => ({
                inlineData: { mimeType: image.mime, data: image.bytes.toString('base64') },
              })),
              { text: request.prompt },
            ],
          },
        ],
        generationConfig: {
          responseModalities: ['TEXT', 'IMAGE'],
          ...(Object.keys(imageConfig).length ? { imageConfig } : {}),
        },
        ...ctx.extraBody,
      };
      const response = await send(ctx, `${apiBase}/models/${model}:generateContent`, {
        label,
        headers,
        body,
        timeoutMs: 120_000,
        ...signal,
      });
      const payload = await jsonOf(response, label);
      const images: ImageFile[] = [];
      const text: string[] = [];
      for (const candidate of records(payload.candidates)) {
        const content = isRecord(candidate.content) ? candidate.content : {};
        for (const part of records(content.parts)) {
          if (typeof part.text === 'string') text.push(part.text);
          const inline = isRecord(part.inlineData) ? part.inlineData : undefined;
          if (inline && typeof inline.data === 'string' && inline.data) images.push(fromBase64(inline.data));
        }
      }
      requireImages(images, payload, 'gemini');
      return { images, text: text.filter(Boolean).join('\n').trim() };
    },
  };
}
