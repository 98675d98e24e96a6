/**
 * Ollama (native `/api/generate` with width/height), MiniMax (`/image_generation`, base64 answers), StepFun and
 * Zhipu (OpenAI-style `/images/generations`; Zhipu answers with URLs, downloaded through the SSRF guard) and
 * ModelScope (an async task: submit, then poll `/tasks/<id>` until it succeeds or fails).
 */
import { setTimeout as delay } from 'node:timers/promises';
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
  sizeFrom,
  toDataUrl,
} from './common.js';

const base = (ctx: ClientContext, fallback: string) => (ctx.apiBase || fallback).replace(/\/+$/, '');
const signalOf = (request: ImageRequest) => (request.signal ? { signal: request.signal } : {});

// ---- Ollama ----

const OLLAMA_PRESETS: Record<string, number> = { '1K': 1024, '2K': 2048, '4K': 4096 };
const roundTo8 = (value: number) => Math.max(8, Math.round(value / 8) * 8);

/** Native width and height: explicit `WxH`, else the size preset's long side shaped by the aspect ratio. */
export function ollamaDimensions(aspectRatio?: string, imageSize?: string): [number, number] {
  const size = imageSize?.trim() ?? '';
  const explicit = /^(\d+)\s*[xX]\s*(\d+)$/.exec(size);
  if (explicit) return [Number(explicit[1]), Number(explicit[2])];
  const long = OLLAMA_PRESETS[size.toUpperCase()] ?? 1024;
  const ratio = /^\s*(\d+)\s*:\s*(\d+)\s*$/.exec(aspectRatio ?? '');
  const w = Number(ratio?.[1] ?? 0);
  const h = Number(ratio?.[2] ?? 0);
  if (!ratio || w <= 0 || h <= 0) return [long, long];
  return w >= h ? [long, roundTo8((long * h) / w)] : [roundTo8((long * w) / h), long];
}

export function ollamaClient(ctx: ClientContext): ImageClient {
  // Chat uses Ollama's OpenAI shim at /v1; images are on the native API.
  const apiBase = base(ctx, 'http://localhost:11434/api').replace(/\/v1$/, '/api');
  return {
    async generate(request: ImageRequest): Promise<ImageAnswer> {
      if (request.referenceImages.length > 0) {
        throw new ImageGenerationError('Ollama image generation does not support reference images');
      }
      const [width, height] = ollamaDimensions(request.aspectRatio, request.imageSize);
      const body = {
        model: request.model,
        prompt: request.prompt,
        width,
        height,
        steps: 0,
        ...ctx.extraBody,
        stream: false,
      };
      const label = 'Ollama image generation';
      const response = await send(ctx, `${apiBase}/generate`, {
        label,
        headers: { ...bearer(ctx.apiKey), ...ctx.extraHeaders },
        body,
        timeoutMs: 300_000,
        ...signalOf(request),
      });
      const payload = await jsonOf(response, label);
      const images: ImageFile[] = [];
      const collect = (value: unknown) => {
        if (typeof value === 'string' && value) images.push(isDataUrl(value) ? fromDataUrl(value) : fromBase64(value));
        else if (Array.isArray(value)) for (const item of value) collect(item);
      };
      collect(payload.image);
      collect(payload.images);
      requireImages(images, payload, 'ollama');
      return { images, text: typeof payload.response === 'string' ? payload.response : '' };
    },
  };
}

// ---- MiniMax ----

const MINIMAX_RATIOS = new Set(['1:1', '16:9', '4:3', '3:2', '2:3', '3:4', '9:16', '21:9']);

