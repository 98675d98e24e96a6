/**
 * Settings › Automations in Chromium against a real gateway running a cron service and the loopback fake LLM: the
 * user adds a job to the open chat, sees it listed, runs it now and sees it fire (its last run turns "Done" and the
 * model's answer appears in the chat), pauses and resumes it, edits it into a cron job in another timezone, adds a
 * one-time job, deletes through the dialog, and sets the heartbeat and HEARTBEAT.md. What lands on disk is what the
 * CLI writes: `nanobot cron add` on the same home makes the twin job (the gateway merges it into jobs.json and the
 * two are compared), and the heartbeat block the UI wrote equals the one `nanobot onboard` completes on a twin home.
 * Both themes are screenshotted at desktop and phone size with no accessibility faults.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWebUiGateway, type WebUiGateway } from '../channels/websocket/gateway-helpers.js';
import { runCli, tempHome } from '../cli/cli-helpers.js';
import type { FakeScriptStep } from '../helpers/fake-llm.js';
import { essence, type Job } from '../webui-api/automations-helpers.js';
import { DESKTOP, hasChromium, launchChromium, openWebUi } from './chromium.js';
import { goToSettings, shootAndScan } from './settings-page.js';

const ANSWER = 'Time to stretch: stand up and reach for the ceiling.';
/** The model answers the cron task with ANSWER and anything else (the first chat turn, titles…) with a greeting. */
const reply: FakeScriptStep = (body) =>
  JSON.stringify(body.messages ?? '').includes('Remind me to stretch') ? { text: ANSWER } : { text: 'Hi! Ready.' };

type Json = Record<string, unknown>;
const readJson = (path: string) => JSON.parse(readFileSync(path, 'utf8')) as Json;

