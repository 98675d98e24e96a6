import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runAsCronJob } from '../../src/cron/context.js';
import { createCronTool } from '../../src/tools/cron.js';
import { makeHarness } from '../cron/helpers.js';
import { makeContext, textOf } from './helpers.js';

function setup(timezone = 'Europe/Berlin') {
  const harness = makeHarness('2026-03-27T12:00:00Z', { timezone });
  const tool = createCronTool({ service: harness.service, timezone });
  const ctx = makeContext({ channel: 'telegram', chatId: '42', sessionKey: 'telegram:42' });
  return { ...harness, tool, ctx };
}

describe('cron tool', () => {
  it('adds a plain reminder bound to the current chat, delivered without the model', async () => {
    const { tool, ctx, service } = setup();
    const result = await tool.execute({ action: 'add', message: 'Drink water', every_seconds: 3600 }, ctx);
    expect(result.isError).toBeUndefined();
    expect(textOf(result)).toMatch(
      /^Scheduled reminder [0-9a-f]{8} 'Drink water': every hour; next run 2026-03-27 14:00/,
    );
    const [job] = await service.list();
    // nanobot's fields and kind (every user job is an agent_turn); the reminder flag is ours, in originMetadata.
    expect(job?.payload).toEqual({
      kind: 'agent_turn',
      message: 'Drink water',
      deliver: false,
      channel: null,
      to: null,
      channelMeta: {},
      sessionKey: 'telegram:42',
      originChannel: 'telegram',
      originChatId: '42',
      originMetadata: { nanobotTs: { reminder: true } },
    });
  });

  it('adds agent tasks with deliver=agent, and cron jobs in the agent timezone unless tz is given', async () => {
    const { tool, ctx, service } = setup();
    await tool.execute(
      { action: 'add', name: 'news', message: 'Summarise HN', cron_expr: '0 9 * * *', deliver: 'agent' },
      ctx,
    );
    await tool.execute(
      { action: 'add', name: 'ny', message: 'hi', cron_expr: '0 9 * * *', tz: 'America/New_York' },
      ctx,
    );
    const jobs = Object.fromEntries((await service.list()).map((job) => [job.name, job]));
    expect(jobs.news?.payload.kind).toBe('agent_turn');
    expect(jobs.news?.payload.originMetadata).toEqual({});
    expect(jobs.news?.schedule).toMatchObject({ kind: 'cron', expr: '0 9 * * *', tz: 'Europe/Berlin' });
    expect(new Date(jobs.news!.state.nextRunAtMs!).toISOString()).toBe('2026-03-28T08:00:00.000Z');
    expect(jobs.ny?.schedule.tz).toBe('America/New_York');
  });

  it('reads naive at-times in the agent timezone and makes them self-deleting', async () => {
    const { tool, ctx, service } = setup();
    const result = await tool.execute({ action: 'add', message: 'Call Anna', at: '2026-03-29T09:00' }, ctx);
    expect(textOf(result)).toContain('once at 2026-03-29 09:00 (Europe/Berlin)');
    const [job] = await service.list();
    expect(job).toMatchObject({
      deleteAfterRun: true,
      schedule: { kind: 'at', atMs: Date.parse('2026-03-29T07:00:00Z') },
    });
  });

  it('refuses to add inside a cron run and without a chat', async () => {
    const { tool, ctx, service } = setup();
    const inCron = await tool.execute(
      { action: 'add', message: 'x', every_seconds: 60 },
      makeContext({ channel: 'telegram', chatId: '42', sessionKey: 'cron:abcd1234' }),
    );
    expect(inCron.isError).toBe(true);
    expect(textOf(inCron)).toMatch(/inside a cron run/);

    const job = await service.add({
      name: 'outer',
      schedule: { kind: 'every', everyMs: 60_000 },
      payload: { message: 'x', sessionKey: 'telegram:42', originChannel: 'telegram', originChatId: '42' },
    });
    const nested = await runAsCronJob(job, () => tool.execute({ action: 'add', message: 'y', every_seconds: 60 }, ctx));
    expect(textOf(nested)).toMatch(/inside a cron run/);

    const noChat = await tool.execute({ action: 'add', message: 'x', every_seconds: 60 }, makeContext());
    expect(textOf(noChat)).toMatch(/only be added from a chat/);
    const fromTerminal = await tool.execute(
      { action: 'add', message: 'x', every_seconds: 60 },
      makeContext({ channel: 'cli', chatId: 'direct', sessionKey: 'cli:direct' }),
    );
    expect(textOf(fromTerminal)).toMatch(/cannot reach this terminal chat/);
    expect((await service.list()).map((entry) => entry.name)).toEqual(['outer']);
  });

  it('rejects bad schedules with a clear message and writes nothing', async () => {
    const { tool, ctx, storePath, workspace } = setup();
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [{ cron_expr: '0 9 * *' }, /Invalid cron expression '0 9 \* \*'.*5 fields/],
      [{ cron_expr: '0 9 * * *', tz: 'Mars/Base' }, /Unknown timezone 'Mars\/Base'/],
      [{ every_seconds: 60, cron_expr: '0 9 * * *' }, /exactly one of every_seconds, cron_expr or at/],
      [{}, /exactly one of/],
      [{ every_seconds: 60, tz: 'UTC' }, /tz only applies to cron_expr/],
      [{ at: 'next tuesday' }, /Invalid time 'next tuesday'/],
      [{ at: '2020-01-01T00:00' }, /in the past/],
    ];
    for (const [schedule, expected] of cases) {
      const result = await tool.execute({ action: 'add', message: 'x', ...schedule }, ctx);
      expect(result.isError).toBe(true);
      expect(textOf(result)).toMatch(expected);
    }
    expect(textOf(await tool.execute({ action: 'add', every_seconds: 60 }, ctx))).toMatch(/needs message/);
    expect(textOf(await tool.execute({ action: 'add', name: 'Dream', message: 'x', every_seconds: 60 }, ctx))).toMatch(
      /reserved/,
    );
    expect(fs.existsSync(storePath)).toBe(false);
    expect(fs.existsSync(path.join(workspace, 'cron', 'action.jsonl'))).toBe(false);
  });

  it('lists jobs in words and removes them by id, but not protected ones', async () => {
    const { tool, ctx, service, storePath } = setup();
    expect(textOf(await tool.execute({ action: 'list' }, ctx))).toBe('No scheduled jobs.');
    await tool.execute({ action: 'add', name: 'standup', message: 'Standup!', cron_expr: '30 9 * * 1-5' }, ctx);
    // nanobot's own system job, as its gateway registers it.
    fs.mkdirSync(path.dirname(storePath), { recursive: true });
    fs.writeFileSync(
      storePath,
      JSON.stringify({
        version: 1,
        jobs: [
          {
            id: 'dream',
            name: 'dream',
            schedule: { kind: 'every', everyMs: 7_200_000 },
            payload: { kind: 'system_event', message: '' },
          },
        ],
      }),
    );
    const dream = { id: 'dream' };
    const listing = textOf(await tool.execute({ action: 'list' }, ctx));
    expect(listing).toContain(
      "'standup' (reminder → telegram:42): on weekdays at 09:30 (Europe/Berlin); next: 2026-03-30 09:30",
    );
    expect(listing).toContain("- dream 'dream' (protected system job");

    const protectedResult = await tool.execute({ action: 'remove', job_id: dream.id }, ctx);
    expect(textOf(protectedResult)).toMatch(/system job/);
    expect(textOf(await tool.execute({ action: 'remove' }, ctx))).toMatch(/needs job_id/);
    expect(textOf(await tool.execute({ action: 'remove', job_id: 'zzz' }, ctx))).toMatch(/No job with id 'zzz'/);

    const standup = (await service.list()).find((job) => job.name === 'standup')!;
    expect(textOf(await tool.execute({ action: 'remove', job_id: standup.id }, ctx))).toBe(
      `Removed job ${standup.id} 'standup'.`,
    );
    expect((await service.list()).map((job) => job.name)).toEqual(['dream']);
  });
});
