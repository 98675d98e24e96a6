/**
 * Settings › Memory in Chromium against a real gateway: the user reads the memory files, opens a Dream commit's
 * diff, restores it (through the confirm dialog) and sees MEMORY.md change back on disk, then searches history and
 * sees the hit marked; desktop and phone screenshots in both themes with no accessibility faults.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWebUiGateway, type WebUiGateway } from '../channels/websocket/gateway-helpers.js';
import { DREAMT_MEMORY, FIRST_MEMORY, seedMemory } from '../webui-api/memory-helpers.js';
import { hasChromium, launchChromium } from './chromium.js';
import { openSettings, shootAndScan } from './settings-page.js';

const DREAM_TITLE = 'dream: remember the move to Berlin';

describe.skipIf(!hasChromium)('Settings › Memory in Chromium', () => {
  let run: WebUiGateway;
  let browser: Browser;

  beforeAll(async () => {
    run = await startWebUiGateway();
    await seedMemory(run.workspace);
    browser = await launchChromium();
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await run?.close();
  });

  const memoryOnDisk = () => readFileSync(join(run.workspace, 'memory', 'MEMORY.md'), 'utf8');
  const dreamRow = (page: Page) =>
    page.getByTestId('memory-log').getByRole('listitem').filter({ hasText: DREAM_TITLE });

  it('reads the files, opens a commit’s diff, restores it and sees the file change back on disk', async () => {
    const { context, page } = await openSettings(browser, run, 'memory');
    await page.getByRole('heading', { name: 'Memory', level: 2 }).waitFor();
    const file = page.getByTestId('memory-file');
    // MEMORY.md first, rendered: the list item Dream added is there.
    await file.getByRole('listitem').filter({ hasText: 'Lives in Berlin since May' }).waitFor();
    await page.getByRole('button', { name: 'USER.md', exact: true }).click();
    expect(await page.getByRole('button', { name: 'USER.md', exact: true }).getAttribute('aria-pressed')).toBe('true');
    await file.getByText('Timezone: Europe/Berlin').waitFor();
    await page.getByRole('button', { name: 'SOUL.md', exact: true }).click();
    await file.locator('strong', { hasText: 'calm' }).waitFor();

    const show = dreamRow(page).getByRole('button', { name: 'Show changes' });
    expect(await show.getAttribute('aria-expanded')).toBe('false');
    await show.click();
    const diff = dreamRow(page).getByTestId('memory-diff');
    await diff.getByText('+- Lives in Berlin since May').waitFor();
    const hide = dreamRow(page).getByRole('button', { name: 'Hide changes' });
    expect(await hide.getAttribute('aria-expanded')).toBe('true');
    expect(await diff.getByText('memory/MEMORY.md', { exact: true }).count()).toBe(1);
    expect(await diff.locator('.memory-diff-add').count()).toBeGreaterThan(0);

    // Cancelling the question changes nothing.
    const restore = page.getByRole('button', { name: `Restore the files as they were before “${DREAM_TITLE}”` });
    await restore.click();
    const dialog = page.getByRole('dialog', { name: 'Undo this change?' });
    await dialog.waitFor();
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    await dialog.waitFor({ state: 'hidden' });
    expect(memoryOnDisk()).toBe(DREAMT_MEMORY);

    await restore.click();
    await dialog.getByRole('button', { name: 'Restore' }).click();
    await page.getByRole('status').filter({ hasText: 'Restored memory/MEMORY.md' }).waitFor();
    await expect.poll(memoryOnDisk).toBe(FIRST_MEMORY);
    // The log now starts with the restore, and the file shown is the restored one.
    await page.getByTestId('memory-log').getByRole('listitem').first().filter({ hasText: 'restore:' }).waitFor();
    await page.getByRole('button', { name: 'MEMORY.md', exact: true }).click();
    await file.getByText('garden-bot: waters the tomatoes').waitFor();
    expect(await file.getByText('Lives in Berlin since May').count()).toBe(0);
    await context.close();
  }, 90_000);

  it('searches history and sees the hit; both themes at both sizes have no accessibility faults', async () => {
    const faults: string[] = [];
    for (const colorScheme of ['light', 'dark'] as const) {
      const { context, page } = await openSettings(browser, run, 'memory', { colorScheme });
      const history = page.getByTestId('memory-history');
      await history.getByRole('listitem').first().waitFor();
      expect(await history.getByRole('listitem').count()).toBe(3);
      await page.getByRole('textbox', { name: 'Search for' }).fill('tomatoes');
      await page.getByRole('button', { name: 'Search', exact: true }).click();
      await page.getByText('Matching entries: 1 of 3').waitFor();
      expect(await history.getByRole('listitem').count()).toBe(1);
      expect(await history.locator('mark').textContent()).toBe('tomatoes');
      expect(await history.textContent()).toContain('websocket:c1');
      await dreamRow(page).getByRole('button', { name: 'Show changes' }).click();
      await dreamRow(page).getByTestId('memory-diff').waitFor();
      faults.push(...(await shootAndScan(page, `webui-settings-memory-${colorScheme}`)));
      await context.close();
    }
    expect(faults).toEqual([]);
  }, 120_000);
});
