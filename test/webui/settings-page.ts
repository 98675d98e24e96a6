/**
 * For the settings pages' browser tests: open a page the way a user does (the chat first, then `#settings/<page>`),
 * and look at it at both sizes: desktop and phone screenshots in test-artifacts/ and the accessibility faults of
 * each (both themes are the caller's choice: pass `colorScheme` to the context).
 */
import { join } from 'node:path';
import type { Browser, BrowserContext, Locator, Page } from 'playwright-core';
import type { WebUiGateway } from '../channels/websocket/gateway-helpers.js';
import { a11yFaults } from './a11y-scan.js';
import { ARTIFACTS, DESKTOP, openWebUi, PHONE } from './chromium.js';

export interface OpenedSettings {
  context: BrowserContext;
  page: Page;
}

/** A new browser context at desktop size (reduced motion: no waiting on slides), on `#settings/<pageId>`. */
export async function openSettings(
  browser: Browser,
  run: Pick<WebUiGateway, 'url' | 'token'>,
  pageId: string,
  options: { locale?: string; colorScheme?: 'light' | 'dark' } = {},
): Promise<OpenedSettings> {
  const context = await browser.newContext({
    locale: options.locale ?? 'en-US',
    viewport: DESKTOP,
    colorScheme: options.colorScheme ?? 'light',
    reducedMotion: 'reduce',
  });
  const page = await openWebUi(context, run.url, run.token);
  await goToSettings(page, pageId);
  return { context, page };
}

/** Moves an open WebUI to a settings page, as its link does. */
export async function goToSettings(page: Page, pageId: string): Promise<void> {
  await page.evaluate((hash) => {
    (globalThis as unknown as { location: { hash: string } }).location.hash = hash;
  }, `#settings/${pageId}`);
  await page.locator(`[data-testid="settings"] a[aria-current="page"][href="#settings/${pageId}"]`).waitFor();
}

/**
 * Screenshots `<name>-desktop.png` and `<name>-phone.png` (full page), and the accessibility faults at each size.
 * `scrollTo`: the part of a long page the shots should show (scrolled to the top at each size).
 * The page is left at desktop size.
 */
export async function shootAndScan(page: Page, name: string, options: { scrollTo?: Locator } = {}): Promise<string[]> {
  const faults: string[] = [];
  const scroll = () => options.scrollTo?.evaluate((element) => element.scrollIntoView({ block: 'start' }));
  await page.setViewportSize(DESKTOP);
  await scroll();
  await page.screenshot({ path: join(ARTIFACTS, `${name}-desktop.png`), fullPage: true });
  faults.push(...(await a11yFaults(page, `${name}, desktop`)));
  await page.setViewportSize(PHONE);
  await scroll();
  await page.screenshot({ path: join(ARTIFACTS, `${name}-phone.png`), fullPage: true });
  faults.push(...(await a11yFaults(page, `${name}, phone`)));
  await page.setViewportSize(DESKTOP);
  return faults;
}
