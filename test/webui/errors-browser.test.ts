/**
 * The WebUI in real Chromium: a provider's 401 shows as an error with the setting to fix (not as an answer), /help
 * keeps its lines and `<placeholders>`, model text keeps `<name>`, and a gateway that went away gets a banner that
 * says what to run. Runs in the browser lane of `npm test` (`test/webui/*browser*.test.ts`).
 */
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, onTestFailed } from 'vitest';
import { startWebUiGateway, type WebUiGateway } from '../channels/websocket/gateway-helpers.js';

const CHROMIUM = '/usr/bin/chromium';
const hasChromium = existsSync(CHROMIUM);
const ARTIFACTS = join(import.meta.dirname, '..', '..', 'test-artifacts');

describe.skipIf(!hasChromium)('WebUI errors and plain text in Chromium', () => {
  let run: WebUiGateway;
  let browser: Browser;
  let page: Page;

  beforeAll(async () => {
    run = await startWebUiGateway([
      { status: 401, errorBody: { error: { message: 'Incorrect API key provided', type: 'invalid_request_error' } } },
      { text: 'Type `/skill <name>` to open one, or just <name>.\nA second line.' },
    ]);
    mkdirSync(ARTIFACTS, { recursive: true });
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      headless: true,
      args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--no-first-run', '--disable-quic'],
    });
    page = await browser.newPage({ viewport: { width: 1100, height: 800 } });
    page.setDefaultTimeout(30_000);
    page.on('pageerror', (err) => {
      throw err;
    });
    await page.goto(`${run.url}/#token=${run.token}`);
    // Enabled once the WebSocket is open and a chat is attached.
    await page.waitForSelector('#composer-input:not([disabled])', { timeout: 30_000 });
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await run?.close().catch(() => undefined);
  });

  function showOnFailure(): void {
    onTestFailed(async () => {
      const shown = await page
        .locator('body')
        // biome-ignore lint/performance/useDomNodeTextContent: the rendered lines are what a reader of the failure needs
        .innerText({ timeout: 2_000 })
        .catch(() => '(unreadable)');
      await page.screenshot({ path: join(ARTIFACTS, 'webui-errors-failure.png') }).catch(() => undefined);
      console.error(`--- WebUI errors test failed; the page showed:\n${shown}`);
    });
  }

  async function say(text: string): Promise<void> {
    await page.fill('#composer-input', text);
    await page.getByRole('button', { name: 'Send' }).click(); // waits until it is enabled, as a user would
  }

  it('a provider 401 is an error with the fix, not an answer', async () => {
    showOnFailure();
    await say('hello?');
    const error = page.locator('[data-testid="error-note"]').last();
    await error.waitFor();
    expect(await error.getAttribute('role')).toBe('alert');
    expect(await error.locator('.note-text').textContent()).toContain('Incorrect API key provided');
    expect(await error.locator('.note-hint').textContent()).toContain('providers.custom.apiKey');
    // Titled by its class, the setting to fix set as code, and the page where it is fixed linked.
    expect(await error.locator('.note-title').textContent()).toBe('The provider did not accept the API key');
    expect(await error.locator('.note-hint code').first().textContent()).toBe('providers.custom.apiKey');
    expect(await error.getByRole('link', { name: 'Open model settings' }).getAttribute('href')).toBe(
      '#settings/models',
    );
    // Not rendered as an ordinary Markdown answer.
    expect(await page.locator('.markdown', { hasText: 'Incorrect API key' }).count()).toBe(0);
    // The turn is over: the send button is back.
    await expect.poll(() => page.getByRole('button', { name: 'Send' }).isVisible()).toBe(true);
    await page.screenshot({ path: join(ARTIFACTS, 'webui-provider-error.png') });
  });

  it('/help shows one command per line with its <placeholders>', async () => {
    showOnFailure();
    await say('/help');
    const help = page.locator('[data-testid="plain-text"]').last();
    await help.waitFor();
    // biome-ignore lint/performance/useDomNodeTextContent: line breaks as shown are the point
    const shown = await help.innerText();
    expect(shown).toMatch(/^Commands:\n\/new — /);
    expect(shown).toMatch(/\n\/help — show this help\n/);
    expect(shown).toContain('/dream-restore <sha>');
    expect(shown).toContain('/skill <name>');
  });

  it('model text keeps <name> (raw HTML is shown as text, not dropped)', async () => {
    showOnFailure();
    await say('how do I open a skill?');
    const answer = page.locator('[data-testid="assistant-message"] .markdown', { hasText: 'second line' }).last();
    await answer.waitFor();
    expect(await answer.locator('code').first().textContent()).toBe('/skill <name>');
    expect(await answer.textContent()).toContain('or just <name>.');
  });

  it('a gateway that went away gets a banner saying what to run', async () => {
    showOnFailure();
    expect(await page.locator('[data-testid="connection-banner"]').count()).toBe(0);
    await run.gateway.shutdown('test: the gateway stops');
    const banner = page.locator('[data-testid="connection-banner"]');
    await banner.waitFor();
    expect(await banner.textContent()).toContain('nanobot gateway');
    await page.screenshot({ path: join(ARTIFACTS, 'webui-connection-lost.png') });
  });
});
