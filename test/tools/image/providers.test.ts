/** Each image provider against a loopback fake of its API: request shape, auth, answer parsing, errors. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createNetworkPolicy } from '../../../src/security/network.js';
import type { ClientContext, ImageRequest } from '../../../src/tools/image/common.js';
import { imageDownloader } from '../../../src/tools/image/download.js';
import { IMAGE_PROVIDERS, imageProviderName, imageProviderSettings } from '../../../src/tools/image/providers.js';
import { type FakeImageApi, JPEG, PNG, PNG_B64, startFakeImageApi } from './fake-image-api.js';

let api: FakeImageApi;
beforeAll(async () => {
  api = await startFakeImageApi();
});
afterAll(() => api.close());

/** Loopback image URLs are fine here only because the test whitelists 127.0.0.1 (see the SSRF test below). */
const loopbackAllowed = imageDownloader(createNetworkPolicy({ whitelist: ['127.0.0.1/32'] }));

function client(name: string, extra: Partial<ClientContext> = {}) {
  const factory = IMAGE_PROVIDERS[name];
  if (!factory) throw new Error(name);
  return factory({
    apiKey: 'sk-test',
    apiBase: `${api.url}/v1`,
    extraHeaders: {},
    extraBody: {},
    fetch: globalThis.fetch,
    download: loopbackAllowed,
    pollIntervalMs: 0,
    ...extra,
  });
}

const request = (over: Partial<ImageRequest> = {}): ImageRequest => ({
  prompt: 'a tiny robot',
  model: 'm',
  referenceImages: [],
  aspectRatio: '16:9',
  imageSize: '1K',
  ...over,
});
const ref = { bytes: PNG, mime: 'image/png', name: '/w/ref.png' };