export function minimaxClient(ctx: ClientContext): ImageClient {
  return {
    async generate(request: ImageRequest): Promise<ImageAnswer> {
      const key = requireKey(ctx, 'MiniMax API key is not configured. Set providers.minimax.apiKey.');
      const refs = request.referenceImages.map(toDataUrl);
      const body = {
        model: request.model,
        prompt: request.prompt,
        response_format: 'base64',
        aspect_ratio: request.aspectRatio && MINIMAX_RATIOS.has(request.aspectRatio) ? request.aspectRatio : '1:1',
        ...(refs.length ? { subject_reference: refs.map((ref) => ({ type: 'character', image_file: ref })) } : {}),
        ...ctx.extraBody,
      };
      const label = 'MiniMax image generation';
      const response = await send(ctx, `${base(ctx, 'https://api.minimax.io/v1')}/image_generation`, {
        label,
        headers: { ...bearer(key), ...ctx.extraHeaders },
        body,
        timeoutMs: 300_000,
        ...signalOf(request),
      });
      const payload = await jsonOf(response, label);
      const data = isRecord(payload.data) ? payload.data : {};
      const list = Array.isArray(data.image_base64) ? data.image_base64 : [];
      const images = list
        .filter((b64): b64 is string => typeof b64 === 'string' && b64 !== '')
        .map((b64) => fromBase64(b64));
      // MiniMax reports failures inside a 200 answer, in base_resp.
      const status = isRecord(payload.base_resp) ? payload.base_resp : undefined;
      const withError = status && status.status_code !== 0 && !payload.error ? { ...payload, error: status } : payload;
      requireImages(images, withError, 'minimax');
      return { images, text: '' };
    },
  };
}

// ---- StepFun ----

const STEPFUN_SIZES = {
  '1:1': '1024x1024',
  '16:9': '1280x800',
  '9:16': '800x1280',
  '3:4': '768x1360',
  '4:3': '1360x768',
};

export function stepfunClient(ctx: ClientContext): ImageClient {
  return {
    async generate(request: ImageRequest): Promise<ImageAnswer> {
      const key = requireKey(ctx, 'StepFun API key is not configured. Set providers.stepfun.apiKey.');
      const [first] = request.referenceImages;
      // Only step-1x models take a style reference; others ignore reference images.
      const body = {
        model: request.model,
        prompt: request.prompt,
        response_format: 'b64_json',
        n: 1,
        size: sizeFrom(STEPFUN_SIZES, request.aspectRatio, request.imageSize, '1024x1024'),
        ...(first && request.model.includes('1x') ? { style_reference: { source_url: toDataUrl(first) } } : {}),
        ...ctx.extraBody,
      };
      const label = 'StepFun image generation';
      const response = await send(ctx, `${base(ctx, 'https://api.stepfun.com/v1')}/images/generations`, {
        label,
        headers: { ...bearer(key), ...ctx.extraHeaders },
        body,
        timeoutMs: 120_000,
        ...signalOf(request),
      });
      const payload = await jsonOf(response, label);
      const images = records(payload.data)
        .map((item) => item.b64_json)
        .filter((b64): b64 is string => typeof b64 === 'string' && b64 !== '')
        .map((b64) => fromBase64(b64));
      requireImages(images, payload, 'stepfun');
      return { images, text: '' };
    },
  };
}

// ---- Zhipu ----

const ZHIPU_SIZES = {
  '1:1': '1280x1280',
  '16:9': '1728x960',
  '9:16': '960x1728',
  '3:4': '1088x1472',
  '4:3': '1472x1088',
};

export function zhipuClient(ctx: ClientContext): ImageClient {
  return {
    async generate(request: ImageRequest): Promise<ImageAnswer> {
      const key = requireKey(ctx, 'Zhipu API key is not configured. Set providers.zhipu.apiKey.');
      if (request.referenceImages.length > 0) {
        throw new ImageGenerationError('Zhipu image generation does not support reference images');
      }
      const body = {
        model: request.model,
        prompt: request.prompt,
        size: sizeFrom(ZHIPU_SIZES, request.aspectRatio, request.imageSize, '1280x1280'),
        ...ctx.extraBody,
      };
      const label = 'Zhipu image generation';
      const response = await send(ctx, `${base(ctx, 'https://open.bigmodel.cn/api/paas/v4')}/images/generations`, {
        label,
        headers: { ...bearer(key), ...ctx.extraHeaders },
        body,
        timeoutMs: 300_000,
        ...signalOf(request),
      });
      const payload = await jsonOf(response, label);
      const images: ImageFile[] = [];
      // Zhipu answers with temporary URLs: each is fetched through the SSRF guard.
      for (const item of records(payload.data)) {
        if (typeof item.url === 'string' && item.url) images.push(await ctx.download(item.url, request.signal));
      }
      requireImages(images, payload, 'zhipu');
      return { images, text: '' };
    },
  };
}

