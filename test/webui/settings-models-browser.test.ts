/**
 * Settings › Models in Chromium against a real gateway on the loopback fake LLM, driven as a user does: a provider's
 * key and base URL typed in, made the main model, "Test" shows who answered and how fast, and the chat answers with
 * it at once (no restart); the key never reaches the page or any answer of the API. Presets and the call order land
 * in config.json. GitHub Copilot's device flow and OpenAI Codex's pasted callback run against loopback fakes of
 * GitHub and OpenAI. Where the CLI can make the same change (`onboard --wizard`, `provider login --set-main`), a twin
 * home changed by the built CLI ends with the same config.json.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, BrowserContext, Locator, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { keyQuestion, wizardProviders } from '../../src/cli/wizard.js';
import { findSpec } from '../../src/providers/registry.js';
import { startWebUiGateway, type WebUiGateway } from '../channels/websocket/gateway-helpers.js';
import { runCli } from '../cli/cli-helpers.js';
import type { FakeScriptStep } from '../helpers/fake-llm.js';
import { type FakeWeb, json, startFakeWeb } from '../helpers/fake-web.js';
import { DESKTOP, hasChromium, launchChromium, openWebUi } from './chromium.js';
import { runWizard, twinHome } from './models-cli-twin.js';
import { goToSettings, shootAndScan } from './settings-page.js';

const SECRET = 'vllm-secret-key-0123456789abcdef';
const PING = 'Reply with the single word OK.';

/** The fake model: "OK" to the Test button's ping, a fixed sentence to a chat. */
const responder: FakeScriptStep = (body) =>
  JSON.stringify(body).includes(PING) ? { text: 'OK' } : { text: 'Hello from the fake vLLM.' };
const script = () => Array.from({ length: 20 }, () => responder);

type Json = Record<string, unknown>;
const readConfig = (run: WebUiGateway) =>
  JSON.parse(readFileSync(join(run.dataDir, 'config.json'), 'utf8')) as {
    agents: { defaults: Json };
    providers: Record<string, Json>;
    modelPresets: Record<string, Json>;
  };

/** What the page was sent: every /api/ answer's body and every WebSocket frame. */
interface Seen {
  texts: string[];
}

async function openModels(
  browser: Browser,
  run: WebUiGateway,
  colorScheme: 'light' | 'dark' = 'light',
  locale = 'en-US',
): Promise<{ context: BrowserContext; page: Page; seen: Seen }> {
  const context = await browser.newContext({
    locale,
    viewport: DESKTOP,
    colorScheme,
    reducedMotion: 'reduce',
  });
  const seen: Seen = { texts: [] };
  context.on('response', (response) => {
    if (new URL(response.url()).pathname.startsWith('/api/')) {
      void response.text().then(
        (text) => seen.texts.push(text),
        () => undefined,
      );
    }
  });
  context.on('page', (page) =>
    page.on('websocket', (ws) => ws.on('framereceived', (frame) => seen.texts.push(String(frame.payload)))),
  );
  const page = await openWebUi(context, run.url, run.token);
  await goToSettings(page, 'models');
  await page.locator('.models-page').waitFor();
  return { context, page, seen };
}

const section = (page: Page, name: string) => page.getByRole('region', { name });
const provider = (page: Page, name: string) => page.locator(`details[data-provider="${name}"]`);

async function openProvider(page: Page, name: string): Promise<Locator> {
  const row = provider(page, name);
  if (!(await row.evaluate((el) => (el as unknown as { open: boolean }).open))) await row.locator('summary').click();
  return row;
}

/** Scrolls the settings pane so that `target` starts at its top (the pane scrolls, not the window). */
const scrollTo = (target: Locator) =>
  target.evaluate((el) => (el as unknown as { scrollIntoView(o: object): void }).scrollIntoView({ block: 'start' }));

/** Everything the page holds: its markup and the values of its fields. */
async function pageText(page: Page): Promise<string> {
  const values = await page.evaluate(() => {
    const doc = (globalThis as unknown as { document: { querySelectorAll(s: string): { value: string }[] } }).document;
    return [...doc.querySelectorAll('input, textarea, select')].map((field) => field.value);
  });
  return `${await page.content()}\n${values.join('\n')}`;
}

