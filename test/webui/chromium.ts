/** Headless Chromium for the WebUI browser tests: launched the same way, pages opened with the WebUI token. */
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core';
import { expect } from 'vitest';

export const CHROMIUM = '/usr/bin/chromium';
export const hasChromium = existsSync(CHROMIUM);
export const ARTIFACTS = join(import.meta.dirname, '..', '..', 'test-artifacts');
export const PHONE = { width: 390, height: 844 };
export const DESKTOP = { width: 1280, height: 800 };

export async function launchChromium(): Promise<Browser> {
  mkdirSync(ARTIFACTS, { recursive: true });
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--no-first-run', '--disable-quic'],
  });
}

/** The WebUI opened with its token in the fragment, once the chat can be typed into. */
export async function openWebUi(context: BrowserContext, url: string, token: string): Promise<Page> {
  const page = await context.newPage();
  // Generous: CI runs this beside the other test files on two cores.
  page.setDefaultTimeout(30_000);
  page.on('pageerror', (err) => {
    throw err;
  });
  await page.goto(`${url}/#token=${token}`);
  await expect.poll(() => page.locator('#composer-input').isEnabled(), { timeout: 30_000 }).toBe(true);
  return page;
}

/** Intl's spaces (narrow no-break in French numbers) as plain ones, to compare text across ICU builds. */
export const plainSpaces = (text: string) => text.replace(/[\s\u202f\u00a0]+/g, ' ');