describe.skipIf(!hasChromium)('Settings › Automations in Chromium', () => {
  let run: WebUiGateway;
  let browser: Browser;
  let configBefore: string;

  beforeAll(async () => {
    run = await startWebUiGateway(
      Array.from({ length: 20 }, () => reply),
      {},
      undefined,
      {},
      { cron: true },
    );
    configBefore = readFileSync(join(run.dataDir, 'config.json'), 'utf8');
    browser = await launchChromium();
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await run?.close();
  });

  const jobs = () => {
    try {
      return (readJson(join(run.workspace, 'cron', 'jobs.json')) as { jobs: Job[] }).jobs;
    } catch {
      return [];
    }
  };
  const job = (name: string) => jobs().find((candidate) => candidate.name === name);
  const row = (page: Page, name: string): Locator =>
    page.locator('.automations-job').filter({ has: page.getByRole('heading', { name, level: 4, exact: true }) });

  it('adds a job to the chat, runs it, pauses, edits, deletes it, and sets the heartbeat', async () => {
    const context = await browser.newContext({ locale: 'en-US', reducedMotion: 'reduce' });
    const page = await openWebUi(context, run.url, run.token);
    await page.fill('#composer-input', 'hello');
    await page.getByRole('button', { name: 'Send' }).click();
    await page.locator('[data-testid="assistant-message"]', { hasText: 'Hi! Ready.' }).waitFor();
    await goToSettings(page, 'automations');
    const thisChat = page.getByRole('region', { name: 'This chat' });
    await thisChat.getByText('No jobs in this chat yet.').waitFor();

    // Add: every hour, an agent task (the default), in this chat.
    await thisChat.getByRole('button', { name: 'Add a job' }).click();
    const form = page.getByRole('form', { name: 'New job in this chat' });
    await form.getByLabel('Name', { exact: true }).fill('stretch break');
    await form.getByLabel('Message', { exact: true }).fill('Remind me to stretch');
    await form.getByLabel('Every', { exact: true }).fill('1');
    await form.getByLabel('Unit', { exact: true }).selectOption('hour');
    await form.getByRole('button', { name: 'Add', exact: true }).click();
    const listed = row(page, 'stretch break');
    await listed.getByText('Every 1 hour').waitFor();
    await expect.poll(() => listed.getByTestId('automation-last').textContent()).toBe('Not yet');
    const added = job('stretch break') as Job;
    const payload = added.payload as { sessionKey: string; originChatId: string };
    expect(payload.sessionKey).toBe(`websocket:${payload.originChatId}`);

    // The same job made by the CLI on this home: the gateway merges it into jobs.json; the two are the same job.
    const cli = await runCli(
      [
        'cron',
        'add',
        '--name',
        'stretch break',
        '--message',
        'Remind me to stretch',
        '--every',
        '1h',
        '--channel',
        'websocket',
        '--chat-id',
        payload.originChatId,
        '--agent',
      ],
      run.home,
    );
    expect(cli.code, cli.stderr).toBe(0);
    await expect.poll(() => jobs().filter((candidate) => candidate.name === 'stretch break').length).toBe(2);
    const [mine, theirs] = jobs().filter((candidate) => candidate.name === 'stretch break') as [Job, Job];
    expect(essence(mine)).toEqual(essence(theirs));
    // The CLI's twin is removed again (by the CLI), so the page's list is the user's own.
    expect((await runCli(['cron', 'remove', theirs.id], run.home)).code).toBe(0);
    await expect.poll(() => jobs().length).toBe(1);

    // Run now: the run is recorded (the row says so) and the model's answer goes to this chat.
    await listed.getByRole('button', { name: 'Run now: stretch break' }).click();
    await page.getByText('“stretch break” is running.', { exact: false }).waitFor();
    await expect
      .poll(() => listed.getByTestId('automation-last').textContent(), { timeout: 30_000 })
      .toMatch(/^Done, /);
    expect(job('stretch break')?.state).toMatchObject({ lastStatus: 'ok' });

    // Pause and resume with the switch.
    await listed.getByText('Active', { exact: true }).click();
    await expect.poll(() => job('stretch break')?.enabled).toBe(false);
    await listed.getByText('Paused').waitFor();
    expect(await listed.getByRole('button', { name: 'Run now: stretch break' }).isDisabled()).toBe(true);
    await listed.getByText('Active', { exact: true }).click();
    await expect.poll(() => job('stretch break')?.enabled).toBe(true);

    // Edit: renamed, and a cron expression in Tokyo's time.
    await listed.getByRole('button', { name: 'Edit stretch break' }).click();
    const edit = page.getByRole('form', { name: 'Edit job' });
    await edit.getByLabel('Name', { exact: true }).fill('morning stretch');
    await edit.getByRole('radio', { name: 'Cron expression' }).check();
    await edit.getByRole('textbox', { name: 'Cron expression' }).fill('30 7 * * 1-5');
    await edit.getByLabel('Time zone', { exact: true }).selectOption('Asia/Tokyo');
    await edit.getByRole('button', { name: 'Save' }).click();
    const edited = row(page, 'morning stretch');
    await edited.getByText('(Asia/Tokyo)', { exact: false }).waitFor();
    expect(job('morning stretch')).toMatchObject({
      schedule: { kind: 'cron', expr: '30 7 * * 1-5', tz: 'Asia/Tokyo', atMs: null, everyMs: null },
      payload: { message: 'Remind me to stretch' },
    });

    // A one-time job at a wall time in Berlin: stored as the instant `cron add --at …+01:00` gives.
    await thisChat.getByRole('button', { name: 'Add a job' }).click();
    const once = page.getByRole('form', { name: 'New job in this chat' });
    await once.getByLabel('Name', { exact: true }).fill('dentist');
    await once.getByLabel('Message', { exact: true }).fill('Dentist at 10');
    await once.getByLabel('The message is sent as it is (a reminder)').check();
    await once.getByRole('radio', { name: 'Once' }).check();
    await once.getByLabel('Date and time', { exact: true }).fill('2030-01-02T09:30');
    await once.getByLabel('Time zone', { exact: true }).selectOption('Europe/Berlin');
    await once.getByRole('button', { name: 'Add', exact: true }).click();
    await row(page, 'dentist').waitFor();
    expect(job('dentist')).toMatchObject({
      schedule: { kind: 'at', atMs: Date.parse('2030-01-02T09:30:00+01:00') },
      deleteAfterRun: true,
      payload: { originMetadata: { nanobotTs: { reminder: true } } },
    });

    // Delete through the dialog: Cancel keeps it, Delete removes it.
    await row(page, 'dentist').getByRole('button', { name: 'Delete dentist' }).click();
    const dialog = page.getByRole('dialog', { name: 'Delete “dentist”?' });
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    expect(job('dentist')).toBeDefined();
    await row(page, 'dentist').getByRole('button', { name: 'Delete dentist' }).click();
    await dialog.getByRole('button', { name: 'Delete' }).click();
    await expect.poll(() => row(page, 'dentist').count()).toBe(0);
    expect(job('dentist')).toBeUndefined();

    // The heartbeat: on, every 10 minutes, keeping 4 messages; and its task list.
    const beat = page.getByRole('region', { name: 'Heartbeat' });
    await beat.getByText('Heartbeat on').click();
    await beat.getByLabel('Every (minutes)').fill('10');
    await beat.getByLabel('Messages it keeps').fill('4');
    await beat.getByRole('button', { name: 'Save heartbeat settings' }).click();
    // The running gateway takes the new heartbeat settings at once: no restart to ask for.
    await beat.getByText('Saved in config.json.').waitFor();
    expect(await beat.getByText('after a restart', { exact: false }).count()).toBe(0);
    const tasks = '# Heartbeat\n\n## Active Tasks\n\n- Check the build every morning\n';
    await beat.getByLabel('HEARTBEAT.md').fill(tasks);
    await beat.getByRole('button', { name: 'Save HEARTBEAT.md' }).click();
    await beat.getByText('HEARTBEAT.md saved.').waitFor();
    expect(readFileSync(join(run.workspace, 'HEARTBEAT.md'), 'utf8')).toBe(tasks);

    // Back in the chat, the job's answer is there.
    await page.getByRole('button', { name: 'Back to the chat' }).click();
    await page.locator('[data-testid="assistant-message"]', { hasText: ANSWER }).waitFor();
    await context.close();
  }, 180_000);

  it('writes the heartbeat into config.json exactly as the CLI does (`nanobot onboard` on a twin home)', async () => {
    const ours = readJson(join(run.dataDir, 'config.json')) as { gateway: { heartbeat: Json } };
    expect(ours.gateway.heartbeat).toEqual({ enabled: true, intervalS: 600, keepRecentMessages: 4 });
    // The twin: the same starting config with the heartbeat typed in by hand, completed by the CLI.
    const twin = tempHome();
    const twinWorkspace = join(twin, '.nanobot', 'workspace');
    mkdirSync(twinWorkspace, { recursive: true });
    const start = JSON.parse(configBefore.replaceAll(run.workspace, twinWorkspace)) as { gateway: Json };
    start.gateway.heartbeat = { enabled: true, intervalS: 600, keepRecentMessages: 4 };
    writeFileSync(join(twin, '.nanobot', 'config.json'), JSON.stringify(start, null, 2));
    const onboard = await runCli(['onboard'], twin);
    expect(onboard.code, onboard.stderr).toBe(0);
    const theirs = JSON.parse(
      readFileSync(join(twin, '.nanobot', 'config.json'), 'utf8').replaceAll(twinWorkspace, run.workspace),
    );
    expect(ours).toEqual(theirs);
  }, 60_000);

  it('looks right in both themes at desktop and phone size, with no accessibility faults', async () => {
    const faults: string[] = [];
    for (const colorScheme of ['light', 'dark'] as const) {
      const context = await browser.newContext({
        locale: 'en-US',
        viewport: DESKTOP,
        colorScheme,
        reducedMotion: 'reduce',
      });
      const page = await openWebUi(context, run.url, run.token);
      // The chat the jobs belong to, then its automations.
      await page.locator('.sessions .session-open', { hasText: 'hello' }).click();
      await page.locator('[data-testid="assistant-message"]', { hasText: ANSWER }).waitFor();
      await goToSettings(page, 'automations');
      await row(page, 'morning stretch').waitFor();
      expect(await page.getByRole('region', { name: 'This chat' }).getByText('morning stretch').count()).toBe(1);
      faults.push(...(await shootAndScan(page, `webui-settings-automations-${colorScheme}`)));
      // The settings column scrolls on its own: the heartbeat half of the page is its own picture.
      await page.getByRole('region', { name: 'Heartbeat' }).scrollIntoViewIfNeeded();
      faults.push(...(await shootAndScan(page, `webui-settings-automations-heartbeat-${colorScheme}`)));
      await page.getByRole('button', { name: 'Add a job' }).click();
      await page
        .getByRole('form', { name: 'New job in this chat' })
        .getByRole('radio', { name: 'Cron expression' })
        .check();
      faults.push(...(await shootAndScan(page, `webui-settings-automations-form-${colorScheme}`)));
      await context.close();
    }
    expect(faults).toEqual([]);
  }, 120_000);
});
