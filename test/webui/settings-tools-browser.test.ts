/**
 * Settings › Tools in Chromium against a real gateway (loopback fake LLM, a real stdio MCP server): the user picks a
 * web search provider and types its key (never shown back), changes the shell sandbox, the workspace restriction
 * and the SSRF whitelist (a confirmation first, since each loosens), and config.json is what a hand edit plus the
 * CLI's `nanobot onboard` writes on a twin home (the CLI has no command for these keys). Then an MCP server added by
 * its command is tested, its tools listed, the model calls one in the chat and its result shows in the tool card;
 * switching the tool off takes it away from the model; removing the server empties the list; one added by URL with a
 * header is saved and its failure to connect shown. Desktop and phone
 * screenshots in both themes, no accessibility faults.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWebUiGateway, type WebUiGateway } from '../channels/websocket/gateway-helpers.js';
import { editConfig, runCli, tempHome } from '../cli/cli-helpers.js';
import { SCRIPTED } from '../mcp/helpers.js';
import { hasChromium, launchChromium } from './chromium.js';
import { goToSettings, openSettings, shootAndScan } from './settings-page.js';

const SEARCH_KEY = 'BSA-browser-test-key-0123456789';
const WHITELIST = ['192.168.1.20', '10.0.0.0/8'];
type Json = Record<string, unknown>;

/** A switch is flipped as a user does it: a click on its label (the box itself is visually hidden). */
const flip = (control: Locator) => control.locator('xpath=ancestor::label[1]').click();

