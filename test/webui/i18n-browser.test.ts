/**
 * The WebUI's languages in real Chromium against a gateway on the fake LLM: a user switches to 日本語, chats, reloads
 * and is still in Japanese (dates through Intl); a French browser (Accept-Language and navigator.languages fr) gets
 * French first, numbers in French style; a browser in a language we lack gets English. Desktop and phone screenshots
 * go to test-artifacts/ (git-ignored).
 */
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, onTestFailed } from 'vitest';
import { startWebUiGateway, type WebUiGateway } from '../channels/websocket/gateway-helpers.js';
import { ARTIFACTS, DESKTOP, hasChromium, launchChromium, openWebUi, PHONE, plainSpaces } from './chromium.js';

describe.skipIf(!hasChromium)('WebUI languages in Chromium', () => {
  let run: WebUiGateway;
  let browser: Browser;

  beforeAll(async () => {
    run = await startWebUiGateway([{ text: 'こんにちは、nanobot です。' }]);
    browser = await launchChromium();
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await run?.close();
  });

  function showOnFailure(page: Page, name: string): void {
    onTestFailed(async () => {
      const shown = await page
        .locator('body')
        // biome-ignore lint/performance/useDomNodeTextContent: the rendered lines are what a reader of the failure needs
        .innerText({ timeout: 2_000 })
        .catch(() => '(unreadable)');
      await page.screenshot({ path: join(ARTIFACTS, `${name}-failure.png`) }).catch(() => undefined);
      console.error(`--- WebUI language test failed; the page showed:\n${shown}`);
    });
  }

  it('switching to 日本語 is remembered across a reload, and the chat, dates and status follow', async () => {
    const context = await browser.newContext({ locale: 'en-US', viewport: DESKTOP });
    const page = await openWebUi(context, run.url, run.token);
    showOnFailure(page, 'webui-i18n-ja');
    // An English browser gets English (the other browser tests match on it).
    await page.getByRole('heading', { name: 'How can I help?' }).waitFor();
    expect(await page.locator('html').getAttribute('lang')).toBe('en');

    await page.getByLabel('Language').selectOption('ja');
    await page.getByRole('heading', { name: 'お手伝いできることはありますか？' }).waitFor();
    expect(await page.locator('html').getAttribute('lang')).toBe('ja');
    // "Connecting…" until the chat is open, then the prompt: polled, the page may still be connecting.
    await expect
      .poll(() => page.locator('#composer-input').getAttribute('placeholder'))
      .toBe('nanobot にメッセージを送信');
    await page.getByRole('button', { name: '何ができるの？' }).waitFor();

    await page.fill('#composer-input', '自己紹介して');
    await page.getByRole('button', { name: '送信' }).click();
    await page.locator('[data-testid="assistant-message"]', { hasText: 'こんにちは' }).waitFor();
    // The chat's age in the list, in Japanese words (Intl.RelativeTimeFormat).
    const now = new Intl.RelativeTimeFormat('ja', { numeric: 'auto' }).format(0, 'second');
    await expect.poll(() => page.locator('.sessions .session-meta').first().textContent()).toBe(now);
    await page.getByRole('button', { name: 'ステータス' }).click();
    const panel = page.locator('[data-testid="status-panel"]');
    await panel.getByRole('heading', { name: 'チャンネル' }).waitFor();
    expect(await panel.textContent()).toContain('稼働中');
    await page.getByRole('button', { name: 'ステータスを閉じる' }).click();

    await page.reload();
    await expect.poll(() => page.locator('#composer-input').isEnabled(), { timeout: 30_000 }).toBe(true);
    expect(await page.locator('html').getAttribute('lang')).toBe('ja');
    expect(await page.getByLabel('言語').inputValue()).toBe('ja');
    // The chat that was open comes back, its controls in Japanese.
    await page.locator('[data-testid="assistant-message"]', { hasText: 'こんにちは' }).waitFor();
    await page.getByRole('button', { name: '新しいチャット' }).waitFor();
    await page.getByRole('button', { name: '自己紹介して の名前を変更' }).waitFor();
    await page.screenshot({ path: join(ARTIFACTS, 'webui-i18n-ja-desktop.png') });

    await page.setViewportSize(PHONE);
    await page.getByRole('button', { name: 'チャット一覧を開く' }).waitFor();
    await page.screenshot({ path: join(ARTIFACTS, 'webui-i18n-ja-phone.png') });
    await page.getByRole('button', { name: 'チャット一覧を開く' }).click();
    // Open once it has slid in; its language switcher is reachable on a phone.
    await expect.poll(async () => (await page.locator('nav.sidebar').boundingBox())?.x).toBe(0);
    await page.getByLabel('言語').waitFor({ state: 'visible' });
    await page.screenshot({ path: join(ARTIFACTS, 'webui-i18n-ja-phone-drawer.png') });
    await context.close();
  }, 120_000);

  it('a French browser gets French first, numbers in French style', async () => {
    const context = await browser.newContext({ locale: 'fr-FR', viewport: DESKTOP });
    const asked: string[] = [];
    context.on('request', (request) => asked.push(request.headers()['accept-language'] ?? ''));
    const page = await openWebUi(context, run.url, run.token);
    showOnFailure(page, 'webui-i18n-fr');
    expect(asked[0]).toMatch(/^fr/);
    await page.getByRole('heading', { name: 'Comment puis-je vous aider ?' }).waitFor();
    expect(await page.locator('html').getAttribute('lang')).toBe('fr');
    expect(await page.getByLabel('Langue').inputValue()).toBe('fr');
    await page.getByRole('button', { name: 'Nouvelle discussion' }).waitFor();
    await page.screenshot({ path: join(ARTIFACTS, 'webui-i18n-fr-desktop.png') });

    // The status panel of the Japanese chat: 200 000, not 200,000.
    await page.locator('.sessions .session-open').first().click();
    await page.getByRole('button', { name: 'État', exact: true }).click();
    const panel = page.locator('[data-testid="status-panel"]');
    await panel.getByRole('heading', { name: 'Canaux' }).waitFor();
    const window = plainSpaces(new Intl.NumberFormat('fr').format(200_000));
    await expect.poll(async () => plainSpaces((await panel.textContent()) ?? '')).toContain(`sur ${window} jetons`);
    await page.getByRole('button', { name: 'Fermer l’état' }).click();

    await page.setViewportSize(PHONE);
    await page.screenshot({ path: join(ARTIFACTS, 'webui-i18n-fr-phone.png') });
    await context.close();
  }, 60_000);

  it('a browser in a language the WebUI lacks (German) gets English', async () => {
    const context = await browser.newContext({ locale: 'de-DE', viewport: DESKTOP });
    const page = await openWebUi(context, run.url, run.token);
    expect(await page.locator('html').getAttribute('lang')).toBe('en');
    expect(await page.getByLabel('Language').inputValue()).toBe('en');
    await context.close();
  }, 60_000);
});
