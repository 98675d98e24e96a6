/**
 * The chat's conveniences in real Chromium against a gateway on the loopback fake LLM, driven as a user does (by
 * role and label, with the mouse and with the keyboard): rename/delete dialogs instead of prompt()/confirm(), errors
 * with their fix, chat search, per-message copy/retry/edit, the slash-command palette, image lightbox. Each feature
 * leaves desktop and phone screenshots (test-artifacts/webui-chat-<feature>-{desktop,phone}.png) and must have no
 * accessibility faults (axe + our checker) in the state shown.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { deflateSync } from 'node:zlib';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, onTestFailed } from 'vitest';
import { startWebUiGateway, type WebUiGateway } from '../channels/websocket/gateway-helpers.js';
import type { FakeScriptStep } from '../helpers/fake-llm.js';
import { focusedName } from './a11y-check.js';
import { a11yFaults } from './a11y-scan.js';
import { ARTIFACTS, DESKTOP, hasChromium, launchChromium, openWebUi, PHONE } from './chromium.js';
import { shootAndScan } from './settings-page.js';

/** A transition or a focus move in an effect, on a loaded machine. */
const SETTLE = { timeout: 10_000 };

describe.skipIf(!hasChromium)('WebUI chat quality of life in Chromium', () => {
  let browser: Browser;
  const running: WebUiGateway[] = [];

  beforeAll(async () => {
    browser = await launchChromium();
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    for (const run of running) await run.close().catch(() => undefined);
  });

  /** A gateway of its own for one test (its script is that test's), and the WebUI open on it. */
  async function open(
    script: FakeScriptStep[],
    options: { cron?: boolean; colorScheme?: 'light' | 'dark' } = {},
  ): Promise<{ run: WebUiGateway; context: BrowserContext; page: Page; nativeDialogs: string[] }> {
    const run = await startWebUiGateway(script, {}, undefined, {}, { cron: options.cron ?? false });
    running.push(run);
    const context = await browser.newContext({
      locale: 'en-US',
      viewport: DESKTOP,
      colorScheme: options.colorScheme ?? 'light',
      reducedMotion: 'reduce',
    });
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: run.url });
    const page = await openWebUi(context, run.url, run.token);
    // The browser's own prompt()/confirm()/alert() must never come up: each one is a failure.
    const nativeDialogs: string[] = [];
    page.on('dialog', (dialog) => {
      nativeDialogs.push(`${dialog.type()}: ${dialog.message()}`);
      void dialog.dismiss();
    });
    onTestFailed(async () => {
      await page.screenshot({ path: join(ARTIFACTS, 'webui-chat-qol-failure.png') }).catch(() => undefined);
      const shown = await page
        .locator('body')
        // biome-ignore lint/performance/useDomNodeTextContent: the rendered lines are what a reader of the failure needs
        .innerText({ timeout: 2_000 })
        .catch(() => '(unreadable)');
      console.error(`--- chat QoL test failed; the page showed:\n${shown}`);
    });
    return { run, context, page, nativeDialogs };
  }

  async function say(page: Page, text: string, answer: string): Promise<void> {
    await page.fill('#composer-input', text);
    await page.keyboard.press('Enter');
    await page.locator('[data-testid="assistant-message"]', { hasText: answer }).waitFor();
    await expect.poll(() => page.getByRole('button', { name: 'Send' }).isVisible(), SETTLE).toBe(true);
  }

  const focused = (page: Page) => page.evaluate(focusedName);
  const activeId = (page: Page) =>
    page.evaluate(
      () =>
        (globalThis as unknown as { document: { activeElement: { id: string } | null } }).document.activeElement?.id,
    );

  it('renames and deletes a chat through dialogs (Escape cancels, focus comes back), never confirm()', async () => {
    const { run, context, page, nativeDialogs } = await open(
      [
        { text: 'Trip planned.' },
        // The second chat gets an automation: its delete asks a second question.
        {
          toolCalls: [{ name: 'cron', arguments: { action: 'add', message: 'stretch', every_seconds: 3600 } }],
        },
        { text: 'Reminder set.' },
      ],
      { cron: true },
    );
    await say(page, 'Plan the trip', 'Trip planned.');
    await page.getByRole('button', { name: 'New chat' }).click();
    await page.getByRole('heading', { name: 'How can I help?' }).waitFor();
    await say(page, 'Remind me to stretch', 'Reminder set.');
    const rows = page.locator('.sessions .session-open');
    await expect.poll(() => rows.count(), SETTLE).toBe(2);

    // Rename: a dialog with the title in a labelled field, focused; Enter saves; focus back on the pencil.
    const renameButton = page.getByRole('button', { name: 'Rename Plan the trip' });
    await renameButton.click();
    const renameDialog = page.getByRole('dialog', { name: 'Rename chat' });
    await renameDialog.waitFor();
    await expect.poll(() => activeId(page), SETTLE).toBe('rename-chat-title');
    expect(await page.getByLabel('New title').inputValue()).toBe('Plan the trip');
    await page.getByLabel('New title').fill('Holiday');
    expect(await shootAndScan(page, 'webui-chat-dialogs')).toEqual([]);
    await page.keyboard.press('Enter');
    await expect.poll(() => renameDialog.isVisible(), SETTLE).toBe(false);
    await rows.filter({ hasText: 'Holiday' }).waitFor();
    await expect.poll(() => focused(page), SETTLE).toBe('button: Rename Holiday');
    // Stored as nanobot's title override, so every client shows it.
    const sidebar = (await (
      await fetch(`${run.url}/api/webui/sidebar-state`, { headers: { authorization: `Bearer ${run.token}` } })
    ).json()) as { title_overrides: Record<string, string> };
    expect(Object.values(sidebar.title_overrides)).toEqual(['Holiday']);

    // Escape cancels a delete: nothing is gone, focus is back on the bin.
    await page.getByRole('button', { name: 'Delete Holiday' }).click();
    const deleteDialog = page.getByRole('dialog', { name: 'Delete chat' });
    await deleteDialog.waitFor();
    expect(await deleteDialog.textContent()).toContain('Delete “Holiday”? This cannot be undone.');
    await page.keyboard.press('Escape');
    await expect.poll(() => deleteDialog.isVisible(), SETTLE).toBe(false);
    await expect.poll(() => focused(page), SETTLE).toBe('button: Delete Holiday');
    expect(await rows.count()).toBe(2);

    // The chat with an automation: the gateway asks first, the dialog says so, the second yes deletes both.
    await page.getByRole('button', { name: 'Delete Remind me to stretch' }).click();
    await deleteDialog.waitFor();
    await deleteDialog.getByRole('button', { name: 'Delete', exact: true }).click();
    await deleteDialog.getByText('This chat has 1 automation(s). Delete them with the chat?').waitFor();
    expect(await rows.count()).toBe(2);
    await deleteDialog.getByRole('button', { name: 'Delete chat and automations' }).click();
    await expect.poll(() => rows.count(), SETTLE).toBe(1);
    await expect.poll(() => deleteDialog.isVisible(), SETTLE).toBe(false);
    await expect.poll(() => focused(page), SETTLE).toBe('button: New chat');
    const jobs = (await (
      await fetch(`${run.url}/api/webui/automations`, { headers: { authorization: `Bearer ${run.token}` } })
    ).json()) as { jobs: unknown[] };
    expect(jobs.jobs).toEqual([]);

    // Deleting the last one, with the mouse.
    await page.getByRole('button', { name: 'Delete Holiday' }).click();
    await deleteDialog.getByRole('button', { name: 'Delete', exact: true }).click();
    await expect.poll(() => page.locator('.sessions .session-open').count(), SETTLE).toBe(0);
    expect(nativeDialogs).toEqual([]);
    await context.close();
  }, 120_000);

  it('a failed turn is an error with its class, the fix and a way out; "Ask again" answers it', async () => {
    const { run, context, page } = await open([
      { status: 401, errorBody: { error: { message: 'Incorrect API key provided', type: 'invalid_request_error' } } },
      { text: 'Now it works.' },
    ]);
    await page.fill('#composer-input', 'hello?');
    await page.keyboard.press('Enter');
    const error = page.getByRole('alert').filter({ hasText: 'Incorrect API key provided' });
    await error.waitFor();
    await expect.poll(() => page.getByRole('button', { name: 'Send' }).isVisible(), SETTLE).toBe(true);
    // Its class as a title, the provider's words, the setting to fix as code, the page where it is fixed.
    expect(await error.locator('.note-title').textContent()).toBe('The provider did not accept the API key');
    expect(await error.locator('.note-hint').textContent()).toMatch(/^How to fix: Check providers\.custom\.apiKey/);
    expect(await error.locator('.note-hint code').first().textContent()).toBe('providers.custom.apiKey');
    expect(await error.getByRole('link', { name: 'Open model settings' }).getAttribute('href')).toBe(
      '#settings/models',
    );
    // One way to ask again: the note's button (the answer's own row has none beside it).
    expect(await page.getByRole('button', { name: 'Ask again' }).count()).toBe(1);
    expect(await shootAndScan(page, 'webui-chat-errors')).toEqual([]);
    // Dark theme too: the error's colours keep their contrast.
    await page.getByRole('button', { name: 'Use the dark theme' }).click();
    expect(await shootAndScan(page, 'webui-chat-errors-dark')).toEqual([]);
    await page.getByRole('button', { name: 'Ask again' }).click();
    await page.locator('[data-testid="assistant-message"]', { hasText: 'Now it works.' }).waitFor();
    expect(await page.locator('[data-testid="user-message"]', { hasText: 'hello?' }).count()).toBe(2);
    expect(JSON.stringify(run.fake.requests.at(-1)?.body.messages)).toContain('hello?');
    // The error is no longer the last answer: it offers no second way to ask again.
    await expect.poll(() => page.getByRole('button', { name: 'Ask again' }).count(), SETTLE).toBe(1);
    expect(await page.getByRole('alert').filter({ hasText: 'Incorrect API key' }).getByRole('button').count()).toBe(0);
    await context.close();
  }, 120_000);

  it('copies a question and an answer, asks the last question again, and edits a question in a fork', async () => {
    const { run, context, page } = await open([
      { text: 'Paris is the capital.' },
      { text: 'Lyon is big.' },
      { text: 'Again: Lyon is big.' },
      { text: 'Marseille is by the sea.' },
    ]);
    await say(page, 'Capital of France?', 'Paris is the capital.');
    await say(page, 'A big city?', 'Lyon is big.');
    const clipboard = () =>
      page.evaluate(() =>
        (
          globalThis as unknown as { navigator: { clipboard: { readText(): Promise<string> } } }
        ).navigator.clipboard.readText(),
      );

    await page.getByRole('button', { name: 'Copy answer' }).last().click();
    await expect.poll(clipboard, SETTLE).toBe('Lyon is big.');
    await page.locator('.msg-copied', { hasText: 'Copied' }).waitFor();
    await page.getByRole('button', { name: 'Copy message' }).first().click();
    await expect.poll(clipboard, SETTLE).toBe('Capital of France?');

    // Ask again: only the last answer offers it; the question goes again and a new answer comes.
    expect(await page.getByRole('button', { name: 'Ask again' }).count()).toBe(1);
    await page.getByRole('button', { name: 'Ask again' }).click();
    await page.locator('[data-testid="assistant-message"]', { hasText: 'Again: Lyon is big.' }).waitFor();
    expect(await page.locator('[data-testid="user-message"]', { hasText: 'A big city?' }).count()).toBe(2);
    await expect.poll(() => page.getByRole('button', { name: 'Ask again' }).count(), SETTLE).toBe(1);
    expect(await shootAndScan(page, 'webui-chat-actions')).toEqual([]);

    // Edit the second question, with the keyboard: a fork up to just before it opens, the question in the box.
    await page.getByRole('button', { name: 'Edit this question' }).nth(1).focus();
    await page.keyboard.press('Enter');
    await expect.poll(() => page.locator('#composer-input').inputValue(), SETTLE).toBe('A big city?');
    await expect.poll(() => activeId(page), SETTLE).toBe('composer-input');
    await page.locator('[data-testid="assistant-message"]', { hasText: 'Paris is the capital.' }).waitFor();
    expect(await page.locator('[data-testid="assistant-message"]', { hasText: 'Lyon' }).count()).toBe(0);
    await page.locator('.sessions .session-open', { hasText: 'Capital of France? (edited)' }).waitFor();
    await page.fill('#composer-input', 'A city by the sea?');
    await page.keyboard.press('Enter');
    await page.locator('[data-testid="assistant-message"]', { hasText: 'Marseille is by the sea.' }).waitFor();
    // The model saw the history before the edited question, and not the question it replaced.
    const asked = JSON.stringify(run.fake.requests.at(-1)?.body.messages);
    expect(asked).toContain('Capital of France?');
    expect(asked).toContain('A city by the sea?');
    expect(asked).not.toContain('A big city?');
    // The original chat is as it was.
    await page.locator('.sessions .session-open', { hasText: /^Capital of France\?now/ }).click();
    await page.locator('[data-testid="assistant-message"]', { hasText: 'Again: Lyon is big.' }).waitFor();
    await context.close();
  }, 120_000);

  it('searches the chat list by title and by the first message, from the keyboard, at both sizes', async () => {
    const { context, page } = await open([{ text: 'Trip planned.' }, { text: 'Milk noted.' }, { text: 'Tax filed.' }]);
    await say(page, 'Plan the trip to Lisbon', 'Trip planned.');
    for (const [question, answer] of [
      ['Buy milk and eggs', 'Milk noted.'],
      ['File my taxes', 'Tax filed.'],
    ] as const) {
      await page.getByRole('button', { name: 'New chat' }).click();
      await page.getByRole('heading', { name: 'How can I help?' }).waitFor();
      await say(page, question, answer);
    }
    const rows = page.locator('.sessions .session-open');
    await expect.poll(() => rows.count(), SETTLE).toBe(3);
    // A renamed chat is found by its new title and still by its first message (the gateway's preview).
    await page.getByRole('button', { name: 'Rename Buy milk and eggs' }).click();
    await page.getByLabel('New title').fill('Groceries');
    await page.keyboard.press('Enter');
    await rows.filter({ hasText: 'Groceries' }).waitFor();

    // From the New chat button, one Tab reaches the search box.
    await page.getByRole('button', { name: 'New chat' }).focus();
    await page.keyboard.press('Tab');
    expect(await activeId(page)).toBe('chat-search');
    await page.keyboard.type('MILK');
    await expect.poll(() => rows.allTextContents(), SETTLE).toEqual([expect.stringMatching(/^Groceries/)]);
    expect(await page.getByRole('status').filter({ hasText: 'Matching chats: 1' }).count()).toBe(1);
    expect(await page.getByRole('searchbox', { name: 'Search chats' }).inputValue()).toBe('MILK');
    await page.keyboard.press('Control+A');
    await page.keyboard.type('trip');
    await expect
      .poll(() => rows.allTextContents(), SETTLE)
      .toEqual([expect.stringMatching(/^Plan the trip to Lisbon/)]);
    const found = await shootAndScan(page, 'webui-chat-search');
    // (The phone-size shot hid the chat list, and focus with it.)
    await page.getByRole('searchbox', { name: 'Search chats' }).click();
    await page.keyboard.press('Control+A');
    await page.keyboard.type('nothing like this');
    await page.getByText('No chat matches “nothing like this”').waitFor();
    expect(await rows.count()).toBe(0);
    // Escape empties the search: every chat is back.
    await page.keyboard.press('Escape');
    await expect.poll(() => rows.count(), SETTLE).toBe(3);

    // On a phone, in the drawer: Escape empties the search first and leaves the drawer open.
    await page.setViewportSize(PHONE);
    await page.getByRole('button', { name: 'Open the chat list' }).click();
    const drawer = page.locator('nav.sidebar');
    await expect.poll(() => drawer.getAttribute('class'), SETTLE).toBe('sidebar open');
    await page.getByRole('searchbox', { name: 'Search chats' }).fill('tax');
    await expect.poll(() => rows.allTextContents(), SETTLE).toEqual([expect.stringMatching(/^File my taxes/)]);
    await page.screenshot({ path: join(ARTIFACTS, 'webui-chat-search-phone.png') });
    found.push(...(await a11yFaults(page, 'chat search, phone drawer')));
    await page.keyboard.press('Escape');
    await expect.poll(() => rows.count(), SETTLE).toBe(3);
    expect(await drawer.getAttribute('class')).toBe('sidebar open');
    await page.keyboard.press('Escape');
    await expect.poll(() => drawer.isVisible(), SETTLE).toBe(false);
    expect(found).toEqual([]);
    await context.close();
  }, 120_000);

  it('offers the gateway’s slash commands with descriptions while the message starts with /', async () => {
    const { run, context, page } = await open([]);
    const listed = (await (
      await fetch(`${run.url}/api/commands`, { headers: { authorization: `Bearer ${run.token}` } })
    ).json()) as { commands: { command: string; description: string; accepts_args: boolean; arg_hint: string }[] };
    const withArgs = listed.commands.find((c) => c.accepts_args);
    expect(withArgs).toBeDefined();
    const box = page.locator('#composer-input');
    const palette = page.getByRole('listbox', { name: 'Commands' });
    const options = palette.getByRole('option');

    await box.focus();
    await page.keyboard.type('/');
    await palette.waitFor();
    expect(await options.count()).toBe(listed.commands.length);
    const help = options.filter({ hasText: '/help' });
    expect(await help.textContent()).toContain('show this help');
    // The arrows move the choice; the focus stays in the message box, which names the chosen option.
    expect(await box.getAttribute('aria-activedescendant')).toBe('slash-option-0');
    await page.keyboard.press('ArrowDown');
    expect(await box.getAttribute('aria-activedescendant')).toBe('slash-option-1');
    expect(await options.nth(1).getAttribute('aria-selected')).toBe('true');
    await page.keyboard.press('ArrowUp');
    await page.keyboard.press('ArrowUp');
    expect(await box.getAttribute('aria-activedescendant')).toBe(`slash-option-${listed.commands.length - 1}`);
    expect(await activeId(page)).toBe('composer-input');
    await page.keyboard.type('he');
    await expect.poll(() => options.first().textContent(), SETTLE).toMatch(/^\/help/);
    expect(await shootAndScan(page, 'webui-chat-palette')).toEqual([]);
    await page.getByRole('button', { name: 'Use the dark theme' }).click();
    await box.focus();
    expect(await shootAndScan(page, 'webui-chat-palette-dark')).toEqual([]);

    // Escape closes it (the text stays); typing again opens it.
    await box.focus();
    await page.keyboard.press('Escape');
    await expect.poll(() => palette.count(), SETTLE).toBe(0);
    expect(await box.inputValue()).toBe('/he');
    await page.keyboard.type('l');
    await palette.waitFor();
    // Enter runs a command that takes no arguments: /help answers, the box is empty again.
    await page.keyboard.press('Enter');
    await page.locator('[data-testid="plain-text"]', { hasText: '/help — show this help' }).waitFor();
    expect(await box.inputValue()).toBe('');

    // Tab fills in a command that takes arguments, ready for them (and the palette steps aside).
    const name = withArgs?.command ?? '';
    await page.keyboard.type(name.slice(0, 3));
    await expect.poll(() => options.first().textContent(), SETTLE).toContain(name);
    const index = await options.evaluateAll(
      (items, wanted) => items.findIndex((item) => item.textContent?.startsWith(wanted as string)),
      name,
    );
    for (let i = 0; i < index; i += 1) await page.keyboard.press('ArrowDown');
    await page.keyboard.press('Tab');
    expect(await box.inputValue()).toBe(`${name} `);
    await expect.poll(() => palette.count(), SETTLE).toBe(0);
    expect(await activeId(page)).toBe('composer-input');

    // A name no command has says so.
    await box.fill('/zzz');
    await page.getByText('No command by that name.').waitFor();
    await context.close();
  }, 120_000);

  it('shows a picture the agent sent as a thumbnail that opens full size in a lightbox, and again after a reload', async () => {
    const { run, context, page } = await open([
      { toolCalls: [{ name: 'message', arguments: { content: 'Here is a chart.', media: ['chart.png'] } }] },
      { text: 'Sent you the chart.' },
    ]);
    writeFileSync(join(run.workspace, 'chart.png'), stripesPng(160, 100));
    await say(page, 'Show me the chart', 'Sent you the chart.');
    const thumb = page.getByRole('button', { name: 'Open chart.png full size' });
    await thumb.waitFor();
    const loaded = (image: ReturnType<Page['locator']>) =>
      image.evaluate((img) => {
        const picture = img as unknown as { complete: boolean; naturalWidth: number };
        return picture.complete ? picture.naturalWidth : 0;
      });
    await expect.poll(() => loaded(thumb.locator('img')), SETTLE).toBe(160);

    // The keyboard opens it; focus goes into the dialog; Escape closes it and focus is back on the thumbnail.
    await thumb.focus();
    await page.keyboard.press('Enter');
    const lightbox = page.getByRole('dialog', { name: 'chart.png' });
    await lightbox.waitFor();
    await expect.poll(() => loaded(lightbox.locator('img')), SETTLE).toBe(160);
    expect(await lightbox.getByRole('link', { name: 'Download' }).getAttribute('download')).toBe('chart.png');
    await expect.poll(() => focused(page), SETTLE).toBe('a: Download');
    expect(await shootAndScan(page, 'webui-chat-lightbox')).toEqual([]);
    await page.keyboard.press('Escape');
    await expect.poll(() => lightbox.count(), SETTLE).toBe(0);
    await expect.poll(() => focused(page), SETTLE).toBe('button: Open chart.png full size');

    // The close button, and a click beside the picture, close it too.
    await thumb.click();
    await lightbox.getByRole('button', { name: 'Close the picture' }).click();
    await expect.poll(() => lightbox.count(), SETTLE).toBe(0);
    await thumb.click();
    await lightbox.waitFor();
    await page.mouse.click(4, 4);
    await expect.poll(() => lightbox.count(), SETTLE).toBe(0);

    // A reload shows it again, from the chat's history.
    await page.reload();
    await expect.poll(() => loaded(thumb.locator('img')), { timeout: 30_000 }).toBe(160);
    await context.close();
  }, 120_000);

  it('shows what an edit changed in its tool card, and the file as it is now on request', async () => {
    const { run, context, page } = await open([
      { toolCalls: [{ name: 'write_file', arguments: { path: 'notes/plan.md', content: 'line one\nline two\n' } }] },
      {
        toolCalls: [
          {
            name: 'edit_file',
            arguments: { path: 'notes/plan.md', old_text: 'line two', new_text: 'line 2\nline three' },
          },
        ],
      },
      { text: 'Edited the plan.' },
    ]);
    await say(page, 'Write and fix my plan', 'Edited the plan.');
    const cards = page.locator('[data-testid="tool-card"]');
    await expect.poll(() => cards.count(), SETTLE).toBe(2);
    const edit = cards.filter({ hasText: 'edit_file' });
    await edit.locator('summary').click();
    const diff = edit.locator('[data-testid="edit-diff"]');
    expect(await diff.locator('figcaption').textContent()).toBe('notes/plan.md +2 −1 lines');
    expect(await diff.locator('del').allTextContents()).toEqual(['- line two\n']);
    expect(await diff.locator('ins').allTextContents()).toEqual(['+ line 2\n', '+ line three\n']);
    // The whole-file write shows everything it put in.
    const write = cards.filter({ hasText: 'write_file' });
    await write.locator('summary').click();
    expect(await write.locator('[data-testid="edit-diff"] ins').count()).toBe(2);

    // The file as it is now, from the gateway's file-preview (read inside the workspace only).
    await edit.getByRole('button', { name: 'Show notes/plan.md as it is now' }).click();
    const preview = edit.getByRole('region', { name: 'Contents of notes/plan.md' });
    await preview.waitFor();
    expect(await preview.textContent()).toBe('line one\nline 2\nline three\n');
    expect(readFileSync(join(run.workspace, 'notes', 'plan.md'), 'utf8')).toBe('line one\nline 2\nline three\n');
    // A long chat scrolls inside its own box: the page itself is never taller than the screen.
    const pageHeight = () =>
      page.evaluate(
        () =>
          (globalThis as unknown as { document: { documentElement: { scrollHeight: number } } }).document
            .documentElement.scrollHeight,
      );
    expect(await pageHeight()).toBe(DESKTOP.height);
    expect(await shootAndScan(page, 'webui-chat-diff')).toEqual([]);
    await page.getByRole('button', { name: 'Use the dark theme' }).click();
    expect(await shootAndScan(page, 'webui-chat-diff-dark')).toEqual([]);
    await context.close();
  }, 120_000);
});

