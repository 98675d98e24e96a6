/**
 * What every image-generation back end shares: the request and answer shapes, the error the tool turns into a
 * result, image sniffing (bytes decide the type, never a declared MIME), and JSON POSTs with a timeout.
 */

/** A failure the model is told about (bad answer, HTTP error, missing key, refused URL). */
export class ImageGenerationError extends Error {
  override readonly name = 'ImageGenerationError';
}

export interface ImageFile {
  bytes: Buffer;
  mime: string;
}

/** A reference image for an edit, already read (and checked) by the tool. */
export interface ReferenceImage extends ImageFile {
  name: string;
}

export interface ImageRequest {
  prompt: string;
  model: string;
  referenceImages: ReferenceImage[];
  aspectRatio?: string;
  imageSize?: string;
  signal?: AbortSignal;
}

export interface ImageAnswer {
  images: ImageFile[];
  /** Text some models return beside the images. */
  text: string;
}

export type Fetch = typeof globalThis.fetch;

/** What a back end gets: the provider's settings, the HTTP client for its own API and a guarded downloader. */
export interface ClientContext {
  /** `providers.<name>`: apiKey (or the vendor's environment variable), apiBase, extraHeaders, extraBody. */
  apiKey?: string;
  apiBase?: string;
  extraHeaders: Record<string, string>;
  extraBody: Record<string, unknown>;
  /** For the provider's own endpoint (the user configured it; a proxy when providers.<name>.proxy is set). */
  fetch: Fetch;
  /** Downloads an image URL an answer names, through the SSRF guard. */
  download: (url: string, signal?: AbortSignal) => Promise<ImageFile>;
  /** The Codex sign-in (openai_codex only). */
  codexCredentials?: () => Promise<{ apiKey: string; headers: Record<string, string> }>;
  /** Waits between ModelScope task polls (tests pass 0). */
  pollIntervalMs?: number;
  /** Per-request timeout (default: the back end's). */
  timeoutMs?: number;
  warn?: (message: string) => void;
}

export interface ImageClient {
  generate(request: ImageRequest): Promise<ImageAnswer>;
}

export const MAX_IMAGE_BYTES = 32 * 1024 * 1024;

/** The image type of `bytes` from its magic number: png, jpeg, gif or webp; undefined otherwise. */
export function sniffImage(bytes: Uint8Array): string | undefined {
  if (bytes.length >= 8 && bytes[0] === 0x89 && bytes[1] === 0x50 && bytes[2] === 0x4e && bytes[3] === 0x47) {
    return 'image/png';
  }
  if (bytes.length >= 3 && bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff) return 'image/jpeg';
  const head = Buffer.from(bytes.subarray(0, 12)).toString('latin1');
  if (head.startsWith('GIF87a') || head.startsWith('GIF89a')) return 'image/gif';
  if (head.startsWith('RIFF') && head.slice(8, 12) === 'WEBP') return 'image/webp';
  return undefined;
}

/** Bytes that must be an image, typed by their content. */
export function asImage(bytes: Buffer, what: string): ImageFile {
  const mime = sniffImage(bytes);
  if (!mime) throw new ImageGenerationError(`${what} was not a supported image (png, jpeg, gif or webp)`);
  return { bytes, mime };
}

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/** A base64 payload (whitespace allowed) that must decode to an image. */
export function fromBase64(value: string, what = 'the generated image payload'): ImageFile {
  const compact = value.replace(/\s+/g, '');
  if (!compact || compact.length % 4 === 1 || !BASE64.test(compact)) {
    throw new ImageGenerationError(`${what} was not valid base64`);
  }
  return asImage(Buffer.from(compact, 'base64'), what);
}

const DATA_URL = /^data:image\/[\w.+-]+;base64,(.*)$/s;

/** A `data:image/…;base64,` URL, decoded and sniffed (the declared type is not trusted). */
export function fromDataUrl(value: string): ImageFile {
  const match = DATA_URL.exec(value.trim());
  if (!match) throw new ImageGenerationError('expected a base64 image data URL');
  return fromBase64(match[1] ?? '');
}

export const isDataUrl = (value: unknown): value is string =>
  typeof value === 'string' && value.startsWith('data:image/');
export const isHttpUrl = (value: unknown): value is string => typeof value === 'string' && /^https?:\/\//i.test(value);