describe.skipIf(!hasChromium)('Settings › Tools in Chromium', () => {
  let run: WebUiGateway;
  let browser: Browser;
  let configPath: string;
  let initial: string;
  const config = () => JSON.parse(readFileSync(configPath, 'utf8')) as Json & { tools: Json & Record<string, Json> };

  beforeAll(async () => {
    run = await startWebUiGateway([
      { toolCalls: [{ name: 'mcp_fx_place', arguments: { at: { x: 1, y: 2 }, count: 3 } }] },
      { text: 'Placed it for you.' },
      { text: 'No tools needed.' },
    ]);
    configPath = join(run.dataDir, 'config.json');
    initial = readFileSync(configPath, 'utf8');
    browser = await launchChromium();
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await run?.close();
  });

  it('web search and tool safety: saved as a hand edit plus the CLI write them, the key never shown back', async () => {
    const { context, page } = await openSettings(browser, run, 'tools');
    await page.getByRole('heading', { name: 'Tools', level: 2 }).waitFor();

    await page.getByLabel('Search provider').selectOption('brave');
    await page.getByLabel('API key').fill(SEARCH_KEY);
    await page.getByLabel('Results per search').fill('7');
    await page.getByRole('button', { name: 'Save web search' }).click();
    await page.getByRole('status').filter({ hasText: 'Saved.' }).first().waitFor();
    expect(await page.getByLabel('API key').inputValue()).toBe('');
    expect(await page.content()).not.toContain(SEARCH_KEY);
    expect(config().tools.web).toMatchObject({ search: { provider: 'brave', apiKey: SEARCH_KEY, maxResults: 7 } });

    // Loosening asks first; Cancel saves nothing.
    await page.getByLabel('Shell sandbox').selectOption('none');
    const restrict = page.getByRole('switch', { name: 'Keep file and shell tools inside the workspace' });
    await flip(restrict);
    expect(await restrict.isChecked()).toBe(false);
    await page.getByLabel('Private addresses tools may reach').fill(WHITELIST.join('\n'));
    const before = readFileSync(configPath, 'utf8');
    await page.getByRole('button', { name: 'Save tool safety' }).click();
    const dialog = page.getByRole('dialog', { name: 'Loosen tool safety?' });
    await dialog.waitFor();
    const reasons = await dialog.locator('li').allTextContents();
    expect(reasons).toEqual([
      'read and write files outside the workspace',
      expect.stringContaining('weaker sandbox'),
      'reach 192.168.1.20, 10.0.0.0/8',
    ]);
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    expect(readFileSync(configPath, 'utf8')).toBe(before);

    await page.getByRole('button', { name: 'Save tool safety' }).click();
    await dialog.getByRole('button', { name: 'Loosen and save' }).click();
    // The page says so once the gateway has applied it (the web search's notice is the other one).
    await expect
      .poll(() => page.getByRole('status').filter({ hasText: 'Saved.' }).count(), { timeout: 20_000 })
      .toBe(2);
    expect(config().tools).toMatchObject({
      restrictToWorkspace: false,
      ssrfWhitelist: WHITELIST,
      exec: { sandbox: 'none' },
    });
    // Applied without a restart: the gateway runs the new values.
    const live = run.gateway.loaded().config.tools;
    expect([live.restrictToWorkspace, live.exec.sandbox, live.ssrfWhitelist]).toEqual([false, 'none', WHITELIST]);

    // After a reload the page shows what is saved, the key only as its hint.
    await page.reload();
    await page.getByLabel('Search provider').waitFor();
    expect(await page.getByLabel('Search provider').inputValue()).toBe('brave');
    expect(await page.getByLabel('Shell sandbox').inputValue()).toBe('none');
    expect(await page.getByLabel('Private addresses tools may reach').inputValue()).toBe(WHITELIST.join('\n'));
    expect(await page.getByLabel('API key').inputValue()).toBe('');
    expect(await page.content()).not.toContain(SEARCH_KEY);
    await context.close();

    // The twin: the same values written by hand into the same starting file, then `nanobot onboard` (the CLI's
    // writer, which fills in the defaults as the WebUI's writer does).
    const twin = tempHome();
    const { mkdirSync } = await import('node:fs');
    mkdirSync(join(twin, '.nanobot'), { recursive: true });
    writeFileSync(join(twin, '.nanobot', 'config.json'), initial.split(run.home).join(twin));
    editConfig(twin, (raw) => {
      const tools = raw.tools as Json & { web: Json };
      tools.web.search = { provider: 'brave', apiKey: SEARCH_KEY, maxResults: 7 };
      tools.exec = { sandbox: 'none' };
      tools.restrictToWorkspace = false;
      tools.ssrfWhitelist = WHITELIST;
    });
    const onboard = await runCli(['onboard'], twin);
    expect(onboard.code, onboard.stderr).toBe(0);
    const theirs = JSON.parse(readFileSync(join(twin, '.nanobot', 'config.json'), 'utf8'));
    expect(JSON.parse(readFileSync(configPath, 'utf8').split(run.home).join(twin))).toEqual(theirs);
  }, 120_000);

  it('MCP: add by command, test, see its tools, the model calls one in the chat, switch it off, remove', async () => {
    const { context, page } = await openSettings(browser, run, 'tools');
    await page.getByRole('heading', { name: 'MCP servers', level: 3 }).waitFor();
    await page.getByText('No MCP servers yet.', { exact: false }).waitFor();

    await page.getByLabel('Name', { exact: true }).fill('fx');
    await page.getByLabel('Command', { exact: true }).fill(process.execPath);
    await page.getByLabel('Arguments').fill(SCRIPTED);
    await page.getByRole('button', { name: 'Add server', exact: true }).click();
    const card = page.getByTestId('mcp-server-fx');
    await card.getByText('Connected', { exact: true }).waitFor();
    expect(config().tools.mcpServers).toEqual({
      fx: {
        type: 'stdio',
        command: process.execPath,
        args: [SCRIPTED],
        env: {},
        headers: {},
        toolTimeout: 30,
        enabledTools: ['*'],
      },
    });

    await card.getByRole('button', { name: 'Test fx' }).click();
    await page
      .getByRole('status')
      .filter({ hasText: /fx connected and offers \d+ tools/ })
      .waitFor();
    const place = card.getByRole('switch', { name: 'mcp_fx_place' });
    expect(await place.isChecked()).toBe(true);
    expect(await card.getByRole('switch', { name: 'mcp_fx_structured' }).isChecked()).toBe(true);

    const faults = await shoot(page, 'light');
    faults.push(...(await dark()));

    // In the chat, the model calls the server's tool and its result shows in the tool card.
    await page.getByRole('button', { name: 'Back to the chat' }).click();
    await page.fill('#composer-input', 'Place the marker, please.');
    await page.getByRole('button', { name: 'Send' }).click();
    const answer = page.locator('[data-testid="assistant-message"]').last();
    await answer.getByText('Placed it for you.').waitFor({ timeout: 30_000 });
    const tool = answer.locator('[data-testid="tool-card"]');
    expect(await tool.locator('.tool-name').textContent()).toBe('mcp_fx_place');
    await tool.locator('summary').click();
    await tool.locator('.tool-pre', { hasText: 'placed at {"x":1,"y":2} x3' }).waitFor();

    // Switched off, the tool leaves the model's list (the switch stays, off, to turn it back on).
    await goToSettings(page, 'tools');
    await flip(card.getByRole('switch', { name: 'mcp_fx_place' }));
    // The switch turns off once the gateway has applied it (the MCP servers restarted with the new list).
    await expect
      .poll(() => card.getByRole('switch', { name: 'mcp_fx_place' }).isChecked(), { timeout: 20_000 })
      .toBe(false);
    const enabled = (config().tools.mcpServers as Record<string, { enabledTools: string[] }>).fx?.enabledTools ?? [];
    expect(enabled).not.toContain('mcp_fx_place');
    expect(enabled).toContain('mcp_fx_structured');
    expect(run.gateway.agent().tools.has('mcp_fx_place')).toBe(false);
    expect(run.gateway.agent().tools.has('mcp_fx_structured')).toBe(true);
    await page.getByRole('button', { name: 'Back to the chat' }).click();
    await page.fill('#composer-input', 'Anything else?');
    await page.getByRole('button', { name: 'Send' }).click();
    await page.getByText('No tools needed.').waitFor({ timeout: 30_000 });
    const offered = ((run.fake.requests.at(-1)?.body.tools ?? []) as { function: { name: string } }[]).map(
      (t) => t.function.name,
    );
    expect(offered).toContain('mcp_fx_structured');
    expect(offered).not.toContain('mcp_fx_place');

    // Remove, after a confirmation.
    await goToSettings(page, 'tools');
    await card.getByRole('button', { name: 'Remove fx' }).click();
    await page.getByRole('dialog', { name: 'Remove fx?' }).getByRole('button', { name: 'Remove' }).click();
    await page.getByText('No MCP servers yet.', { exact: false }).waitFor();
    expect(config().tools.mcpServers).toEqual({});

    // By URL, with a header: saved (the header's value never shown back), its failure to connect shown on its card.
    await page.getByRole('radio', { name: 'URL (HTTP)' }).check();
    await page.getByLabel('Name', { exact: true }).fill('remote');
    await page.getByLabel('URL', { exact: true }).fill('http://127.0.0.1:9/mcp');
    await page.getByLabel('Headers').fill('Authorization: Bearer hdr-secret-0123456789');
    await page.getByRole('button', { name: 'Add server', exact: true }).click();
    const remote = page.getByTestId('mcp-server-remote');
    await remote.getByText('Failed', { exact: true }).waitFor();
    expect((config().tools.mcpServers as Record<string, Json>).remote).toMatchObject({
      type: 'streamableHttp',
      url: 'http://127.0.0.1:9/mcp',
      headers: { Authorization: 'Bearer hdr-secret-0123456789' },
    });
    expect(await page.content()).not.toContain('hdr-secret-0123456789');
    await context.close();
    expect(faults).toEqual([]);
  }, 180_000);

  /** The page's top (web search, tool safety) and its MCP server, at both sizes: screenshots and faults. */
  async function shoot(page: Page, theme: 'light' | 'dark'): Promise<string[]> {
    await page.getByRole('heading', { name: 'Tools', level: 2 }).scrollIntoViewIfNeeded();
    const faults = await shootAndScan(page, `webui-settings-tools-${theme}`);
    await page.getByTestId('mcp-server-fx').scrollIntoViewIfNeeded();
    faults.push(...(await shootAndScan(page, `webui-settings-tools-mcp-${theme}`)));
    return faults;
  }

  /** The same page in the dark theme (the server as it now runs: its live tools listed). */
  async function dark(): Promise<string[]> {
    const opened = await openSettings(browser, run, 'tools', { colorScheme: 'dark' });
    await opened.page.getByTestId('mcp-server-fx').getByRole('switch', { name: 'mcp_fx_place' }).waitFor();
    const faults = await shoot(opened.page, 'dark');
    await opened.context.close();
    return faults;
  }
});