describe.skipIf(!hasChromium)('Settings › Models in Chromium', () => {
  let browser: Browser;
  const runs: WebUiGateway[] = [];
  const webs: FakeWeb[] = [];
  const contexts: BrowserContext[] = [];

  beforeAll(async () => {
    browser = await launchChromium();
  }, 60_000);
  afterEach(async () => {
    for (const context of contexts.splice(0)) await context.close();
    for (const run of runs.splice(0)) await run.close();
    for (const web of webs.splice(0)) await web.close();
  });
  afterAll(async () => {
    await browser?.close();
  });

  async function start(): Promise<{ run: WebUiGateway; initial: string }> {
    const run = await startWebUiGateway(script());
    runs.push(run);
    return { run, initial: readFileSync(join(run.dataDir, 'config.json'), 'utf8') };
  }

  it('a provider key typed in, made the main model and tested, answers the chat at once; the key is never shown', async () => {
    const { run, initial } = await start();
    const { context, page, seen } = await openModels(browser, run);
    contexts.push(context);

    // vLLM: a key and the address of the (fake) server.
    const vllm = await openProvider(page, 'vllm');
    await expect.poll(() => vllm.locator('.models-badge').textContent()).toBe('Not set up');
    await vllm.getByLabel('API key').fill(SECRET);
    // A base URL that is not one is refused with the gateway's reason, and nothing is saved.
    await vllm.getByLabel('API base URL').fill('localhost:8000');
    await vllm.getByRole('button', { name: 'Save vLLM' }).click();
    await vllm.getByRole('alert').getByText('api_base must be an http:// or https:// URL').waitFor();
    expect(readConfig(run).providers.vllm).toBeUndefined();
    await vllm.getByLabel('API base URL').fill(`${run.fake.url}/v1`);
    await vllm.getByRole('button', { name: 'Save vLLM' }).click();
    await vllm.getByText('vLLM saved.').waitFor();
    expect(await vllm.locator('.models-badge').textContent()).toBe('Set up');
    expect(await vllm.getByLabel('API key').inputValue()).toBe('');
    await vllm.getByText('Saved (vllm••••cdef). Leave empty to keep it.').first().waitFor();
    expect(readConfig(run).providers.vllm).toMatchObject({ apiKey: SECRET, apiBase: `${run.fake.url}/v1` });

    // Made the main model: the provider's own list offers the fake's model.
    const main = section(page, 'Main model');
    await main.getByLabel('Provider').selectOption({ label: 'vLLM' });
    await main.getByRole('button', { name: 'Load models' }).click();
    await main.getByText('Models listed: 1. Start typing to pick one.').waitFor();
    expect(
      await main.locator('datalist option').evaluateAll((els) => els.map((el) => el.getAttribute('value'))),
    ).toEqual(['fake-model']);
    await main.getByLabel('Model', { exact: true }).fill('fake-model');
    await main.getByRole('button', { name: 'Save', exact: true }).click();
    await main.getByText('Saved. The next message uses it.').waitFor();
    await expect.poll(() => main.getByTestId('models-current').textContent()).toBe('In usefake-modelServed byvllm');
    expect(readConfig(run).agents.defaults).toMatchObject({ provider: 'vllm', model: 'fake-model' });

    // Test: one tiny request, who answered and how fast.
    await main.getByRole('button', { name: 'Test', exact: true }).click();
    const ok = main.getByRole('status').filter({ hasText: 'answered' });
    await ok.waitFor();
    expect(await ok.textContent()).toMatch(/^vllm answered \(fake-model\) in [\d,]+ ms\.$/);
    const ping = run.fake.requests.at(-1);
    expect(ping?.headers.authorization).toBe(`Bearer ${SECRET}`);
    expect(ping?.body.model).toBe('fake-model');

    // The chat answers with it, no restart.
    await page.getByRole('button', { name: 'Back to the chat' }).click();
    await page.locator('#composer-input').fill('Who are you?');
    await page.getByRole('button', { name: 'Send' }).click();
    await page.locator('[data-testid="assistant-message"]', { hasText: 'Hello from the fake vLLM.' }).waitFor();
    const chat = run.fake.requests.at(-1);
    expect(JSON.stringify(chat?.body)).toContain('Who are you?');
    expect(chat?.headers.authorization).toBe(`Bearer ${SECRET}`);
    expect(chat?.body.model).toBe('fake-model');

    // The key is in config.json only: not in the page, not in any answer it was sent.
    await goToSettings(page, 'models');
    await openProvider(page, 'vllm');
    expect(await pageText(page)).not.toContain(SECRET);
    expect(seen.texts.length).toBeGreaterThan(5);
    expect(seen.texts.filter((text) => text.includes(SECRET))).toEqual([]);
    expect(seen.texts.some((text) => text.includes('vllm••••cdef'))).toBe(true);

    // The CLI's way to the same setting (`onboard --wizard`), on a twin home: the same config.json.
    const { home: twin, configPath: twinConfig } = twinHome(initial);
    const names = wizardProviders().map((spec) => spec.name);
    const down = names.indexOf('vllm') - names.indexOf('anthropic');
    const spec = findSpec('vllm');
    expect(down).toBeGreaterThan(0);
    await runWizard(twin, join(twin, 'ws'), [
      { ask: 'Which LLM provider?', send: `${'\u001b[B'.repeat(down)}\r` },
      { ask: 'API base URL', send: `${run.fake.url}/v1\r` },
      { ask: spec ? (keyQuestion(spec) ?? 'API key') : 'API key', send: `${SECRET}\r` },
      { ask: 'Model', send: 'fake-model\r' },
    ]);
    expect(readFileSync(twinConfig, 'utf8')).toBe(readFileSync(join(run.dataDir, 'config.json'), 'utf8'));
  }, 180_000);

  it('presets are added, tested and deleted, and the call order is changed: both land in config.json', async () => {
    const { run } = await start();
    const { context, page } = await openModels(browser, run);
    contexts.push(context);

    // The model in use is not a preset yet: the page offers to convert it.
    const order = section(page, 'Call order');
    await order.getByRole('button', { name: 'Convert to presets' }).click();
    await order.getByTestId('models-order').getByText('test-model').waitFor();
    expect(readConfig(run).agents.defaults.modelPreset).toBe('test-model');
    expect(readConfig(run).modelPresets['test-model']).toMatchObject({ model: 'test-model', provider: 'custom' });

    // A user-named OpenAI-compatible endpoint, for one of the presets.
    const custom = page.locator('details.models-custom');
    await custom.locator('summary').click();
    await custom.getByLabel('Name').fill('My Proxy');
    await custom.getByLabel('API base URL').fill(`${run.fake.url}/v1`);
    await custom.getByLabel('API key').fill('proxy-key-0123456789');
    await custom.getByRole('button', { name: 'Add endpoint' }).click();
    await custom.getByText('My Proxy added.').waitFor();
    expect(await provider(page, 'custom-my-proxy').locator('.models-badge').textContent()).toBe('Set up');
    expect(readConfig(run).providers['custom-my-proxy']).toMatchObject({
      displayName: 'My Proxy',
      apiBase: `${run.fake.url}/v1`,
      apiKey: 'proxy-key-0123456789',
    });

    const presets = section(page, 'Presets');
    for (const [name, model, via] of [
      ['backup', 'backup-model', 'Custom (OpenAI-compatible)'],
      ['spare', 'spare-model', 'My Proxy'],
    ] as const) {
      await presets.getByLabel('Name', { exact: true }).fill(name);
      await presets.getByLabel('Provider').selectOption({ label: via });
      await presets.getByLabel('Model', { exact: true }).fill(model);
      await presets.getByRole('button', { name: 'Add preset' }).click();
      await presets.getByText(`Preset ${name} added.`).waitFor();
    }
    expect(readConfig(run).modelPresets.backup).toMatchObject({ model: 'backup-model', provider: 'custom' });
    expect(readConfig(run).modelPresets.spare).toMatchObject({ model: 'spare-model', provider: 'custom-my-proxy' });

    // backup becomes the fallback, then the first.
    await order.getByLabel('Add a fallback').selectOption('backup');
    await order.getByRole('button', { name: 'Add', exact: true }).click();
    await order.getByRole('button', { name: 'Save the order' }).click();
    await order.getByText('Call order saved.').waitFor();
    expect(readConfig(run).agents.defaults).toMatchObject({ modelPreset: 'test-model', fallbackModels: ['backup'] });
    await order.getByRole('button', { name: 'Move backup up' }).click();
    await order.getByRole('button', { name: 'Save the order' }).click();
    await expect
      .poll(() => readConfig(run).agents.defaults)
      .toMatchObject({ modelPreset: 'backup', fallbackModels: ['test-model'] });
    const main = section(page, 'Main model');
    await main.getByText('The call order starts with the preset backup: a change here changes that preset.').waitFor();
    await expect.poll(() => main.getByTestId('models-current').textContent()).toBe('In usebackup-modelServed bycustom');

    // A preset's own Test.
    await presets.getByRole('button', { name: 'Test the preset backup' }).click();
    await presets.getByText(/^custom answered \(backup-model\) in [\d,]+ ms\.$/).waitFor();
    expect(run.fake.requests.at(-1)?.body.model).toBe('backup-model');

    // Deleting: asked first; a preset in the call order is refused with the gateway's reason.
    await presets.getByRole('button', { name: 'Delete the preset backup' }).click();
    await page
      .getByRole('dialog', { name: 'Delete the preset backup?' })
      .getByRole('button', { name: 'Delete' })
      .click();
    await presets.getByRole('alert').getByText('remove the model preset from the call order first').waitFor();
    await presets.getByRole('button', { name: 'Delete the preset spare' }).click();
    await page
      .getByRole('dialog', { name: 'Delete the preset spare?' })
      .getByRole('button', { name: 'Delete' })
      .click();
    await presets.getByText('Preset spare deleted.').waitFor();
    expect(Object.keys(readConfig(run).modelPresets).sort()).toEqual(['backup', 'test-model']);

    // How it looks: desktop and phone, both themes: the top of the page, then the presets and the call order.
    const faults: string[] = [];
    for (const colorScheme of ['light', 'dark'] as const) {
      const opened = await openModels(browser, run, colorScheme);
      contexts.push(opened.context);
      faults.push(...(await shootAndScan(opened.page, `webui-settings-models-${colorScheme}`)));
      await openProvider(opened.page, 'custom');
      await scrollTo(section(opened.page, 'Providers'));
      faults.push(...(await shootAndScan(opened.page, `webui-settings-models-providers-${colorScheme}`)));
      await scrollTo(section(opened.page, 'Presets'));
      faults.push(...(await shootAndScan(opened.page, `webui-settings-models-presets-${colorScheme}`)));
    }
    expect(faults).toEqual([]);

    // In the reader's language.
    const ja = await openModels(browser, run, 'light', 'ja-JP');
    contexts.push(ja.context);
    await section(ja.page, 'メインモデル').getByRole('button', { name: 'テスト', exact: true }).waitFor();
    await section(ja.page, '呼び出し順').getByRole('button', { name: 'backup を下へ' }).waitFor();
  }, 180_000);

  it('GitHub Copilot’s device flow from the page: the code, GitHub’s address, polled until approved; as the CLI writes it', async () => {
    const { run, initial } = await start();
    let approved = false;
    const web = await startFakeWeb({
      routes: {
        '/device': json({
          device_code: 'dev-1',
          user_code: 'WXYZ-1234',
          verification_uri: 'https://github.com/login/device',
          interval: 1,
        }),
        '/token': () =>
          approved ? json({ access_token: 'gho_secret_0123456789' }) : json({ error: 'authorization_pending' }),
        '/user': json({ login: 'octocat' }),
        '/copilot': json({ token: 'cop', expires_at: Math.floor(Date.now() / 1000) + 1800 }),
      },
    });
    webs.push(web);
    const env = {
      NANOBOT_GITHUB_DEVICE_CODE_URL: web.url('/device'),
      NANOBOT_GITHUB_ACCESS_TOKEN_URL: web.url('/token'),
      NANOBOT_GITHUB_USER_URL: web.url('/user'),
      NANOBOT_COPILOT_TOKEN_URL: web.url('/copilot'),
    };
    Object.assign(process.env, env); // the gateway runs in this process
    try {
      const { context, page, seen } = await openModels(browser, run);
      contexts.push(context);
      // The list is long: the search box narrows it.
      await section(page, 'Providers').getByLabel('Find a provider').fill('copilot');
      await expect.poll(() => page.locator('details[data-provider]').count()).toBe(1);
      const copilot = await openProvider(page, 'github_copilot');
      await copilot.getByRole('button', { name: 'Sign in to GitHub Copilot' }).click();
      await copilot.getByTestId('oauth-user-code').getByText('WXYZ-1234').waitFor();
      expect(await copilot.getByRole('link', { name: 'https://github.com/login/device' }).getAttribute('href')).toBe(
        'https://github.com/login/device',
      );
      await copilot.getByText('Waiting for you to approve the sign-in…').waitFor();
      await scrollTo(copilot);
      const faults = await shootAndScan(page, 'webui-settings-models-copilot-device');
      expect(faults).toEqual([]);
      // The page keeps asking; GitHub says "pending" until the user approves.
      await expect
        .poll(() => web.requests.filter((r) => r.path === '/token').length, { timeout: 20_000 })
        .toBeGreaterThan(0);
      approved = true;
      await copilot.getByText('Signed in to GitHub Copilot.').waitFor({ timeout: 20_000 });
      expect(await copilot.locator('.models-badge').textContent()).toBe('Signed in as octocat');

      // Then it is the main model.
      const main = section(page, 'Main model');
      await main.getByLabel('Provider').selectOption({ label: 'GitHub Copilot' });
      await main.getByLabel('Model', { exact: true }).fill('github-copilot/gpt-4.1');
      await main.getByRole('button', { name: 'Save', exact: true }).click();
      await main.getByText('Saved. The next message uses it.').waitFor();
      expect(seen.texts.filter((text) => text.includes('gho_secret_0123456789'))).toEqual([]);
      expect(await pageText(page)).not.toContain('gho_secret_0123456789');

      // `nanobot provider login github-copilot --set-main` on a twin home writes the same config.json.
      const twin = twinHome(initial);
      const cli = await runCli(['provider', 'login', 'github-copilot', '--set-main'], twin.home, env);
      expect(cli.code, cli.stderr).toBe(0);
      expect(readFileSync(twin.configPath, 'utf8')).toBe(readFileSync(join(run.dataDir, 'config.json'), 'utf8'));
    } finally {
      for (const name of Object.keys(env)) delete process.env[name];
    }
  }, 180_000);

  it('OpenAI Codex from the page, by keyboard: the sign-in page, the pasted address (a wrong one is refused), then sign out', async () => {
    const { run } = await start();
    const web = await startFakeWeb({
      routes: { '/oauth/token': json({ access_token: 'at-secret-0123456789', refresh_token: 'rt', expires_in: 3600 }) },
    });
    webs.push(web);
    const env = {
      NANOBOT_OPENAI_CODEX_AUTHORIZE_URL: web.url('/oauth/authorize'),
      NANOBOT_OPENAI_CODEX_TOKEN_URL: web.url('/oauth/token'),
    };
    Object.assign(process.env, env);
    try {
      const { context, page } = await openModels(browser, run);
      contexts.push(context);
      // By keyboard alone: the search box, Tab to the one row left, Enter opens it, Tab to its button, Enter.
      await section(page, 'Providers').getByLabel('Find a provider').focus();
      await page.keyboard.type('codex');
      await expect.poll(() => page.locator('details[data-provider]').count()).toBe(1);
      const codex = provider(page, 'openai_codex');
      await page.keyboard.press('Tab');
      await expect
        .poll(() => codex.locator('summary').evaluate((el) => el === el.ownerDocument.activeElement))
        .toBe(true);
      await page.keyboard.press('Enter');
      await page.keyboard.press('Tab');
      const signIn = codex.getByRole('button', { name: 'Sign in to OpenAI Codex' });
      await expect.poll(() => signIn.evaluate((el) => el === el.ownerDocument.activeElement)).toBe(true);
      await page.keyboard.press('Enter');
      const link = codex.getByRole('link', { name: 'Open the sign-in page' });
      const href = new URL((await link.getAttribute('href')) ?? '');
      expect(href.origin + href.pathname).toBe(web.url('/oauth/authorize'));
      const state = href.searchParams.get('state');
      const pasted = codex.getByLabel('Address after sign-in');
      await pasted.fill('http://localhost:1455/auth/callback?code=c&state=not-this-one');
      await codex.getByRole('button', { name: 'Finish sign-in' }).click();
      await codex.getByRole('alert').waitFor();
      await pasted.fill(`http://localhost:1455/auth/callback?code=the-code&state=${state}`);
      await codex.getByRole('button', { name: 'Finish sign-in' }).click();
      await codex.getByText('Signed in to OpenAI Codex.').waitFor();
      expect(await codex.locator('.models-badge').textContent()).toMatch(/^Signed in/);
      expect(new URLSearchParams(web.requests.at(-1)?.body).get('code')).toBe('the-code');
      await codex.getByRole('button', { name: 'Sign out' }).click();
      await codex.getByText('Signed out of OpenAI Codex.').waitFor();
      expect(await codex.locator('.models-badge').textContent()).toBe('Not set up');
    } finally {
      for (const name of Object.keys(env)) delete process.env[name];
    }
  }, 120_000);
});
