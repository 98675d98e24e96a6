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
import { hasChromium, launchChromium, openWebUi, PHONE, plainSpaces } from './chromium.js';
import { goToSettings, openSettings, shootAndScan } from './settings-page.js';

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
    run = await startWebUiGateway([
      { text: 'First answer.', usage: { promptTokens: 900, completionTokens: 30, cachedTokens: 300 } },
      { text: 'Second answer.', usage: { promptTokens: 500, completionTokens: 20, cachedTokens: 0 } },
    ]);
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

  it('on a phone the sections are a row of tabs, and the current one is scrolled into sight', async () => {
    const { context, page } = await openSettings(browser, run, 'models');
    await page.setViewportSize(PHONE);
    for (const id of ['usage', 'models', 'memory']) {
      await goToSettings(page, id);
      const tab = page.locator(`nav a[aria-current="page"][href="#settings/${id}"]`);
      await expect
        .poll(async () => {
          const box = await tab.boundingBox();
          // Whole on screen (a pixel of rounding either side).
          return box !== null && box.x >= -1 && box.x + box.width <= PHONE.width + 1;
        })
        .toBe(true);
    }
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

  it('Usage: per-session rows, and the open chat’s context figure is the one /status prints', async () => {
    const faults: string[] = [];
    const { context, page } = await openSettings(browser, run, 'usage');
    await page.getByRole('button', { name: 'Back to the chat' }).click();
    const answers = page.locator('[data-testid="assistant-message"]');
    const ask = async (text: string, expected: string) => {
      await expect.poll(() => page.locator('#composer-input').isEnabled(), { timeout: 30_000 }).toBe(true);
      await page.fill('#composer-input', text);
      await page.keyboard.press('Enter');
      await answers.filter({ hasText: expected }).last().waitFor({ timeout: 30_000 });
    };
    // A second chat first, then the one that stays open.
    await ask('Count the other chat', 'First answer.');
    await page.getByRole('button', { name: 'New chat' }).click();
    await page.getByRole('heading', { name: 'How can I help?' }).waitFor();
    await ask('Count this chat', 'Second answer.');
    await ask('/status', 'Context:');
    const status = plainSpaces((await answers.filter({ hasText: 'Context:' }).last().textContent()) ?? '');
    const figure = /Context: (~[\d,]+ of [\d,]+ tokens \(\d+%\))/.exec(status)?.[1];
    expect(figure, status).toBeDefined();

    await goToSettings(page, 'usage');
    const shown = page.getByTestId('usage-context');
    await shown.waitFor();
    expect(plainSpaces((await shown.textContent()) ?? '')).toBe(figure);
    expect(plainSpaces((await page.getByTestId('usage-this-chat').textContent()) ?? '')).toContain('520');

    const rows = page.getByTestId('usage-sessions').locator('tbody tr');
    await expect.poll(() => rows.count()).toBe(2);
    const current = rows.filter({ hasText: 'this chat' });
    expect(plainSpaces((await current.textContent()) ?? '')).toMatch(/Count this chat.*520.*0%.*1/);
    const other = rows.filter({ hasText: 'Count the other chat' });
    expect(plainSpaces((await other.textContent()) ?? '')).toMatch(/930.*33%.*1/);
    // No prices in this config: no cost column, and the page says how to get one.
    await page.getByText('No cost is shown: no prices are set.').waitFor();
    expect(await page.getByRole('columnheader', { name: 'Cost' }).count()).toBe(0);
    // The streak reads "1 day", not "1 days".
    expect(plainSpaces((await page.getByTestId('usage-facts').textContent()) ?? '')).toMatch(
      /Current streak1 day(?!s)/,
    );
    await page.getByText('Per day', { exact: true }).click();
    await page.getByTestId('usage-days').locator('tbody tr').first().waitFor();
    await page.getByTestId('usage-sessions').scrollIntoViewIfNeeded();
    faults.push(...(await shootAndScan(page, 'webui-settings-usage-sessions-light')));
    // The dark theme, switched as a user does (the top bar's button); the figures stay.
    await page.getByRole('button', { name: 'Use the dark theme' }).click();
    await expect.poll(() => page.locator('html').getAttribute('data-theme')).toBe('dark');
    expect(plainSpaces((await page.getByTestId('usage-context').textContent()) ?? '')).toBe(figure);
    faults.push(...(await shootAndScan(page, 'webui-settings-usage-sessions-dark')));
    await context.close();
    expect(faults).toEqual([]);
  }, 120_000);
});