/** A `width`×`height` PNG of coloured stripes (big enough to see in a screenshot), written by hand: no image library. */
function stripesPng(width: number, height: number): Buffer {
  const rows: Buffer[] = [];
  for (let y = 0; y < height; y += 1) {
    const row = Buffer.alloc(1 + width * 3);
    for (let x = 0; x < width; x += 1) {
      const band = Math.floor((x / width) * 4);
      const colour = [
        [79, 70, 229],
        [23, 122, 65],
        [194, 53, 43],
        [234, 179, 8],
      ][band] ?? [0, 0, 0];
      row.set(colour, 1 + x * 3);
    }
    rows.push(row);
  }
  const chunk = (type: string, data: Buffer) => {
    const body = Buffer.concat([Buffer.from(type, 'ascii'), data]);
    const out = Buffer.alloc(8 + data.length + 4);
    out.writeUInt32BE(data.length, 0);
    body.copy(out, 4);
    out.writeUInt32BE(crc32(body), 8 + data.length);
    return out;
  };
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header.set([8, 2, 0, 0, 0], 8);
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', header),
    chunk('IDAT', deflateSync(Buffer.concat(rows))),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}

function crc32(data: Buffer): number {
  let crc = 0xffffffff;
  for (const byte of data) {
    crc ^= byte;
    for (let k = 0; k < 8; k += 1) crc = crc & 1 ? (crc >>> 1) ^ 0xedb88320 : crc >>> 1;
  }
  return (crc ^ 0xffffffff) >>> 0;
}
