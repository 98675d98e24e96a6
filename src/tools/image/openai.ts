/**
 * The OpenAI Images API (`openai`: generations, and edits as multipart with `image[]`), OpenAI-compatible endpoints
 * (`custom`: generations only, `response_format: b64_json`), and Codex (`openai_codex`: the Responses API with the
 * `image_generation` tool, streamed as SSE, signed in with `nanobot provider login openai-codex`).
 */
import { basename } from 'node:path';
import {
  bearer,
  type ClientContext,
  fromBase64,
  fromDataUrl,
  type ImageAnswer,
  type ImageClient,
  type ImageFile,
  ImageGenerationError,
  type ImageRequest,
  isDataUrl,
  isRecord,
  jsonOf,
  records,
  requireImages,
  requireKey,
  send,
} from './common.js';

const TIMEOUT_MS = 120_000;

const DALLE2 = { ratios: { '1:1': '1024x1024' }, sizes: new Set(['256x256', '512x512', '1024x1024']) };
const DALLE3 = {
  ratios: { '1:1': '1024x1024', '16:9': '1792x1024', '9:16': '1024x1792', '3:4': '1024x1792', '4:3': '1792x1024' },
  sizes: new Set(['1024x1024', '1792x1024', '1024x1792']),
};
const GPT_IMAGE_RATIOS = {
  '1:1': '1024x1024',
  '16:9': '1536x1024',
  '9:16': '1024x1536',
  '3:4': '1024x1536',
  '4:3': '1536x1024',
};
const GPT_IMAGE = { ratios: GPT_IMAGE_RATIOS, sizes: new Set(['1024x1024', '1536x1024', '1024x1536', 'auto']) };
/** gpt-image-2 takes any WIDTHxHEIGHT. */
const GPT_IMAGE_2 = { ratios: GPT_IMAGE_RATIOS, sizes: undefined };

const isGptImage = (model: string) => /^(gpt-image|chatgpt-image)/i.test(model);

/** The OpenAI `size` for a model: an explicit size it supports, else the ratio's, else 1024x1024. */
export function openaiSize(model: string, aspectRatio?: string, imageSize?: string, warn?: (m: string) => void) {
  const lower = model.toLowerCase();
  const options = lower.startsWith('dall-e-2')
    ? DALLE2
    : lower.startsWith('dall-e-3')
      ? DALLE3
      : lower.startsWith('gpt-image-2')
        ? GPT_IMAGE_2
        : GPT_IMAGE;
  const explicit = imageSize?.trim().toLowerCase();
  if (explicit) {
    const supported = options.sizes ? options.sizes.has(explicit) : /^\d+x\d+$/.test(explicit);
    if (supported) return explicit;
    warn?.(`OpenAI image size '${explicit}' is not supported by ${model}; using the aspect ratio instead`);
  }
  const ratios: Record<string, string> = options.ratios;
  return (aspectRatio && Object.hasOwn(ratios, aspectRatio) ? ratios[aspectRatio] : undefined) ?? '1024x1024';
}

/** `data[].b64_json`, or `data[].url` downloaded through the SSRF guard. */
export async function imagesApiImages(
  ctx: ClientContext,
  payload: Record<string, unknown>,
  signal?: AbortSignal,
): Promise<ImageFile[]> {
  const images: ImageFile[] = [];
  for (const item of records(payload.data)) {
    if (typeof item.b64_json === 'string' && item.b64_json) images.push(fromBase64(item.b64_json));
    else if (typeof item.url === 'string' && item.url) images.push(await ctx.download(item.url, signal));
  }
  return images;
}

