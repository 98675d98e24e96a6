/**
 * The settings frame in Chromium against a real gateway: the Settings link opens the section list, a section is an
 * address (a reload stays on it), the Usage page shows nanobot's token-usage.json, the page has no accessibility
 * faults at either size in either theme, and "Back to the chat" returns to the chat.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWebUiGateway, type WebUiGateway } from '../channels/websocket/gateway-helpers.js';
import { hasChromium, launchChromium, openWebUi, plainSpaces } from './chromium.js';
import { openSettings, shootAndScan } from './settings-page.js';

const today = new Date().toISOString().slice(0, 10);
const day = (date: string, total: number, prompt: number, cached: number) => ({
  date,
  prompt_tokens: prompt,
  completion_tokens: total - prompt,
  cached_tokens: cached,
  total_tokens: total,
  provider_tokens: total,
  requests: 3,
  provider_requests: 3,
  sources: {},
});

describe.skipIf(!hasChromium)('WebUI settings in Chromium', () => {
  let run: WebUiGateway;
  let browser: Browser;

  beforeAll(async () => {
    run = await startWebUiGateway();
    // Usage as nanobot writes it: 12,000 tokens today, a quarter of the prompt from the cache.
    mkdirSync(join(run.dataDir, 'webui'), { recursive: true });
    writeFileSync(
      join(run.dataDir, 'webui', 'token-usage.json'),
      JSON.stringify({ schema_version: 1, days: { [today]: day(today, 12_000, 8_000, 2_000) }, updated_at: null }),
    );
    browser = await launchChromium();
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await run?.close();
  });

  it('opens from the chat list, stays on its page across a reload, and goes back to the chat', async () => {
    const context = await browser.newContext({ locale: 'en-US', reducedMotion: 'reduce' });
    const page = await openWebUi(context, run.url, run.token);
    await page.getByRole('link', { name: 'Settings' }).click();
    const sections = page.getByRole('navigation', { name: 'Settings sections' });
    await sections.getByRole('link', { name: 'Usage' }).click();
    await page.getByRole('heading', { name: 'Usage', level: 2 }).waitFor();
    expect(page.url()).toMatch(/#settings\/usage$/);
    await page.reload();
    await page.getByRole('heading', { name: 'Usage', level: 2 }).waitFor();
    await page.getByRole('button', { name: 'Back to the chat' }).click();
    await page.locator('#composer-input').waitFor();
    expect(await page.locator('[data-testid="settings"]').count()).toBe(0);
    await context.close();
  }, 60_000);

  it('Usage: the figures of token-usage.json, a bar per day, no accessibility faults', async () => {
    const faults: string[] = [];
    for (const colorScheme of ['light', 'dark'] as const) {
      const { context, page } = await openSettings(browser, run, 'usage', { colorScheme });
      const facts = plainSpaces((await page.getByTestId('usage-facts').textContent()) ?? '');
      expect(facts).toContain('12,000');
      expect(facts).toContain('25%');
      expect(await page.getByTestId('usage-bars').locator('li').count()).toBe(30);
      faults.push(...(await shootAndScan(page, `webui-settings-usage-${colorScheme}`)));
      await context.close();
    }
    expect(faults).toEqual([]);
  }, 90_000);
});
