/**
 * The WebUI's microphone in real Chromium (a fake capture device): record, stop, and the transcript from the gateway
 * (`transcribe_audio` → fake Groq) lands in the draft. Runs in the browser lane (`test/webui/*browser*.test.ts`).
 */
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWebUiGateway, type WebUiGateway } from '../channels/websocket/gateway-helpers.js';
import { type FakeVoiceApi, startFakeVoiceApi } from '../helpers/fake-voice-api.js';
import { CHROMIUM, hasChromium } from './chromium.js';

describe.skipIf(!hasChromium)('WebUI voice input in Chromium', () => {
  let run: WebUiGateway;
  let voice: FakeVoiceApi;
  let browser: Browser;
  let page: Page;

  beforeAll(async () => {
    voice = await startFakeVoiceApi({ transcript: 'dictated in the browser', key: 'gsk-web' });
    run = await startWebUiGateway(
      [],
      {},
      undefined,
      {},
      {
        providers: { groq: { apiKey: 'gsk-web', apiBase: `${voice.url}/v1` } },
        config: { transcription: { provider: 'groq' } },
      },
    );
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      headless: true,
      args: [
        '--no-sandbox',
        '--disable-gpu',
        '--no-first-run',
        '--use-fake-device-for-media-stream',
        '--use-fake-ui-for-media-stream',
      ],
    });
    const context = await browser.newContext({ viewport: { width: 1100, height: 800 } });
    await context.grantPermissions(['microphone'], { origin: run.url });
    page = await context.newPage();
    page.setDefaultTimeout(30_000);
    page.on('pageerror', (err) => {
      throw err;
    });
    await page.goto(`${run.url}/#token=${run.token}`);
    await page.waitForSelector('#composer-input:not([disabled])', { timeout: 30_000 });
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await run?.close().catch(() => undefined);
    await voice?.close();
  });

  it('records, transcribes, and puts the transcript in the draft', async () => {
    const mic = page.getByRole('button', { name: 'Record a voice message' });
    await mic.click();
    const stop = page.getByRole('button', { name: 'Stop recording and transcribe' });
    await expect.poll(() => stop.getAttribute('aria-pressed')).toBe('true');
    // Stopping at once still yields the recorder's data (MediaRecorder flushes on stop); an empty one would be `decode`.
    await stop.click();
    await expect.poll(() => page.locator('#composer-input').inputValue()).toBe('dictated in the browser');
    const upload = voice.to('/audio/transcriptions')[0];
    expect(upload?.headers.authorization).toBe('Bearer gsk-web');
    expect((upload?.fields.file as { type: string } | undefined)?.type).toMatch(/^audio\//);
  });
});
