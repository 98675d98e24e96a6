/**
 * Settings › Channels in Chromium against a real gateway whose Telegram is a loopback fake of the Bot API: the user
 * fills Telegram's form (the fields of its setup description, the one `nanobot channels login` prints), sees the
 * gateway's validation errors for an empty and a wrong token, saves, and sees the channel running without a
 * restart; config.json then holds what the CLI's path gives for the same values. A stranger who writes to the bot
 * shows up as a pending pairing code, is approved and gets the fake model's answer, is revoked and is locked out
 * again; another is denied. Desktop and phone screenshots in both themes, no accessibility faults.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../channels/contract.js';
import { type FakeBotApi, startFakeBotApi } from '../channels/telegram/fake-bot-api.js';
import { startWebUiGateway, type WebUiGateway } from '../channels/websocket/gateway-helpers.js';
import { editConfig, runCli, tempHome } from '../cli/cli-helpers.js';
import { hasChromium, launchChromium } from './chromium.js';
import { openSettings, shootAndScan } from './settings-page.js';

const CODE = /\b([A-Z2-9]{4}-[A-Z2-9]{4})\b/;
const WAIT = { timeout: 30_000 };

describe.skipIf(!hasChromium)('Settings › Channels in Chromium', () => {
  let run: WebUiGateway;
  let api: FakeBotApi;
  let browser: Browser;
  let initialConfig: string;
  const configPath = () => join(run.dataDir, 'config.json');
  const telegramBlock = () =>
    (JSON.parse(readFileSync(configPath(), 'utf8')) as { channels: Record<string, Record<string, unknown>> }).channels
      .telegram;
  const codesSentTo = (chatId: number) =>
    api
      .messagesIn(chatId)
      .map((message) => CODE.exec(message.text)?.[1])
      .filter((code): code is string => code !== undefined);

  beforeAll(async () => {
    api = await startFakeBotApi();
    // Answers by what was asked (the chat may ask for a title in between).
    const reply = (body: unknown) =>
      JSON.stringify(body).includes('may I come in') ? { text: 'Welcome aboard.' } : { text: 'A title' };
    run = await startWebUiGateway(
      Array.from({ length: 20 }, () => reply),
      {},
      undefined,
      // Where the fake Bot API listens is not a form field: the test's config names it, as a self-hosted one would.
      { telegram: { enabled: false, apiBase: api.url, pollTimeout: 1, streamEditInterval: 0.05 } },
    );
    initialConfig = readFileSync(configPath(), 'utf8');
    browser = await launchChromium();
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await run?.close();
    await api?.close();
  });

  it('fills Telegram’s form, is shown what is wrong, saves, and sees it running; config.json is the CLI’s', async () => {
    const { context, page } = await openSettings(browser, run, 'channels', { colorScheme: 'light' });
    const card = page.getByRole('article', { name: 'Telegram' });
    await expect.poll(() => card.getByTestId('channel-status-telegram').textContent()).toBe('Not set up');
    // Every channel this build has is in the catalog.
    for (const name of ['Discord', 'Email', 'Feishu', 'Matrix', 'Slack', 'Telegram'])
      await page.getByRole('article', { name }).waitFor();

    // A value of the wrong kind is refused by the gateway and shown under its field.
    const email = page.getByRole('article', { name: 'Email' });
    await email.getByRole('button', { name: 'Set up Email' }).click();
    await email.getByLabel('IMAP port').fill('99x');
    await email.getByRole('button', { name: 'Check' }).click();
    await email.getByText("'channels.email.imapPort' must be a whole number").waitFor();
    expect(await email.getByLabel('IMAP port').getAttribute('aria-invalid')).toBe('true');
    await email.getByRole('button', { name: 'Hide settings Email' }).click();
    // Matrix needs a password or an access token: the form says so.
    const matrix = page.getByRole('article', { name: 'Matrix' });
    await matrix.getByRole('button', { name: 'Set up Matrix' }).click();
    await matrix.getByText('Fill in one of these: Password / Access token.').waitFor();
    await matrix.getByRole('button', { name: 'Hide settings Matrix' }).click();

    await card.getByRole('button', { name: 'Set up Telegram' }).click();
    const token = card.getByLabel('Bot token');
    await card.getByRole('button', { name: 'Check' }).click();
    await card.getByText('Bot token: Required.').waitFor();
    expect(await token.getAttribute('aria-invalid')).toBe('true');

    await token.fill('4242:WRONG-TOKEN');
    await card.getByRole('button', { name: 'Save and turn on' }).click();
    await card.getByText('Telegram rejected the token: HTTP 401.').waitFor();
    await card.getByText('Nothing was saved. Fix the problems above, then save again.').waitFor();
    expect(readFileSync(configPath(), 'utf8')).toBe(initialConfig);
    const faults = await shootAndScan(page, 'webui-settings-channels-form-light', {
      scrollTo: card.locator('.channels-form'),
    });

    await token.fill(api.token);
    await card.getByRole('button', { name: 'Check' }).click();
    await card.getByText('Telegram accepted the bot token.', { exact: false }).waitFor();
    await card.getByText('The platform knows this bot as nano_test_bot.').waitFor();
    await card.getByRole('button', { name: 'Save and turn on' }).click();
    await card.getByText('Saved. The gateway is starting Telegram now.').waitFor();
    await expect.poll(() => card.getByTestId('channel-status-telegram').textContent(), WAIT).toBe('Running');
    expect(telegramBlock()).toMatchObject({ enabled: true, token: api.token, apiBase: api.url });
    // The saved token is never sent back: the field is empty again and says it is kept.
    expect(await token.inputValue()).toBe('');
    await card.getByText('Saved. Leave empty to keep it.').waitFor();
    expect(await page.content()).not.toContain(api.token);
    faults.push(...(await shootAndScan(page, 'webui-settings-channels-running-light', { scrollTo: card })));
    expect(faults).toEqual([]);
    await context.close();

    // The CLI has no command that writes a channel's credentials: `nanobot channels login telegram` names the
    // same fields from the same description (what the form showed) and says to set them in config.json; then
    // `nanobot onboard --refresh` completes the file. The WebUI wrote exactly that.
    const twin = tempHome();
    mkdirSync(join(twin, '.nanobot'), { recursive: true });
    writeFileSync(join(twin, '.nanobot', 'config.json'), initialConfig);
    const login = await runCli(['channels', 'login', 'telegram'], twin);
    expect(login.code).toBe(0);
    expect(login.stdout).toContain(
      'channels.telegram.token (Bot token): Create a bot with @BotFather in Telegram and paste the token it gives you',
    );
    editConfig(twin, (config) => {
      const telegram = (config.channels as Record<string, Record<string, unknown>>).telegram ?? {};
      telegram.token = api.token;
      telegram.enabled = true;
    });
    const refresh = await runCli(['onboard', '--refresh', '-w', join(twin, 'workspace')], twin);
    expect(refresh.code).toBe(0);
    // Byte for byte: same keys, same order, same defaults filled in.
    expect(readFileSync(configPath(), 'utf8')).toBe(readFileSync(join(twin, '.nanobot', 'config.json'), 'utf8'));
  }, 120_000);

  it('admits a stranger approved from the pairing queue, and locks them out again on revoke', async () => {
    // The page is open before the stranger writes: their request shows up on its own.
    const { context, page } = await openSettings(browser, run, 'channels', { colorScheme: 'light' });
    await page.getByText('No one is waiting.').waitFor();
    api.userSays({ chatId: 91, from: { id: 91, username: 'newcomer' }, text: 'hello?' });
    await eventually(() => expect(codesSentTo(91)).toHaveLength(1), 15_000);
    const [code] = codesSentTo(91);
    const request = page.getByRole('listitem', { name: '91 on Telegram' });
    await request.getByText(code ?? '-').waitFor(WAIT);
    await page.getByText('Pairing requests waiting for you: 1.').waitFor();
    const faults = await shootAndScan(page, 'webui-settings-channels-pairing-light', {
      scrollTo: pairingSection(page),
    });

    await request.getByRole('button', { name: 'Approve 91' }).click();
    await page.getByText('Approved 91 on Telegram. Their next message gets an answer.').waitFor();
    const approved = page.getByRole('listitem', { name: '91 (@newcomer) on Telegram' });
    await approved.waitFor();
    expect(await page.getByTestId('pairing-requests').count()).toBe(0);
    api.userSays({ chatId: 91, from: { id: 91, username: 'newcomer' }, text: 'may I come in now?' });
    await eventually(
      () => expect(api.messagesIn(91).map((m) => m.text)).toContainEqual(expect.stringContaining('Welcome aboard.')),
      20_000,
    );

    await approved.getByRole('button', { name: 'Revoke 91 (@newcomer)' }).click();
    const dialog = page.getByRole('dialog', { name: 'Revoke 91 (@newcomer) on Telegram?' });
    await dialog.getByRole('button', { name: 'Revoke' }).click();
    await page.getByText('Revoked 91 (@newcomer) on Telegram.').waitFor();
    await page.getByText('No one has been let in by pairing yet.').waitFor();
    faults.push(
      ...(await shootAndScan(page, 'webui-settings-channels-revoked-light', { scrollTo: pairingSection(page) })),
    );
    expect(faults).toEqual([]);

    // Locked out again: their next message gets a new pairing code, not the model.
    const asked = run.fake.requests.length;
    api.userSays({ chatId: 91, from: { id: 91, username: 'newcomer' }, text: 'still there?' });
    await eventually(() => expect(codesSentTo(91)).toHaveLength(2), 15_000);
    expect(run.fake.requests.slice(asked).filter((r) => JSON.stringify(r.body).includes('still there'))).toEqual([]);
    await context.close();
  }, 120_000);

  it('dark theme: denies a stranger, and switches Telegram off and on again from its switch', async () => {
    api.userSays({ chatId: 92, from: { id: 92 }, text: 'let me in' });
    await eventually(() => expect(codesSentTo(92)).toHaveLength(1), 15_000);
    const { context, page } = await openSettings(browser, run, 'channels', { colorScheme: 'dark' });
    const card = page.getByRole('article', { name: 'Telegram' });
    await expect.poll(() => card.getByTestId('channel-status-telegram').textContent(), WAIT).toBe('Running');
    await card.getByRole('button', { name: 'Edit settings Telegram' }).click();
    await card.getByLabel('Bot token').fill('4242:WRONG-TOKEN');
    await card.getByRole('button', { name: 'Check' }).click();
    await card.getByText('Telegram rejected the token: HTTP 401.').waitFor();
    const request = page.getByRole('listitem', { name: '92 on Telegram' });
    await request.waitFor(WAIT);
    const faults = await shootAndScan(page, 'webui-settings-channels-dark', { scrollTo: card });

    await request.getByRole('button', { name: 'Deny 92' }).click();
    await page
      .getByRole('dialog', { name: `Deny pairing code ${codesSentTo(92)[0]}?` })
      .getByRole('button', { name: 'Deny' })
      .click();
    await expect.poll(() => request.count(), WAIT).toBe(0);
    expect(codesSentTo(92)).toHaveLength(1); // denied: no second code, no answer

    await flip(card, 'Enable Telegram', false);
    await expect.poll(() => card.getByTestId('channel-status-telegram').textContent(), WAIT).toBe('Off');
    expect(telegramBlock()).toMatchObject({ enabled: false, token: api.token });
    await flip(card, 'Enable Telegram', true);
    await expect.poll(() => card.getByTestId('channel-status-telegram').textContent(), WAIT).toBe('Running');
    expect(telegramBlock()).toMatchObject({ enabled: true, token: api.token });
    faults.push(
      ...(await shootAndScan(page, 'webui-settings-channels-switched-dark', { scrollTo: pairingSection(page) })),
    );
    expect(faults).toEqual([]);
    await context.close();
  }, 120_000);
});

const pairingSection = (page: Page) => page.getByRole('region', { name: 'Pairing' });

/** A switch is a visually hidden checkbox: its label is what a user clicks. Its state follows the gateway's answer. */
async function flip(card: Locator, name: string, on: boolean): Promise<void> {
  await card.locator('label.toggle', { hasText: name }).click();
  await expect.poll(() => card.getByRole('switch', { name }).isChecked(), WAIT).toBe(on);
}
