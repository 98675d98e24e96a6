/**
 * Accessibility of the WebUI's chat page in real Chromium, in both themes, at desktop size and at 390×844: no control
 * without a name, no text under AA contrast (findA11yFaults, axe-core's serious rules of the same names), every
 * focus stop visible with a focus ring, and the chat usable with the keyboard alone (drawer in and out, status
 * panel, sending a message). Screenshots go to test-artifacts/.
 */
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, onTestFailed } from 'vitest';
import { startWebUiGateway, type WebUiGateway } from '../channels/websocket/gateway-helpers.js';
import { blurFocus, composerFocused, findA11yFaults, focusedName, focusStop } from './a11y-check.js';
import { a11yFaults } from './a11y-scan.js';
import { ARTIFACTS, DESKTOP, hasChromium, launchChromium, openWebUi, PHONE } from './chromium.js';

/** How long a transition (the drawer's 0.2 s slide, a focus move in an effect) may take on a loaded CI machine. */
const SETTLE = { timeout: 10_000 };

const ANSWER = [
  'Here is **the plan**.',
  '',
  '```bash',
  'echo done',
  '```',
  '',
  '> quoted',
  '',
  '- [a link](https://example.org)',
].join('\n');

describe.skipIf(!hasChromium)('WebUI accessibility in Chromium', () => {
  let run: WebUiGateway;
  let browser: Browser;

  beforeAll(async () => {
    run = await startWebUiGateway([
      { reasoning: 'Plan first.', toolCalls: [{ name: 'list_dir', arguments: { path: '.' } }] },
      { text: ANSWER },
      { text: 'Typed with the keyboard alone.' },
    ]);
    browser = await launchChromium();
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await run?.close();
  });

  /** Each Tab stop from the top of the page (see focusStop). */
  async function tabStops(page: Page, count: number): Promise<{ name: string; onScreen: boolean; ring: boolean }[]> {
    await page.evaluate(blurFocus);
    const stops = [];
    for (let i = 0; i < count; i += 1) {
      await page.keyboard.press('Tab');
      stops.push(await page.evaluate(focusStop));
    }
    return stops;
  }

  it('the checker finds each fault it looks for (on a page built to have them)', async () => {
    const page = await browser.newPage();
    await page.setContent(`<!doctype html><html><body style="background:#fff">
      <button><svg width="10" height="10"></svg></button>
      <input type="text">
      <p style="color:#aaa">pale text</p>
      <div style="background:#14161a"><span style="color:#5f6b7a">dark on dark</span></div>
      <img src="data:," width="4" height="4">
      <span id="twice">a</span><span id="twice">b</span>
      <button aria-label="Named"><svg width="10" height="10"></svg></button>
      <p style="color:#1b1f24">fine text</p>
    </body></html>`);
    const found = (await page.evaluate(findA11yFaults)).join('\n');
    expect(found).toContain('html has no lang');
    expect(found).toMatch(/no accessible name: <button>/);
    expect(found).toMatch(/no accessible name: <input>/);
    expect(found).toMatch(/contrast [\d.]+:1 .*pale text/);
    expect(found).toMatch(/contrast [\d.]+:1 .*dark on dark/);
    expect(found).toContain('image without alt');
    expect(found).toContain('duplicate id "twice"');
    expect(found).not.toContain('Named');
    expect(found).not.toContain('fine text');
    // axe-core, run beside it, finds the same page at fault.
    const withAxe = (await a11yFaults(page, 'built to fail')).join('\n');
    expect(withAxe).toContain('axe button-name');
    expect(withAxe).toContain('axe color-contrast');
    expect(withAxe).toContain('axe image-alt');
    await page.close();
  }, 30_000);

  it('the chat page has no serious faults in either theme, at desktop and phone size', async () => {
    const context = await browser.newContext({ locale: 'en-US', viewport: DESKTOP, colorScheme: 'light' });
    const page = await openWebUi(context, run.url, run.token);
    onTestFailed(() => page.screenshot({ path: join(ARTIFACTS, 'webui-a11y-failure.png') }).then(() => undefined));
    const found: string[] = [];
    found.push(...(await a11yFaults(page, 'light, empty chat')));

    await page.fill('#composer-input', 'Make a plan');
    await page.getByRole('button', { name: 'Send' }).click();
    const answer = page.locator('[data-testid="assistant-message"]').last();
    await answer.locator('strong', { hasText: 'the plan' }).waitFor();
    await expect.poll(() => page.getByRole('button', { name: 'Send' }).isVisible()).toBe(true);
    await answer.locator('[data-testid="tool-card"] summary').click();
    await page.getByRole('button', { name: 'Status' }).click();
    await page.locator('[data-testid="status-panel"] code', { hasText: 'test-model' }).waitFor();
    for (const theme of ['light', 'dark'] as const) {
      await page.setViewportSize(DESKTOP);
      if (theme === 'dark') {
        await page.getByRole('button', { name: 'Use the dark theme' }).click();
        await page.getByRole('button', { name: 'Status' }).click();
      }
      expect(await page.locator('html').getAttribute('data-theme')).toBe(theme);
      await page.locator('[data-testid="status-panel"]').waitFor();
      found.push(...(await a11yFaults(page, `${theme}, desktop, answer and status`)));
      await page.screenshot({ path: join(ARTIFACTS, `webui-a11y-${theme}-desktop.png`) });
      await page.setViewportSize(PHONE);
      found.push(...(await a11yFaults(page, `${theme}, phone, status panel`)));
      await page.screenshot({ path: join(ARTIFACTS, `webui-a11y-${theme}-phone-status.png`) });
      await page.keyboard.press('Escape');
      found.push(...(await a11yFaults(page, `${theme}, phone`)));
      await page.screenshot({ path: join(ARTIFACTS, `webui-a11y-${theme}-phone.png`) });
      const menu = page.getByRole('button', { name: 'Open the chat list' });
      if (await menu.isVisible()) {
        await menu.click();
        await expect.poll(async () => (await page.locator('nav.sidebar').boundingBox())?.x).toBe(0);
        found.push(...(await a11yFaults(page, `${theme}, phone, drawer open`)));
        await page.keyboard.press('Escape');
        await expect.poll(() => page.locator('nav.sidebar').isVisible()).toBe(false);
      }
    }
    expect(found).toEqual([]);
    await context.close();
  }, 120_000);

  it('the token screen has no serious faults in either theme, at desktop and phone size', async () => {
    const guarded = await startWebUiGateway([], { token: 'configured-token-0123456789' });
    try {
      const found: string[] = [];
      for (const colorScheme of ['light', 'dark'] as const) {
        for (const viewport of [DESKTOP, PHONE]) {
          const context = await browser.newContext({ locale: 'en-US', viewport, colorScheme });
          const page = await context.newPage();
          page.setDefaultTimeout(30_000);
          await page.goto(`${guarded.url}/`);
          await page.getByLabel('Token').fill('not-the-token');
          await page.getByRole('button', { name: 'Connect' }).click();
          await page.getByRole('alert').waitFor();
          expect(await page.locator('html').getAttribute('data-theme')).toBe(colorScheme);
          found.push(...(await a11yFaults(page, `token screen, ${colorScheme}, ${viewport.width}px`)));
          if (viewport === PHONE) {
            await page.screenshot({ path: join(ARTIFACTS, `webui-a11y-token-${colorScheme}-phone.png`) });
          }
          await context.close();
        }
      }
      expect(found).toEqual([]);
    } finally {
      await guarded.close();
    }
  }, 60_000);

  it('every Tab stop is on screen and shows a focus ring, at desktop and phone size', async () => {
    const context = await browser.newContext({ locale: 'en-US', viewport: DESKTOP });
    const page = await openWebUi(context, run.url, run.token);
    for (const size of [DESKTOP, PHONE]) {
      await page.setViewportSize(size);
      // At phone width the chat list slides away (0.2 s) and is hidden: out of the Tab order once it is gone.
      if (size === PHONE) await expect.poll(() => page.locator('nav.sidebar').isVisible()).toBe(false);
      // 16: the chat list's search box is a stop of its own after New chat (the message box is the 14th at desktop).
      const stops = await tabStops(page, 16);
      expect(stops.filter((stop) => !stop.onScreen || !stop.ring)).toEqual([]);
      // The message box is reachable.
      expect(stops.map((stop) => stop.name)).toContainEqual(expect.stringMatching(/^textarea/));
    }
    await context.close();
  }, 60_000);

  it('a drawer opened while the chat list is still loading stays open when the first chat opens', async () => {
    const context = await browser.newContext({ locale: 'en-US', viewport: PHONE, reducedMotion: 'reduce' });
    const page = await context.newPage();
    // The chat list answers only when the test lets it: the user opens the drawer first.
    let release = () => {};
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    await page.route('**/api/sessions', async (route) => {
      await gate;
      await route.continue();
    });
    await page.goto(`${run.url}/#token=${run.token}`);
    await page.getByRole('button', { name: 'Open the chat list' }).click();
    const sidebar = page.locator('nav.sidebar');
    await expect.poll(() => sidebar.getAttribute('class')).toBe('sidebar open');
    release();
    await expect.poll(() => page.locator('#composer-input').isEnabled(), { timeout: 30_000 }).toBe(true);
    expect(await sidebar.getAttribute('class')).toBe('sidebar open');
    await context.close();
  }, 60_000);

  it('a keyboard alone opens and closes the phone drawer and the status panel, and sends a message', async () => {
    // Reduced motion (a setting keyboard users often have): the drawer moves at once, so what is checked is where
    // focus goes, not how fast a loaded machine animates.
    const context = await browser.newContext({ locale: 'en-US', viewport: PHONE, reducedMotion: 'reduce' });
    const page = await openWebUi(context, run.url, run.token);
    onTestFailed(() =>
      page.screenshot({ path: join(ARTIFACTS, 'webui-a11y-keyboard-failure.png') }).then(() => undefined),
    );
    const focused = () => page.evaluate(focusedName);
    const sidebar = page.locator('nav.sidebar');
    // What the page shows, for a failure's message: the drawer's state and where focus is.
    const drawerState = () =>
      sidebar.evaluate((nav) => `${nav.className} / focus on ${nav.ownerDocument.activeElement?.tagName ?? 'nothing'}`);

    // Tab to the menu button, open the drawer: focus goes onto it (Tab then reaches its first button; the Enter
    // that opened it must not also press that button), Escape closes it and focus comes back.
    await page.evaluate(blurFocus);
    await page.keyboard.press('Tab');
    expect(await focused()).toBe('button: Open the chat list');
    await page.keyboard.press('Enter');
    await expect.poll(drawerState, SETTLE).toMatch(/^sidebar open /);
    expect((await sidebar.boundingBox())?.x).toBe(0);
    // Focus moves in an effect after the drawer renders: polled, not read once (a loaded machine lags).
    await expect.poll(focused, SETTLE).toBe('nav: Chats');
    await page.keyboard.press('Tab');
    expect(await focused()).toBe('button: New chat');
    await page.keyboard.press('Escape');
    await expect.poll(() => sidebar.isVisible(), SETTLE).toBe(false);
    await expect.poll(focused, SETTLE).toBe('button: Open the chat list');

    // The status panel: open with the keyboard, focus on it, Escape closes it and returns focus.
    for (let i = 0; i < 6 && (await focused()) !== 'button: Status'; i += 1) await page.keyboard.press('Tab');
    expect(await focused()).toBe('button: Status');
    await page.keyboard.press('Enter');
    await page.locator('[data-testid="status-panel"]').waitFor();
    await expect.poll(focused, SETTLE).toBe('aside: Status');
    await page.keyboard.press('Tab');
    expect(await focused()).toBe('button: Close status');
    await page.keyboard.press('Escape');
    await expect.poll(() => page.locator('[data-testid="status-panel"]').count(), SETTLE).toBe(0);
    await expect.poll(focused, SETTLE).toBe('button: Status');

    // On to the message box and send with Enter.
    for (let i = 0; i < 12 && !(await page.evaluate(composerFocused)); i += 1) await page.keyboard.press('Tab');
    expect(await page.evaluate(composerFocused)).toBe(true);
    await page.keyboard.type('Hello from the keyboard');
    await page.keyboard.press('Enter');
    await page.locator('[data-testid="assistant-message"]', { hasText: 'keyboard alone' }).waitFor();
    await page.screenshot({ path: join(ARTIFACTS, 'webui-a11y-keyboard-phone.png') });
    await context.close();
  }, 60_000);
});