// ---- ModelScope ----

const MODELSCOPE_SIZES = {
  '1:1': '1328x1328',
  '16:9': '1664x928',
  '9:16': '928x1664',
  '3:4': '1140x1472',
  '4:3': '1472x1140',
};
const MODELSCOPE_POLLS = 60;

export function modelscopeClient(ctx: ClientContext): ImageClient {
  const apiBase = base(ctx, 'https://api-inference.modelscope.cn/v1');
  const interval = ctx.pollIntervalMs ?? 5000;
  return {
    async generate(request: ImageRequest): Promise<ImageAnswer> {
      const key = requireKey(ctx, 'ModelScope API key is not configured. Set providers.modelscope.apiKey.');
      const refs = request.referenceImages.map(toDataUrl);
      const body = {
        model: request.model,
        prompt: request.prompt,
        size: sizeFrom(MODELSCOPE_SIZES, request.aspectRatio, request.imageSize, '1024x1024'),
        ...(refs.length ? { image_url: refs.length === 1 ? refs[0] : refs } : {}),
        ...ctx.extraBody,
      };
      const label = 'ModelScope image generation';
      const submitted = await send(ctx, `${apiBase}/images/generations`, {
        label,
        headers: { ...bearer(key), 'X-ModelScope-Async-Mode': 'true', ...ctx.extraHeaders },
        body,
        timeoutMs: 300_000,
        ...signalOf(request),
      });
      const task = await jsonOf(submitted, label);
      const taskId = task.task_id;
      if (typeof taskId !== 'string' && typeof taskId !== 'number') {
        throw new ImageGenerationError(`ModelScope did not return a task_id: ${JSON.stringify(task).slice(0, 300)}`);
      }
      const pollUrl = `${apiBase}/tasks/${encodeURIComponent(String(taskId))}`;
      const headers = { ...bearer(key), 'X-ModelScope-Task-Type': 'image_generation', ...ctx.extraHeaders };
      for (let poll = 0; poll < MODELSCOPE_POLLS; poll++) {
        let state: Record<string, unknown>;
        try {
          const response = await send(ctx, pollUrl, {
            label: 'ModelScope task polling',
            headers,
            body: undefined,
            method: 'GET',
            timeoutMs: 60_000,
            ...signalOf(request),
          });
          state = await jsonOf(response, 'ModelScope task polling');
        } catch (error) {
          // A dropped poll is tried again; an HTTP error answer is final.
          if (/HTTP \d+/.test((error as Error).message) || request.signal?.aborted) throw error;
          await delay(interval, undefined, signalOf(request));
          continue;
        }
        if (state.task_status === 'SUCCEED') {
          const images: ImageFile[] = [];
          for (const url of Array.isArray(state.output_images) ? state.output_images : []) {
            if (isDataUrl(url)) images.push(fromDataUrl(url));
            else if (typeof url === 'string' && url) images.push(await ctx.download(url, request.signal));
          }
          requireImages(images, state, 'modelscope');
          return { images, text: '' };
        }
        if (state.task_status === 'FAILED') {
          throw new ImageGenerationError(
            `ModelScope image generation task failed: ${JSON.stringify(state).slice(0, 300)}`,
          );
        }
        await delay(interval, undefined, signalOf(request));
      }
      throw new ImageGenerationError(`ModelScope image generation timed out after ${MODELSCOPE_POLLS} polls`);
    },
  };
}
