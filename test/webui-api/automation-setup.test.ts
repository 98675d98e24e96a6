/**
 * Our additions to the automations API (src/webui/automation-setup.ts) against a real gateway running a cron
 * service: `automation.create` adds a job to a chat through the running service, the same job `nanobot cron add`
 * makes (the built CLI adds its twin on the same home; the gateway merges it into jobs.json and the two are
 * compared); the heartbeat route shows config.json's settings and HEARTBEAT.md; their updates land in those files.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from '../cli/cli-helpers.js';
import { eventually } from '../helpers/eventually.js';
import { byId, essence, HOUR, type Job, start } from './automations-helpers.js';

type Json = Record<string, unknown>;

describe('automation.create', () => {
  it('adds an agent job to the chat, listed and saved as `nanobot cron add --agent` saves its twin', async () => {
    const { request, stored, chatId, run } = await start();
    const made = await request('automation.create', {
      name: 'stretch break',
      message: 'Remind me to stretch',
      schedule: { kind: 'every', every_ms: HOUR },
      chat_id: chatId,
    });
    expect(made.ok).toBe(true);
    const id = (made.result as unknown as { id: string }).id;
    expect(byId(made.result?.jobs ?? [], id)).toMatchObject({
      name: 'stretch break',
      enabled: true,
      schedule: { kind: 'every', every_ms: HOUR },
      payload: { message: 'Remind me to stretch', kind: 'agent_turn' },
      origin: { session_key: `websocket:${chatId}`, chat_id: chatId },
    });
    const cli = await runCli(
      [
        'cron',
        'add',
        '--name',
        'stretch twin',
        '--message',
        'Remind me to stretch',
        '--every',
        '1h',
        '--channel',
        'websocket',
        '--chat-id',
        chatId,
        '--agent',
      ],
      run.home,
    );
    expect(cli.code, cli.stderr).toBe(0);
    const twin = await eventually(() => {
      const found = stored().find((job) => job.name === 'stretch twin');
      if (!found) throw new Error('the gateway has not merged the CLI’s job yet');
      return found;
    });
    const ours = byId(stored(), id) as Job;
    expect({ ...essence(ours), name: 'stretch twin' }).toEqual(essence(twin));
  });

  it('a reminder (agent: false) and a cron job without a timezone get the agent’s timezone, as the CLI', async () => {
    const { request, stored, chatId } = await start();
    const made = await request('automation.create', {
      message: 'Stand-up in 5 minutes',
      schedule: { kind: 'cron', expr: '55 8 * * 1-5' },
      chat_id: chatId,
      agent: false,
    });
    const id = (made.result as unknown as { id: string }).id;
    expect(byId(stored(), id)).toMatchObject({
      name: 'Stand-up in 5 minutes',
      schedule: { kind: 'cron', expr: '55 8 * * 1-5', tz: 'UTC', atMs: null, everyMs: null },
      payload: { kind: 'agent_turn', originMetadata: { nanobotTs: { reminder: true } } },
      deleteAfterRun: false,
    });
    const at = Date.now() + 2 * HOUR;
    const once = await request('automation.create', {
      message: 'Leave for the train',
      schedule: { kind: 'at', at_ms: at },
      chat_id: chatId,
    });
    expect(byId(stored(), (once.result as unknown as { id: string }).id)).toMatchObject({
      schedule: { kind: 'at', atMs: at },
      deleteAfterRun: true,
      state: { nextRunAtMs: at },
    });
  });
});

describe('automation.create for another bot of a channel', () => {
  it('takes an instance’s runtime channel (feishu.<id>) as the chat’s channel, and nothing path-like', async () => {
    const { request, stored } = await start();
    const made = await request('automation.create', {
      message: 'Weekly sales report',
      schedule: { kind: 'every', every_ms: HOUR },
      channel: 'feishu.sales',
      chat_id: 'oc_sales_chat',
    });
    expect(made.ok, JSON.stringify(made.error)).toBe(true);
    expect(byId(stored(), (made.result as unknown as { id: string }).id)).toMatchObject({
      payload: { sessionKey: 'feishu.sales:oc_sales_chat', originChannel: 'feishu.sales' },
    });
    for (const channel of ['feishu./x', 'feishu..x', 'feishu.sales.x', '../feishu']) {
      const refused = await request('automation.create', {
        message: 'x',
        schedule: { kind: 'every', every_ms: HOUR },
        channel,
        chat_id: 'oc_1',
      });
      expect(refused.ok, channel).toBe(false);
    }
  });
});

describe('heartbeat settings and HEARTBEAT.md', () => {
  it('shows and changes gateway.heartbeat in config.json and HEARTBEAT.md in the workspace', async () => {
    const { request, get, run } = await start();
    const shown = (await get('/api/webui/automations/heartbeat')) as unknown as { status: number; body: Json };
    expect(shown.status).toBe(200);
    expect(shown.body).toEqual({
      heartbeat: { enabled: false, interval_s: 1800, keep_recent_messages: 8 },
      timezone: 'UTC',
      file: { name: 'HEARTBEAT.md', exists: false, content: '', max_bytes: 256 * 1024, problem: null },
      requires_restart: false,
    });
    const changed = await request('automation.heartbeat.update', {
      enabled: true,
      interval_s: 600,
      keep_recent_messages: 4,
    });
    expect(changed.result).toMatchObject({
      heartbeat: { enabled: true, interval_s: 600, keep_recent_messages: 4 },
      requires_restart: false,
    });
    const config = JSON.parse(readFileSync(join(run.dataDir, 'config.json'), 'utf8')) as {
      gateway: { heartbeat: Json };
    };
    expect(config.gateway.heartbeat).toEqual({ enabled: true, intervalS: 600, keepRecentMessages: 4 });
    // The same values again change nothing (no write, no restart needed).
    expect((await request('automation.heartbeat.update', { interval_s: 600 })).result).toMatchObject({
      requires_restart: false,
    });

    const text = '# Heartbeat\n\n## Active Tasks\n\n- Check the build\n';
    const saved = await request('automation.heartbeat_file.update', { content: text });
    expect(saved.result).toMatchObject({ file: { exists: true, content: text } });
    expect(readFileSync(join(run.workspace, 'HEARTBEAT.md'), 'utf8')).toBe(text);
  });
});
