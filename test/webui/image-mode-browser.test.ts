/**
 * The composer's image mode in real Chromium against a gateway on the loopback fake LLM: the toggle is a pressed
 * button with its own placeholder, and a message sent in image mode names the built-in image-generation skill (so the
 * agent gets its instructions for that message); a slash command is sent as it is.
 */
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWebUiGateway, type WebUiGateway } from '../channels/websocket/gateway-helpers.js';
import { DESKTOP, hasChromium, launchChromium, openWebUi } from './chromium.js';
import { shootAndScan } from './settings-page.js';

const SETTLE = { timeout: 10_000 };

describe.skipIf(!hasChromium)('WebUI composer image mode in Chromium', () => {
  let browser: Browser;
  const running: WebUiGateway[] = [];
  beforeAll(async () => {
    browser = await launchChromium();
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    for (const run of running) await run.close().catch(() => undefined);
  });

  const lastUserText = (run: WebUiGateway) => {
    const messages = (run.fake.requests.at(-1)?.body.messages ?? []) as { role: string; content: unknown }[];
    return JSON.stringify(messages.filter((m) => m.role === 'user').at(-1)?.content);
  };

  async function send(page: Page, text: string, answer: string): Promise<void> {
    await page.fill('#composer-input', text);
    await page.keyboard.press('Enter');
    await page.locator('[data-testid="assistant-message"]', { hasText: answer }).waitFor();
  }

  it('sends a message in image mode with the image-generation skill named', async () => {
    const run = await startWebUiGateway([{ text: 'A fox, coming up.' }, { text: 'Plain answer.' }]);
    running.push(run);
    const context = await browser.newContext({ locale: 'en-US', viewport: DESKTOP, reducedMotion: 'reduce' });
    const page = await openWebUi(context, run.url, run.token);
    const toggle = page.getByRole('button', { name: 'Image mode: describe a picture and the agent creates it' });
    await toggle.waitFor();
    expect(await toggle.getAttribute('aria-pressed')).toBe('false');
    await toggle.click();
    await expect.poll(() => toggle.getAttribute('aria-pressed'), SETTLE).toBe('true');
    expect(await page.getAttribute('#composer-input', 'placeholder')).toBe('Describe the image to create');
    expect(await shootAndScan(page, 'webui-chat-image-mode')).toEqual([]);

    await send(page, 'a red fox in the snow', 'A fox, coming up.');
    expect(lastUserText(run)).toContain('$image-generation a red fox in the snow');

    // Switched off again, messages go as typed.
    await toggle.click();
    await expect.poll(() => toggle.getAttribute('aria-pressed'), SETTLE).toBe('false');
    await send(page, 'just a question', 'Plain answer.');
    expect(lastUserText(run)).toContain('just a question');
    expect(lastUserText(run)).not.toContain('$image-generation');
    await context.close();
  }, 120_000);
});
