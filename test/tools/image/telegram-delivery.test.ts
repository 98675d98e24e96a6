/**
 * End to end through a real gateway: the model calls generate_image (OpenRouter's fake answers with a PNG), then
 * `message` with the artifact path, and the picture reaches the Telegram fake as a photo.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { eventually } from '../../channels/contract.js';
import { startChannelGateway } from '../../channels/gateway-harness.js';
import { startFakeBotApi } from '../../channels/telegram/fake-bot-api.js';
import { OWNER, writeTelegramConfig } from '../../channels/telegram/helpers.js';
import { startFakeLLM } from '../../helpers/fake-llm.js';
import { PNG, PNG_B64, startFakeImageApi } from './fake-image-api.js';

const cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of cleanup.splice(0).reverse()) await close();
});

async function start(imageGeneration: Record<string, unknown>) {
  const api = await startFakeBotApi();
  const llm = await startFakeLLM();
  const images = await startFakeImageApi();
  cleanup.push(api.close, llm.close, images.close);
  const files = await writeTelegramConfig(api, llm);
  const config = JSON.parse(readFileSync(files.configPath, 'utf8'));
  config.providers.openrouter = { apiKey: 'sk-or-image', apiBase: `${images.url}/api/v1` };
  config.tools.imageGeneration = imageGeneration;
  writeFileSync(files.configPath, JSON.stringify(config));
  const gateway = await startChannelGateway(files);
  cleanup.push(() => gateway.shutdown('test end'));
  return { api, llm, images, files };
}

const toolNames = (body: Record<string, unknown>) =>
  ((body.tools as { function: { name: string } }[] | undefined) ?? []).map((t) => t.function.name);

describe('generate_image through the gateway', () => {
  it('generates an image and delivers it to the Telegram chat as a photo', async () => {
    const run = await start({ enabled: true, provider: 'openrouter', model: 'google/gemini-image' });
    run.images.on('/api/v1/chat/completions', () => ({
      json: {
        choices: [{ message: { content: '', images: [{ image_url: { url: `data:image/png;base64,${PNG_B64}` } }] } }],
      },
    }));
    run.llm.enqueue(
      { toolCalls: [{ name: 'generate_image', arguments: { prompt: 'a tiny robot icon' } }] },
      (body) => {
        const result = JSON.stringify(body.messages);
        const path = /"path\\":\\"([^"\\]+)\\"/.exec(result)?.[1] ?? '';
        return { toolCalls: [{ name: 'message', arguments: { content: 'Here is your robot', media: [path] } }] };
      },
      { text: 'Done.' },
    );
    run.api.userSays({ chatId: OWNER.id, from: OWNER, text: 'draw me a robot' });
    await eventually(() => expect(run.api.callsOf('sendPhoto')).toHaveLength(1));
    const photo = run.api.callsOf('sendPhoto')[0];
    const uploaded = Object.values(photo?.files ?? {});
    expect(uploaded, JSON.stringify(photo)).toHaveLength(1);
    expect(uploaded[0]?.size).toBe(PNG.length);
    expect(uploaded[0]?.name).toMatch(/^img_[0-9a-f]{12}\.png$/);
    // The provider saw the prompt with its key; the model saw the tool only because it is enabled.
    expect(run.images.last().headers.authorization).toBe('Bearer sk-or-image');
    expect(run.images.last().json).toMatchObject({ model: 'google/gemini-image' });
    expect(toolNames(run.llm.requests[0]?.body ?? {})).toContain('generate_image');
    // … and its built-in skill is listed in the system prompt.
    expect(JSON.stringify(run.llm.requests[0]?.body.messages)).toContain('image-generation');
    // The artifact stays under the media dir for later edits.
    const path = /"path\\":\\"([^"\\]+)\\"/.exec(JSON.stringify(run.llm.requests[1]?.body.messages))?.[1] ?? '';
    expect(path.startsWith(join(run.files.dataDir, 'media', 'generated'))).toBe(true);
    expect(readFileSync(path)).toEqual(PNG);
  });

  it('is not offered to the model when tools.imageGeneration is off (the default)', async () => {
    const run = await start({ enabled: false });
    run.llm.enqueue({ text: 'I cannot draw here.' });
    run.api.userSays({ chatId: OWNER.id, from: OWNER, text: 'draw me a robot' });
    await eventually(() => expect(run.llm.requests).toHaveLength(1));
    const body = run.llm.requests[0]?.body ?? {};
    expect(toolNames(body)).not.toContain('generate_image');
    // Nor is its skill listed in the system prompt.
    expect(JSON.stringify(body.messages)).not.toContain('image-generation');
  });
});
