/**
 * Settings › Image as nanobot's WebUI drives it: the `image_generation` section of the settings payload and
 * `settings.image_generation.update` over a real WebSocket against a real gateway; the change lands in config.json
 * and the next turn offers the model generate_image.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startWebUiGateway, type WebUiGateway } from '../channels/websocket/gateway-helpers.js';
import { connect, type TestClient } from '../channels/websocket/helpers.js';

type Json = Record<string, unknown>;
const open: { run: WebUiGateway; c: TestClient }[] = [];
afterEach(async () => {
  for (const { run, c } of open.splice(0)) {
    await c.close();
    await run.close();
  }
});

async function setup(script: Parameters<typeof startWebUiGateway>[0] = []) {
  const run = await startWebUiGateway(script);
  const c = await connect(run.port, { token: run.token, clientId: 'webui', origin: run.url });
  open.push({ run, c });
  await c.next((f) => f.event === 'ready');
  let n = 0;
  const act = async (action: string, payload: Json = {}) => {
    const id = `r${n++}`;
    c.send({ type: 'webui_request', request_id: id, action, payload });
    return (await c.next((f) => f.event === 'webui_response' && f.request_id === id, 10_000)) as unknown as {
      ok: boolean;
      result: Json & { image_generation: Json & { providers: (Json & { name: string })[] } };
      error: { status: number; message: string };
    };
  };
  const configPath = join(run.dataDir, 'config.json');
  return { run, c, act, configPath };
}

describe('settings.image_generation', () => {
  it('shows every image provider with whether it is ready, and saves a working setup', async () => {
    const { act, run, c, configPath } = await setup([{ text: 'ok' }]);
    const before = readFileSync(configPath, 'utf8');
    const refused = await act('settings.image_generation.update', { enabled: true, provider: 'openrouter' });
    expect(refused.error).toEqual({ status: 400, message: 'image generation provider is not configured' });
    expect((await act('settings.image_generation.update', { provider: 'dalle' })).error.message).toBe(
      'unknown image generation provider',
    );
    expect((await act('settings.image_generation.update', { default_aspect_ratio: '7:5' })).error.status).toBe(400);
    expect((await act('settings.image_generation.update', { max_images_per_turn: 9 })).error.status).toBe(400);
    expect(readFileSync(configPath, 'utf8')).toBe(before);

    // The gateway's custom provider has an apiBase (the fake LLM), so the custom image provider is ready.
    const saved = await act('settings.image_generation.update', {
      enabled: true,
      provider: 'custom',
      model: 'my-image-model',
      default_aspect_ratio: '16:9',
      default_image_size: '2K',
      max_images_per_turn: 3,
    });
    expect(saved.ok).toBe(true);
    const section = saved.result.image_generation;
    expect(section).toMatchObject({
      enabled: true,
      provider: 'custom',
      provider_configured: true,
      model: 'my-image-model',
      default_aspect_ratio: '16:9',
      default_image_size: '2K',
      max_images_per_turn: 3,
      save_dir: 'generated',
    });
    expect(section.providers.map((p) => p.name)).toEqual([
      'openrouter',
      'openai',
      'openai_codex',
      'custom',
      'aihubmix',
      'minimax',
      'gemini',
      'ollama',
      'stepfun',
      'zhipu',
      'modelscope',
    ]);
    expect(section.providers.find((p) => p.name === 'openrouter')).toMatchObject({
      configured: false,
      default_model: 'openai/gpt-5.4-image-2',
    });
    expect(JSON.stringify(saved.result)).not.toContain('test-key');
    const written = JSON.parse(readFileSync(configPath, 'utf8')) as { tools: { imageGeneration: Json } };
    expect(written.tools.imageGeneration).toMatchObject({
      enabled: true,
      provider: 'custom',
      model: 'my-image-model',
      defaultAspectRatio: '16:9',
      defaultImageSize: '2K',
      maxImagesPerTurn: 3,
    });

    // Applied without a restart: the next turn offers the tool.
    c.send({ type: 'attach', chat_id: 'img' });
    await c.next((f) => f.event === 'attached');
    c.send({ type: 'message', chat_id: 'img', content: 'hi' });
    await c.next((f) => f.event === 'turn_end');
    const offered = (run.fake.requests.at(-1)?.body.tools ?? []) as { function: { name: string } }[];
    const tools = offered.map((t) => t.function.name);
    expect(tools).toContain('generate_image');
  });
});
