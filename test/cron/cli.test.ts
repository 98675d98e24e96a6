import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCron } from '../../src/cli/commands/cron.js';
import { CronError } from '../../src/cron/types.js';
import { runCli, tempHome } from '../cli/cli-helpers.js';
import { makeTempDir } from '../tools/helpers.js';

function setup() {
  const home = makeTempDir('nanobot-cron-cli-');
  const workspace = path.join(home, 'ws');
  const config = path.join(home, 'config.json');
  fs.writeFileSync(config, JSON.stringify({ agents: { defaults: { workspace, timezone: 'Europe/Berlin' } } }));
  const lines: string[] = [];
  const deps = { out: (line: string) => lines.push(line), env: { HOME: home } };
  const run = (sub: string, args: string[] = [], flags: Record<string, unknown> = {}, extra = {}) =>
    runCron(sub, args, { config, ...flags }, { ...deps, ...extra });
  // Without a gateway, changes go to action.jsonl (nanobot's log for the scheduler); a read merges it.
  const jobs = async () => {
    const lines: string[] = [];
    await runCron('list', [], { config }, { ...deps, out: (line) => lines.push(line) });
    return lines.slice(1).map((line) => ({ id: line.split(/\s+/)[0] ?? '', name: line.split(/\s{2,}/)[1] ?? '' }));
  };
  return { run, lines, jobs, workspace };
}

const CHAT = { channel: 'telegram', chatId: '42' };

describe('nanobot cron', () => {
  it('adds, lists, runs and removes a reminder', async () => {
    const { run, lines, jobs } = setup();
    await run('add', [], { name: 'water', message: 'Drink water', every: '2h', channel: 'telegram', chatId: '42' });
    expect(lines[0]).toMatch(/^Added [0-9a-f]{8} 'water': every 2 hours; next run .* \(Europe\/Berlin\)\.$/);
    const [job] = await jobs();
    lines.length = 0;
    await run('list');
    expect(lines[0]).toMatch(/^ID\s+NAME\s+SCHEDULE\s+NEXT RUN \(Europe\/Berlin\)/);
    expect(lines[1]).toMatch(new RegExp(`^${job!.id}\\s+water\\s+every 2 hours\\s+.*reminder, telegram:42`));
    lines.length = 0;
    await run('run', [job!.id]);
    expect(lines).toEqual(['[telegram:42] Drink water', `Ran ${job!.id} 'water': ok.`]);
    await run('remove', [job!.id]);
    expect(await jobs()).toEqual([]);
  });

  it('fails with one line and a hint on bad input, writing nothing', async () => {
    const { run, workspace } = setup();
    const chat = { channel: 'telegram', chatId: '42' };
    const noChat = await run('add', [], { message: 'x', every: '60' }).catch((err: unknown) => err);
    expect((noChat as CronError).message).toBe('cron add needs --channel and --chat-id: the chat it runs in.');
    expect((noChat as CronError).hint).toMatch(/`nanobot sessions`/);
    const error = await run('add', [], { message: 'x', cron: '0 9 * *', ...chat }).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(CronError);
    expect((error as CronError).message).toMatch(/^Invalid cron expression '0 9 \* \*'/);
    expect((error as CronError).hint).toMatch(/5 fields/);
    await expect(run('add', [], { message: 'x', cron: '0 9 * * *', tz: 'Nowhere/Land', ...chat })).rejects.toThrow(
      "Unknown timezone 'Nowhere/Land'.",
    );
    await expect(run('add', [], { message: 'x', every: '5', at: '2030-01-01T00:00', ...chat })).rejects.toThrow(
      /exactly one/,
    );
    await expect(run('add', [], { message: 'x', every: 'soon', ...chat })).rejects.toThrow(/Invalid --every/);
    await expect(run('add', [], { message: 'x', every: '60', name: 'Dream', ...chat })).rejects.toThrow(/reserved/);
    await expect(run('add', [], { message: 'x', every: '60', channel: 'cli', chatId: 'direct' })).rejects.toThrow(
      /cannot go to the `nanobot agent` chat/,
    );
    await expect(run('remove', ['nope'])).rejects.toThrow("No cron job with id 'nope'.");
    await expect(run('frobnicate')).rejects.toThrow(/Unknown cron command/);
    expect(fs.existsSync(path.join(workspace, 'cron', 'jobs.json'))).toBe(false);
    expect(fs.existsSync(path.join(workspace, 'cron', 'action.jsonl'))).toBe(false);
  });

  it('runs an agent job through the runner it is given', async () => {
    const { run, jobs, lines } = setup();
    await run('add', [], { message: 'Check the news', at: '2099-01-01T09:00', agent: true, ...CHAT });
    expect(lines.join('\n')).toMatch(/picks it up without a restart/);
    const [job] = await jobs();
    const seen: string[] = [];
    await run(
      'run',
      [job!.id],
      {},
      {
        runJob: async (j: { payload: { message: string } }) => {
          seen.push(j.payload.message);
          return { status: 'ok' as const };
        },
      },
    );
    expect(seen).toEqual(['Check the news']);
  });
});

describe('nanobot cron on a corrupt jobs.json (built CLI)', () => {
  it.each([
    ['list', []],
    ['remove', ['abcd1234']],
    ['run', ['abcd1234']],
  ])('cron %s names the corrupt file and exits 1, leaving it as it was', async (sub, args) => {
    const home = tempHome();
    expect((await runCli(['onboard'], home)).code).toBe(0);
    const store = path.join(home, '.nanobot', 'workspace', 'cron', 'jobs.json');
    fs.mkdirSync(path.dirname(store), { recursive: true });
    const corrupt = '{ "version": 1, "jobs": [ {"id": "abcd1234", ';
    fs.writeFileSync(store, corrupt);
    const result = await runCli(['cron', sub, ...args], home);
    expect(result.code).toBe(1);
    expect(result.stdout).not.toMatch(/No cron jobs|No cron job with id/);
    expect(result.stderr).toContain(`${store} is not valid JSON`);
    expect(fs.readFileSync(store, 'utf8')).toBe(corrupt);
  });
});