const stripPrefix = (model: string) => model.replace(/^(openai|openai_codex|openai-codex)\//, '');
const base = (ctx: ClientContext, fallback: string) => (ctx.apiBase || fallback).replace(/\/+$/, '');

export function openaiClient(ctx: ClientContext): ImageClient {
  return {
    async generate(request: ImageRequest): Promise<ImageAnswer> {
      const key = requireKey(ctx, 'OpenAI API key is not configured. Set providers.openai.apiKey.');
      const model = stripPrefix(request.model);
      const gptImage = isGptImage(model);
      const body: Record<string, unknown> = {
        model,
        prompt: request.prompt,
        ...(gptImage ? {} : { response_format: 'b64_json', n: 1 }),
        size: openaiSize(model, request.aspectRatio, request.imageSize, ctx.warn),
        ...ctx.extraBody,
      };
      // extraBody may switch a default off with null.
      for (const [name, value] of Object.entries(body)) if (value === null) delete body[name];
      const apiBase = base(ctx, 'https://api.openai.com/v1');
      const headers = { ...bearer(key), ...ctx.extraHeaders };
      const label = 'OpenAI image generation';
      let response: Response;
      if (request.referenceImages.length > 0) {
        if (!gptImage) {
          throw new ImageGenerationError(
            `OpenAI model '${model}' does not support reference images; use a GPT Image model`,
          );
        }
        const form = new FormData();
        for (const [name, value] of Object.entries(body)) {
          if (['string', 'number', 'boolean'].includes(typeof value)) form.append(name, String(value));
          else ctx.warn?.(`OpenAI image edit parameter '${name}' is not a scalar form field; ignoring it`);
        }
        for (const image of request.referenceImages) {
          // The file's name only: the provider has no business knowing local paths.
          form.append('image[]', new Blob([new Uint8Array(image.bytes)], { type: image.mime }), basename(image.name));
        }
        response = await send(ctx, `${apiBase}/images/edits`, {
          label,
          headers,
          body: form,
          timeoutMs: TIMEOUT_MS,
          ...(request.signal ? { signal: request.signal } : {}),
        });
      } else {
        response = await send(ctx, `${apiBase}/images/generations`, {
          label,
          headers,
          body,
          timeoutMs: TIMEOUT_MS,
          ...(request.signal ? { signal: request.signal } : {}),
        });
      }
      const payload = await jsonOf(response, label);
      const images = await imagesApiImages(ctx, payload, request.signal);
      requireImages(images, payload, 'openai');
      return { images, text: '' };
    },
  };
}

/** upstream's compatibility rule: `1K` (the default size hint) means 1024x1024; other hints pass through. */
function customSize(aspectRatio?: string, imageSize?: string): string {
  const requested = imageSize?.trim();
  if (requested) return requested.toLowerCase() === '1k' ? '1024x1024' : requested;
  return openaiSize('gpt-image-2', aspectRatio);
}

export function customClient(ctx: ClientContext): ImageClient {
  return {
    async generate(request: ImageRequest): Promise<ImageAnswer> {
      if (!ctx.apiBase) {
        throw new ImageGenerationError(
          'Custom image generation API base is not configured. Set providers.custom.apiBase.',
        );
      }
      if (request.referenceImages.length > 0) {
        ctx.warn?.(`custom image generation does not support reference images; ignoring them for ${request.model}`);
      }
      const body = {
        model: request.model,
        prompt: request.prompt,
        response_format: 'b64_json',
        n: 1,
        size: customSize(request.aspectRatio, request.imageSize),
        ...ctx.extraBody,
      };
      const label = 'Custom image generation';
      const response = await send(ctx, `${base(ctx, '')}/images/generations`, {
        label,
        headers: { ...bearer(ctx.apiKey), ...ctx.extraHeaders },
        body,
        timeoutMs: TIMEOUT_MS,
        ...(request.signal ? { signal: request.signal } : {}),
      });
      const payload = await jsonOf(response, label);
      const images = await imagesApiImages(ctx, payload, request.signal);
      requireImages(images, payload, 'custom');
      return { images, text: '' };
    },
  };
}

export function codexClient(ctx: ClientContext): ImageClient {
  return {
    async generate(request: ImageRequest): Promise<ImageAnswer> {
      if (!ctx.codexCredentials) throw new ImageGenerationError('OpenAI Codex sign-in is not available here.');
      let credentials: { apiKey: string; headers: Record<string, string> };
      try {
        credentials = await ctx.codexCredentials();
      } catch (error) {
        throw new ImageGenerationError(
          `Codex sign-in is unavailable (${(error as Error).message}); run \`nanobot provider login openai-codex\`.`,
        );
      }
      if (request.referenceImages.length > 0) {
        ctx.warn?.('Codex image generation does not support reference images; ignoring them');
      }
      const body = {
        model: stripPrefix(request.model),
        instructions: "Generate an image based on the user's request.",
        input: [{ role: 'user', content: request.prompt }],
        tools: [{ type: 'image_generation' }],
        tool_choice: 'auto',
        stream: true,
        store: false,
        ...ctx.extraBody,
      };
      const response = await send(ctx, `${base(ctx, 'https://chatgpt.com/backend-api')}/codex/responses`, {
        label: 'Codex image generation',
        headers: {
          ...bearer(credentials.apiKey),
          originator: 'nanobot',
          ...credentials.headers,
          Accept: 'text/event-stream',
          ...ctx.extraHeaders,
        },
        body,
        timeoutMs: 300_000,
        ...(request.signal ? { signal: request.signal } : {}),
      });
      const { images, text } = parseCodexStream(await response.text());
      requireImages(images, {}, 'openai_codex');
      return { images, text };
    },
  };
}

/** The images of `response.output_item.done` image_generation_call items, and the streamed text. */
export function parseCodexStream(stream: string): ImageAnswer {
  const images: ImageFile[] = [];
  const text: string[] = [];
  for (const block of stream.split(/\r?\n\r?\n/)) {
    const data = block
      .split(/\r?\n/)
      .filter((line) => line.startsWith('data:'))
      .map((line) => line.slice(5).trim())
      .join('');
    if (!data) continue;
    if (data === '[DONE]') break;
    let event: unknown;
    try {
      event = JSON.parse(data);
    } catch {
      continue;
    }
    if (!isRecord(event)) continue;
    if (event.type === 'response.output_text.delta' && typeof event.delta === 'string') text.push(event.delta);
    if (event.type === 'response.output_item.done' && isRecord(event.item)) {
      const item = event.item;
      if (item.type !== 'image_generation_call') continue;
      const result = isRecord(item.result) ? (item.result.image_url ?? item.result.image) : item.result;
      if (typeof result === 'string' && result)
        images.push(isDataUrl(result) ? fromDataUrl(result) : fromBase64(result));
    }
    if (event.type === 'response.completed') break;
  }
  return { images, text: text.join('').trim() };
}
