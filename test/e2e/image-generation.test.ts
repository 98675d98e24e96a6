/**
 * generate_image through the installed package: `nanobot agent -m` with a scripted model and a loopback fake of the
 * OpenAI Images API; the image is saved under ~/.nanobot/media/generated and attached with `message`; a URL answer
 * at a private address is refused; `nanobot doctor` checks the image provider's key.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { type FakeLLM, startFakeLLM } from '../helpers/fake-llm.js';
import { PNG, PNG_B64, startFakeImageApi } from '../tools/image/fake-image-api.js';
import { homeWith, lastToolResult, nanobot, removeInstalledCopy } from './harness.js';

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});
afterAll(removeInstalledCopy);

async function setup(script: Parameters<typeof startFakeLLM>[0], imageGeneration: Record<string, unknown> = {}) {
  const llm: FakeLLM = await startFakeLLM(script);
  const images = await startFakeImageApi();
  cleanups.push(
    () => llm.close(),
    () => images.close(),
  );
  const { home } = homeWith(llm.url, {
    providers: {
      custom: { apiKey: 'test-key', apiBase: `${llm.url}/v1` },
      openai: { apiKey: 'sk-image-key', apiBase: `${images.url}/v1` },
    },
    tools: { imageGeneration: { enabled: true, provider: 'openai', model: 'gpt-image-1', ...imageGeneration } },
  });
  return { llm, images, home };
}

const pathIn = (result: string) => (JSON.parse(result) as { artifacts: { path: string }[] }).artifacts[0]?.path ?? '';

describe('nanobot agent -m (installed package): generate_image', () => {
  it('generates an image, keeps it under media/generated and attaches it with message', async () => {
    const run = await setup([
      { toolCalls: [{ name: 'generate_image', arguments: { prompt: 'a robot', aspect_ratio: '16:9' } }] },
      (body) => {
        const result = lastToolResult({ body } as Parameters<typeof lastToolResult>[0]);
        return { toolCalls: [{ name: 'message', arguments: { content: 'Your robot', media: [pathIn(result)] } }] };
      },
      { text: 'Done.' },
    ]);
    run.images.on('/v1/images/generations', () => ({ json: { data: [{ b64_json: PNG_B64 }] } }));
    const result = await nanobot(['agent', '-m', 'draw a robot'], run.home);
    expect(result.stderr).not.toMatch(/error/i);
    expect(result.code).toBe(0);
    const sent = run.images.last();
    expect(sent.headers.authorization).toBe('Bearer sk-image-key');
    expect(sent.json).toEqual({ model: 'gpt-image-1', prompt: 'a robot', size: '1536x1024' });
    const path = pathIn(lastToolResult(run.llm.requests[1]));
    expect(path.startsWith(join(run.home, '.nanobot', 'media', 'generated'))).toBe(true);
    expect(readFileSync(path)).toEqual(PNG);
    expect(lastToolResult(run.llm.requests[2])).toMatch(/Message sent .* with 1 attachment/);
    expect(result.stdout).toMatch(/\[attached: .*img_[0-9a-f]{12}\.png\]/);
    expect(result.stdout).toContain('Done.');
  });

  it('refuses an image URL answer that points at a private address', async () => {
    const run = await setup([
      { toolCalls: [{ name: 'generate_image', arguments: { prompt: 'a robot' } }] },
      { text: 'It failed.' },
    ]);
    run.images.serve('/files/internal.png', PNG);
    run.images.on('/v1/images/generations', () => ({
      json: { data: [{ url: `${run.images.url}/files/internal.png` }] },
    }));
    const result = await nanobot(['agent', '-m', 'draw a robot'], run.home);
    expect(result.code).toBe(0);
    expect(lastToolResult(run.llm.requests[1])).toMatch(/blocked unsafe generated image URL: 127\.0\.0\.1 is loopback/);
    expect(run.images.requests.some((r) => r.path === '/files/internal.png')).toBe(false);
  });

  it('doctor checks the image provider and its key', async () => {
    const run = await setup([]);
    const good = await nanobot(['doctor'], run.home);
    expect(good.stdout).toContain('✓ Image generation gpt-image-1: provider openai');
    expect(good.stdout).toMatch(/✓ Image API key: sk-i.* from providers\.openai\.apiKey/);
    expect(good.stdout).not.toContain('tools.imageGeneration');

    const missing = await setup([], { provider: 'zhipu', model: 'glm-image' });
    const bad = await nanobot(['doctor'], missing.home);
    expect(bad.code).toBe(1);
    expect(bad.stdout).toContain('✗ Image API key: none for zhipu');
    expect(bad.stdout).toContain('export ZHIPUAI_API_KEY');
    const withEnv = await nanobot(['doctor'], missing.home, { ZAI_API_KEY: 'zai-123456789' });
    expect(withEnv.stdout).toMatch(/✓ Image API key: .* from \$ZAI_API_KEY/);
  });
});