export const toDataUrl = (image: ImageFile): string => `data:${image.mime};base64,${image.bytes.toString('base64')}`;

export const records = (value: unknown): Record<string, unknown>[] =>
  Array.isArray(value) ? value.filter(isRecord) : [];
export const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** A signal that aborts on the caller's signal or after `ms`. */
export function withTimeout(signal: AbortSignal | undefined, ms: number): AbortSignal {
  const timeout = AbortSignal.timeout(ms);
  return signal ? AbortSignal.any([signal, timeout]) : timeout;
}

export interface PostOptions {
  label: string;
  headers: Record<string, string>;
  /** JSON body, or a FormData for multipart. */
  body: unknown;
  timeoutMs: number;
  signal?: AbortSignal;
  method?: 'POST' | 'GET';
}

/** One request to the provider; a non-2xx answer or a network failure becomes an ImageGenerationError. */
export async function send(ctx: ClientContext, url: string, options: PostOptions): Promise<Response> {
  const method = options.method ?? 'POST';
  const form = options.body instanceof FormData;
  let response: Response;
  try {
    response = await ctx.fetch(url, {
      method,
      headers: form || method === 'GET' ? options.headers : { 'Content-Type': 'application/json', ...options.headers },
      ...(method === 'GET' ? {} : { body: form ? (options.body as FormData) : JSON.stringify(options.body) }),
      signal: withTimeout(options.signal, ctx.timeoutMs ?? options.timeoutMs),
    });
  } catch (error) {
    const name = (error as Error).name;
    if (name === 'TimeoutError') throw new ImageGenerationError(`${options.label} timed out`);
    if (name === 'AbortError') throw new ImageGenerationError(`${options.label} was stopped`);
    throw new ImageGenerationError(`${options.label} request failed: ${(error as Error).message}`);
  }
  if (!response.ok) {
    throw new ImageGenerationError(`${options.label} failed (HTTP ${response.status}): ${await errorDetail(response)}`);
  }
  return response;
}

/** The JSON object of an answer (anything else is an error). */
export async function jsonOf(response: Response, label: string): Promise<Record<string, unknown>> {
  const text = await response.text();
  try {
    const value: unknown = JSON.parse(text);
    if (isRecord(value)) return value;
  } catch {
    // fall through
  }
  throw new ImageGenerationError(`${label} answered with something that is not a JSON object: ${text.slice(0, 200)}`);
}

/** `{error: {message}}` when the body has it, else the first 500 characters. */
async function errorDetail(response: Response): Promise<string> {
  const text = await response.text().catch(() => '');
  try {
    const body: unknown = JSON.parse(text);
    if (isRecord(body)) {
      const error = body.error;
      if (isRecord(error) && typeof error.message === 'string') return error.message.slice(0, 500);
      if (typeof error === 'string') return error.slice(0, 500);
      if (typeof body.message === 'string') return body.message.slice(0, 500);
    }
  } catch {
    // not JSON
  }
  return text.slice(0, 500) || '<empty response body>';
}

/** At least one image, or an error naming the provider (and its own error, when it sent one). */
export function requireImages(images: ImageFile[], payload: Record<string, unknown>, label: string): void {
  if (images.length > 0) return;
  const error = payload.error;
  const detail = error === undefined || error === null ? '' : `: ${JSON.stringify(error).slice(0, 300)}`;
  throw new ImageGenerationError(`${label} returned no images${detail || ' for this request'}`);
}

export const bearer = (key: string | undefined): Record<string, string> =>
  key ? { Authorization: `Bearer ${key}` } : {};

export function requireKey(ctx: ClientContext, message: string): string {
  if (!ctx.apiKey) throw new ImageGenerationError(message);
  return ctx.apiKey;
}

/** `WIDTHxHEIGHT` given explicitly, else the ratio's entry in `table`, else `fallback`. */
export function sizeFrom(
  table: Record<string, string>,
  aspectRatio: string | undefined,
  imageSize: string | undefined,
  fallback: string,
): string {
  if (imageSize?.toLowerCase().includes('x')) return imageSize;
  return (aspectRatio && Object.hasOwn(table, aspectRatio) ? table[aspectRatio] : undefined) ?? fallback;
}
