/**
 * The WebUI in real Chromium (playwright-core, headless) against a gateway wired to the fake LLM: a streamed
 * Markdown answer with a tool card, a second chat and back, the status panel, the phone layout, and a page on
 * another origin that tries to use the WebSocket. Screenshots go to test-artifacts/ (git-ignored).
 */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, onTestFailed } from 'vitest';
import { startWebUiGateway, type WebUiGateway } from '../channels/websocket/gateway-helpers.js';

const CHROMIUM = '/usr/bin/chromium';
const hasChromium = existsSync(CHROMIUM);
if (!hasChromium) {
  console.warn(`WebUI browser test SKIPPED: ${CHROMIUM} is not installed (apt-get install chromium; CI installs it).`);
}
const ARTIFACTS = join(import.meta.dirname, '..', '..', 'test-artifacts');

/** A 1×1 PNG. */
const PIXEL_PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==',
  'base64',
);

const FIRST_ANSWER = ['Your notes say **hello world**.', '', '```python', "print('hello world')", '```'].join('\n');

describe.skipIf(!hasChromium)('WebUI in Chromium', () => {
  let run: WebUiGateway;
  let browser: Browser;

  beforeAll(async () => {
    run = await startWebUiGateway([
      { reasoning: 'The user wants their notes.', toolCalls: [{ name: 'read_file', arguments: { path: 'notes.md' } }] },
      { text: FIRST_ANSWER },
      // The agent sends a picture back (the message tool): shown from its signed media URL.
      { toolCalls: [{ name: 'message', arguments: { content: 'Here is a chart.', media: ['chart.png'] } }] },
      { text: 'Second chat answer.' },
    ]);
    writeFileSync(join(run.workspace, 'notes.md'), 'hello world\n');
    writeFileSync(join(run.workspace, 'chart.png'), PIXEL_PNG);
    mkdirSync(ARTIFACTS, { recursive: true });
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      headless: true,
      args: [
        '--no-sandbox',
        '--disable-gpu',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
        '--no-first-run',
        '--disable-quic',
      ],
    });
  }, 30_000);

  afterAll(async () => {
    await browser?.close();
    await run?.close();
  });

  /** On failure, print what the page showed and said, every WebSocket frame, and what the model was asked. */
  function recordForFailure(page: Page): void {
    const log: string[] = [];
    page.on('console', (msg) => log.push(`console.${msg.type()}: ${msg.text()}`));
    page.on('websocket', (ws) => {
      ws.on('framesent', (frame) => log.push(`ws> ${String(frame.payload).slice(0, 300)}`));
      ws.on('framereceived', (frame) => log.push(`ws< ${String(frame.payload).slice(0, 300)}`));
      ws.on('close', () => log.push('ws closed'));
    });
    onTestFailed(async () => {
      const shown = await page
        .locator('body')
        // biome-ignore lint/performance/useDomNodeTextContent: the rendered lines are what a reader of the failure needs
        .innerText({ timeout: 2_000 })
        .catch((err: Error) => `(unreadable: ${err.message})`);
      await page.screenshot({ path: join(ARTIFACTS, 'webui-failure.png') }).catch(() => undefined);
      console.error(
        [
          '--- WebUI browser test failed; what the page showed:',
          shown,
          `--- model requests: ${run.fake.requests.length}`,
          '--- console and WebSocket frames:',
          ...log.slice(-200),
        ].join('\n'),
      );
    });
  }

  async function openApp(width: number, height: number): Promise<Page> {
    const page = await browser.newPage({ viewport: { width, height } });
    // Generous: CI runs this beside the other test files on two cores.
    page.setDefaultTimeout(30_000);
    page.on('pageerror', (err) => {
      throw err;
    });
    recordForFailure(page);
    await page.goto(`${run.url}/#token=${run.token}`);
    await expect.poll(() => page.locator('#composer-input').isEnabled(), { timeout: 30_000 }).toBe(true);
    return page;
  }

  it('chats: streamed Markdown answer, tool card, new chat and back, status, phone layout', async () => {
    const page = await openApp(1280, 800);
    // The token left the address bar.
    expect(page.url()).not.toContain('token');

    await page.fill('#composer-input', 'What do my notes say?');
    // The Send button is clicked the way a user does: once it is enabled (Enter is used for the second chat).
    await page.getByRole('button', { name: 'Send' }).click();
    const answer = page.locator('[data-testid="assistant-message"]').last();
    await answer.locator('strong', { hasText: 'hello world' }).waitFor({ timeout: 30_000 });
    // Highlighted code with a copy button.
    await answer.locator('.code-block .hljs-built_in, .code-block .hljs-string').first().waitFor();
    expect(await answer.locator('.code-block .copy-code').count()).toBe(1);
    await expect.poll(() => page.getByRole('button', { name: 'Send' }).isVisible()).toBe(true);

    // The tool card opens to show the arguments and the result.
    const card = answer.locator('[data-testid="tool-card"]');
    expect(await card.locator('.tool-name').textContent()).toBe('read_file');
    await card.locator('summary').click();
    await card.locator('.tool-pre', { hasText: 'hello world' }).waitFor();
    expect(await card.locator('.tool-pre').first().textContent()).toContain('"path": "notes.md"');
    expect(await answer.locator('details.reasoning summary').textContent()).toContain('Reasoning');

    // The chat is in the list, titled by its first message.
    const sessions = page.locator('.sessions .session-open');
    await expect.poll(() => sessions.count()).toBe(1);
    expect(await sessions.first().textContent()).toContain('What do my notes say?');

    await page.getByRole('button', { name: 'Status' }).click();
    const panel = page.locator('[data-testid="status-panel"]');
    await panel.locator('code', { hasText: 'test-model' }).waitFor();
    expect(await panel.textContent()).toContain('websocket');
    await page.screenshot({ path: join(ARTIFACTS, 'webui-desktop.png') });
    await page.getByRole('button', { name: 'Close status' }).click();

    // A new chat starts empty; its answer arrives; then back to the first one, restored from history.
    await page.getByRole('button', { name: 'New chat' }).click();
    await page.getByRole('heading', { name: 'How can I help?' }).waitFor();
    await page.screenshot({ path: join(ARTIFACTS, 'webui-new-chat.png') });
    // With an image attached: uploaded, shown on the message, handed to the agent as a file.
    await page
      .locator('input[type="file"]')
      .setInputFiles({ name: 'pixel.png', mimeType: 'image/png', buffer: PIXEL_PNG });
    await page.locator('.pending-files .chip', { hasText: 'pixel.png' }).waitFor();
    await page.fill('#composer-input', 'A second question');
    await page.keyboard.press('Enter');
    await page.locator('[data-testid="user-message"] .chip', { hasText: 'pixel.png' }).waitFor();
    await page.locator('[data-testid="assistant-message"]', { hasText: 'Second chat answer.' }).waitFor();
    expect(JSON.stringify(run.fake.requests.at(-1)?.body.messages)).toMatch(/media\/websocket\/[^"]*pixel\.png/);
    // The picture the agent sent is shown, loaded from its signed /api/media URL (no token in the page's request).
    const picture = page.locator('[data-testid="assistant-message"] img.media-image');
    expect(await picture.getAttribute('src')).toMatch(/^\/api\/media\/[^/]+\/[^/]+$/);
    const loadedWidth = () =>
      picture.evaluate((img) => {
        const image = img as unknown as { complete: boolean; naturalWidth: number };
        return image.complete ? image.naturalWidth : 0;
      });
    await expect.poll(loadedWidth).toBe(1);
    await expect.poll(() => sessions.count()).toBe(2);
    await page.locator('.sessions .session-open', { hasText: 'What do my notes say?' }).click();
    await page.locator('[data-testid="assistant-message"] strong', { hasText: 'hello world' }).waitFor();
    expect(await page.locator('[data-testid="tool-card"] .tool-name').textContent()).toBe('read_file');
    expect(await page.locator('[data-testid="assistant-message"]', { hasText: 'Second chat answer.' }).count()).toBe(0);

    // Rename the second chat, then delete it (after confirming in the page's own dialog).
    await page.getByRole('button', { name: 'Rename A second question' }).click();
    await page.getByLabel('New title').fill('Renamed chat');
    await page.getByRole('button', { name: 'Save' }).click();
    await page.locator('.sessions .session-open', { hasText: 'Renamed chat' }).waitFor();
    await page.getByRole('button', { name: 'Delete Renamed chat' }).click();
    await page
      .getByRole('dialog', { name: 'Delete chat' })
      .getByRole('button', { name: 'Delete', exact: true })
      .click();
    await expect.poll(() => sessions.count()).toBe(1);

    // A reload re-opens the chat that was open, from its transcript (nanobot's webui-thread), tool card and all.
    await page.reload();
    await page.locator('[data-testid="assistant-message"] strong', { hasText: 'hello world' }).waitFor();
    expect(await page.locator('[data-testid="tool-card"] .tool-name').textContent()).toBe('read_file');
    expect(await page.locator('[data-testid="user-message"]').first().textContent()).toContain('What do my notes say?');
    await expect.poll(() => sessions.count()).toBe(1);

    // Phone width: the chat list becomes a drawer behind the menu button.
    await page.setViewportSize({ width: 390, height: 844 });
    const sidebar = page.locator('nav.sidebar');
    await expect.poll(() => sidebar.isVisible()).toBe(false);
    await page.screenshot({ path: join(ARTIFACTS, 'webui-phone.png') });
    await page.getByRole('button', { name: 'Use the dark theme' }).click();
    expect(await page.locator('html').getAttribute('data-theme')).toBe('dark');
    await page.screenshot({ path: join(ARTIFACTS, 'webui-phone-dark.png') });
    await page.getByRole('button', { name: 'Open the chat list' }).click();
    await expect.poll(async () => (await sidebar.boundingBox())?.x).toBe(0);
    await page.screenshot({ path: join(ARTIFACTS, 'webui-phone-drawer.png') });
    // Tapping beside the drawer closes it.
    await page.getByRole('button', { name: 'Close the chat list' }).click({ position: { x: 375, y: 400 } });
    await expect.poll(() => sidebar.isVisible()).toBe(false);
    await page.close();
  }, 150_000);

  it('lets a browser on this machine in without a token (nanobot’s bootstrap), on short-lived tokens', async () => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    page.setDefaultTimeout(30_000);
    const sockets: string[] = [];
    page.on('websocket', (ws) => sockets.push(ws.url()));
    await page.goto(`${run.url}/`);
    await expect.poll(() => page.locator('#composer-input').isEnabled(), { timeout: 30_000 }).toBe(true);
    // The WebSocket was opened with an issued one-connection token, not the stored WebUI token.
    await expect.poll(() => sockets.length, { timeout: 10_000 }).toBeGreaterThan(0);
    expect(sockets.at(-1)).toMatch(/[?&]token=nbwt_/);
    expect(sockets.join(' ')).not.toContain(run.token);
    await page.close();
  }, 60_000);

  it('asks for the token when the gateway is configured with one, and refuses a wrong one', async () => {
    const guarded = await startWebUiGateway([], { token: 'configured-token-0123456789' });
    const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    page.setDefaultTimeout(30_000);
    onTestFailed(() => guarded.close());
    const run = guarded;
    await page.goto(`${run.url}/`);
    await page.getByLabel('Token').fill('not-the-token');
    await page.getByRole('button', { name: 'Connect' }).click();
    await page.getByRole('alert').filter({ hasText: 'not accepted' }).waitFor();
    await page.screenshot({ path: join(ARTIFACTS, 'webui-token.png') });
    await page.getByLabel('Token').fill(run.token);
    await page.getByRole('button', { name: 'Connect' }).click();
    await expect.poll(() => page.locator('#composer-input').isEnabled(), { timeout: 30_000 }).toBe(true);
    await page.close();
    await guarded.close();
  }, 60_000);

  it('a page on another origin cannot open a working WebSocket or call the API, even knowing the token', async () => {
    const target = `127.0.0.1:${run.port}`;
    const evil = http.createServer((_req, res) => {
      res.setHeader('content-type', 'text/html');
      res.end(`<!doctype html><title>evil</title><script>
        window.result = new Promise((resolve) => {
          const ws = new WebSocket('ws://${target}/?token=${run.token}');
          ws.onopen = () => resolve('open');
          ws.onerror = () => resolve('blocked');
        });
        window.apiResult = fetch('http://${target}/api/sessions', { headers: { authorization: 'Bearer ${run.token}' } })
          .then((r) => 'status ' + r.status, () => 'blocked');
      </script>`);
    });
    await new Promise<void>((resolve) => evil.listen(0, '127.0.0.1', resolve));
    const page = await browser.newPage();
    page.setDefaultTimeout(30_000);
    try {
      await page.goto(`http://127.0.0.1:${(evil.address() as AddressInfo).port}/`);
      expect(await page.evaluate('window.result')).toBe('blocked');
      expect(await page.evaluate('window.apiResult')).toBe('blocked');
    } finally {
      await page.close();
      evil.close();
    }
  }, 60_000);
});