describe('image providers', () => {
  it('openrouter: chat completions with image modalities, attribution headers, data-URL images', async () => {
    api.on('/v1/chat/completions', () => ({
      json: {
        choices: [
          { message: { content: 'here', images: [{ image_url: { url: `data:image/png;base64,${PNG_B64}` } }] } },
        ],
      },
    }));
    const answer = await client('openrouter').generate(request({ referenceImages: [ref] }));
    expect(answer.images).toEqual([{ bytes: PNG, mime: 'image/png' }]);
    expect(answer.text).toBe('here');
    const sent = api.last();
    expect(sent.headers.authorization).toBe('Bearer sk-test');
    expect(sent.headers['x-openrouter-title']).toBe('nanobot');
    expect(sent.json).toMatchObject({
      model: 'm',
      modalities: ['image', 'text'],
      stream: false,
      image_config: { aspect_ratio: '16:9', image_size: '1K' },
    });
    const content = (sent.json?.messages as { content: unknown[] }[] | undefined)?.[0]?.content;
    expect(content?.[0]).toEqual({ type: 'text', text: 'a tiny robot' });
    expect(JSON.stringify(content?.[1])).toContain(`data:image/png;base64,${PNG_B64}`);
  });

  it('openai: generations for gpt-image without response_format; dall-e gets b64_json and n', async () => {
    api.on('/v1/images/generations', () => ({ json: { data: [{ b64_json: PNG_B64 }] } }));
    await client('openai').generate(request({ model: 'openai/gpt-image-1' }));
    expect(api.last().json).toEqual({ model: 'gpt-image-1', prompt: 'a tiny robot', size: '1536x1024' });
    await client('openai', { extraBody: { quality: 'low' } }).generate(request({ model: 'dall-e-3' }));
    expect(api.last().json).toEqual({
      model: 'dall-e-3',
      prompt: 'a tiny robot',
      response_format: 'b64_json',
      n: 1,
      size: '1792x1024',
      quality: 'low',
    });
  });

  it('openai: an edit is multipart with image[] files', async () => {
    api.on('/v1/images/edits', () => ({ json: { data: [{ b64_json: PNG_B64 }] } }));
    const answer = await client('openai').generate(request({ model: 'gpt-image-2', referenceImages: [ref] }));
    expect(answer.images).toHaveLength(1);
    const sent = api.last();
    expect(sent.headers['content-type']).toMatch(/^multipart\/form-data; boundary=/);
    const raw = sent.raw.toString('latin1');
    expect(raw).toContain('name="image[]"; filename="ref.png"');
    expect(raw).not.toContain('/w/ref.png');
    expect(raw).toContain('name="prompt"');
    await expect(client('openai').generate(request({ model: 'dall-e-2', referenceImages: [ref] }))).rejects.toThrow(
      /does not support reference images/,
    );
  });

  it('custom: needs apiBase, key optional, 1K means 1024x1024, URL answers downloaded', async () => {
    api.serve('/files/out.png', PNG);
    api.on('/v1/images/generations', () => ({ json: { data: [{ url: `${api.url}/files/out.png` }] } }));
    const answer = await client('custom', { apiKey: undefined }).generate(request());
    expect(answer.images[0]?.bytes).toEqual(PNG);
    const generation = api.requests.filter((r) => r.path === '/v1/images/generations').at(-1);
    expect(generation?.headers.authorization).toBeUndefined();
    expect(generation?.json).toMatchObject({ response_format: 'b64_json', n: 1, size: '1024x1024' });
    await expect(client('custom', { apiBase: undefined }).generate(request())).rejects.toThrow(/apiBase/);
  });

  it('aihubmix: the predictions path with the openai/ owner, input wrapper, nested answers', async () => {
    api.on('/v1/models/openai/gpt-image-2-free/predictions', () => ({
      json: { output: [{ b64_json: [{ bytesBase64: PNG_B64 }] }] },
    }));
    const answer = await client('aihubmix', { extraBody: { quality: 'low' } }).generate(
      request({ model: 'gpt-image-2-free' }),
    );
    expect(answer.images).toHaveLength(1);
    expect(api.last().json).toEqual({
      input: { prompt: 'a tiny robot', n: 1, size: '1536x1024', quality: 'low' },
    });
  });

  it('gemini: Flash image via generateContent with inlineData and x-goog-api-key; Imagen via predict', async () => {
    api.on('/v1/models/gemini-3-pro-image:generateContent', () => ({
      json: {
        candidates: [
          { content: { parts: [{ text: 'ok' }, { inlineData: { mimeType: 'image/png', data: PNG_B64 } }] } },
        ],
      },
    }));
    const flash = await client('gemini').generate(
      request({ model: 'gemini-3-pro-image', referenceImages: [ref], imageSize: '2k' }),
    );
    expect(flash.images).toHaveLength(1);
    let sent = api.last();
    expect(sent.headers['x-goog-api-key']).toBe('sk-test');
    expect(sent.headers.authorization).toBeUndefined();
    expect(sent.json).toMatchObject({
      generationConfig: {
        responseModalities: ['TEXT', 'IMAGE'],
        imageConfig: { aspectRatio: '16:9', imageSize: '2K' },
      },
    });
    api.on('/v1/models/imagen-4.0-generate-001:predict', () => ({
      json: { predictions: [{ bytesBase64Encoded: JPEG.toString('base64'), mimeType: 'image/png' }] },
    }));
    const imagen = await client('gemini').generate(request({ model: 'imagen-4.0-generate-001', aspectRatio: '21:9' }));
    // The bytes decide the type, not the declared mimeType.
    expect(imagen.images[0]?.mime).toBe('image/jpeg');
    sent = api.last();
    expect(sent.json).toEqual({ instances: [{ prompt: 'a tiny robot' }], parameters: { sampleCount: 1 } });
  });

  it('ollama: native /api/generate with width and height, no key needed, /v1 base mapped to /api', async () => {
    api.on('/api/generate', () => ({ json: { image: PNG_B64, response: '' } }));
    const answer = await client('ollama', { apiKey: undefined }).generate(request({ imageSize: '2K' }));
    expect(answer.images).toHaveLength(1);
    const sent = api.last();
    expect(sent.headers.authorization).toBeUndefined();
    expect(sent.json).toEqual({
      model: 'm',
      prompt: 'a tiny robot',
      width: 2048,
      height: 1152,
      steps: 0,
      stream: false,
    });
    await expect(client('ollama').generate(request({ referenceImages: [ref] }))).rejects.toThrow(/reference/);
  });

  it('minimax: /image_generation with base64 answers and subject references; base_resp errors named', async () => {
    api.on('/v1/image_generation', (r) =>
      r.json?.prompt === 'fail'
        ? { json: { data: null, base_resp: { status_code: 1026, status_msg: 'sensitive content' } } }
        : { json: { data: { image_base64: [PNG_B64] }, base_resp: { status_code: 0 } } },
    );
    const answer = await client('minimax').generate(request({ referenceImages: [ref], aspectRatio: '5:4' }));
    expect(answer.images).toHaveLength(1);
    expect(api.last().json).toMatchObject({
      response_format: 'base64',
      aspect_ratio: '1:1',
      subject_reference: [{ type: 'character', image_file: `data:image/png;base64,${PNG_B64}` }],
    });
    await expect(client('minimax').generate(request({ prompt: 'fail' }))).rejects.toThrow(/sensitive content/);
  });

  it('stepfun: b64_json images, style_reference only for step-1x models', async () => {
    api.on('/v1/images/generations', () => ({ json: { data: [{ b64_json: PNG_B64 }] } }));
    await client('stepfun').generate(request({ model: 'step-1x-medium', referenceImages: [ref] }));
    expect(api.last().json).toMatchObject({ size: '1280x800', response_format: 'b64_json', style_reference: {} });
    await client('stepfun').generate(request({ model: 'step-image-edit-2', referenceImages: [ref] }));
    expect(api.last().json?.style_reference).toBeUndefined();
  });

  it('zhipu: URL answers are downloaded; reference images refused', async () => {
    api.serve('/files/z.png', PNG);
    api.on('/v1/images/generations', () => ({ json: { data: [{ url: `${api.url}/files/z.png` }] } }));
    const answer = await client('zhipu').generate(request({ aspectRatio: '9:16' }));
    expect(answer.images[0]?.bytes).toEqual(PNG);
    expect(api.requests.filter((r) => r.path === '/v1/images/generations').at(-1)?.json).toMatchObject({
      size: '960x1728',
    });
    await expect(client('zhipu').generate(request({ referenceImages: [ref] }))).rejects.toThrow(/reference/);
  });

  it('modelscope: submits an async task and polls it until it succeeds', async () => {
    let polls = 0;
    api.on('/v1/images/generations', () => ({ json: { task_id: 'task-7' } }));
    api.on('/v1/tasks/task-7', () => {
      polls += 1;
      return polls < 3
        ? { json: { task_status: 'RUNNING' } }
        : { json: { task_status: 'SUCCEED', output_images: [`data:image/png;base64,${PNG_B64}`] } };
    });
    const answer = await client('modelscope').generate(request());
    expect(answer.images).toHaveLength(1);
    const submit = api.requests.filter((r) => r.path === '/v1/images/generations').at(-1);
    expect(submit?.headers['x-modelscope-async-mode']).toBe('true');
    expect(api.last().headers['x-modelscope-task-type']).toBe('image_generation');
    expect(api.last().headers.authorization).toBe('Bearer sk-test');
    api.on('/v1/tasks/task-7', () => ({ json: { task_status: 'FAILED', errors: 'boom' } }));
    await expect(client('modelscope').generate(request())).rejects.toThrow(/task failed/);
  });

  it('openai_codex: the Responses API stream with the image_generation tool and the sign-in headers', async () => {
    const events = [
      { type: 'response.output_text.delta', delta: 'Done.' },
      { type: 'response.output_item.done', item: { type: 'image_generation_call', result: PNG_B64 } },
      { type: 'response.completed' },
    ];
    api.on('/v1/codex/responses', () => ({
      body: events.map((e) => `data: ${JSON.stringify(e)}\n\n`).join(''),
      headers: { 'content-type': 'text/event-stream' },
    }));
    const answer = await client('openai_codex', {
      apiKey: undefined,
      codexCredentials: async () => ({ apiKey: 'oauth-token', headers: { 'chatgpt-account-id': 'acct-1' } }),
    }).generate(request({ model: 'openai-codex/gpt-5.4' }));
    expect(answer).toEqual({ images: [{ bytes: PNG, mime: 'image/png' }], text: 'Done.' });
    const sent = api.last();
    expect(sent.headers.authorization).toBe('Bearer oauth-token');
    expect(sent.headers['chatgpt-account-id']).toBe('acct-1');
    expect(sent.json).toMatchObject({
      model: 'gpt-5.4',
      tools: [{ type: 'image_generation' }],
      stream: true,
      store: false,
    });
  });

  it('errors: a missing key, an HTTP error with its message, an answer without images, a non-image payload', async () => {
    await expect(client('openrouter', { apiKey: undefined }).generate(request())).rejects.toThrow(
      /providers\.openrouter\.apiKey/,
    );
    api.on('/v1/chat/completions', () => ({ status: 401, json: { error: { message: 'invalid key' } } }));
    await expect(client('openrouter').generate(request())).rejects.toThrow(/HTTP 401\): invalid key/);
    api.on('/v1/chat/completions', () => ({ json: { choices: [{ message: { content: 'no pictures today' } }] } }));
    await expect(client('openrouter').generate(request())).rejects.toThrow(/returned no images/);
    api.on('/v1/images/generations', () => ({
      json: { data: [{ b64_json: Buffer.from('<html>').toString('base64') }] },
    }));
    await expect(client('openai').generate(request({ model: 'gpt-image-1' }))).rejects.toThrow(/not a supported image/);
  });

  it('an image URL at a private address is refused by the SSRF guard, before any request to it', async () => {
    api.serve('/files/secret.png', PNG);
    api.on('/v1/images/generations', () => ({ json: { data: [{ url: `${api.url}/files/secret.png` }] } }));
    const before = api.requests.filter((r) => r.path === '/files/secret.png').length;
    const guarded = imageDownloader(createNetworkPolicy());
    await expect(client('zhipu', { download: guarded }).generate(request())).rejects.toThrow(
      /blocked unsafe generated image URL: 127\.0\.0\.1 is loopback/,
    );
    // A redirect from an allowed host to the cloud metadata address is refused at the hop.
    api.on('/files/redirect.png', () => ({ status: 302, headers: { location: 'http://169.254.169.254/latest/x' } }));
    await expect(loopbackAllowed(`${api.url}/files/redirect.png`)).rejects.toThrow(
      /blocked unsafe generated image URL: redirect target refused: .*link-local/,
    );
    expect(api.requests.filter((r) => r.path === '/files/secret.png').length).toBe(before);
  });

  it('settings: providers.<name> block with the env fallback; provider names normalised', () => {
    expect(imageProviderName('openai-codex')).toBe('openai_codex');
    expect(imageProviderName('codex')).toBe('openai_codex');
    expect(imageProviderName('dalle')).toBeUndefined();
    const settings = imageProviderSettings(
      'openrouter',
      { openrouter: { apiBase: 'http://x/v1', extraHeaders: { 'X-A': '1' }, extraBody: { seed: 1 } } },
      { OPENROUTER_API_KEY: 'sk-env' },
    );
    expect(settings).toMatchObject({ apiKey: 'sk-env', keySource: '$OPENROUTER_API_KEY', apiBase: 'http://x/v1' });
    expect(settings.extraHeaders).toEqual({ 'X-A': '1' });
    expect(imageProviderSettings('zhipu', { zhipu: { apiKey: 'k' } }, {}).keySource).toBe('config');
    expect(imageProviderSettings('ollama', {}, {}).keyRequired).toBe(false);
  });
});
