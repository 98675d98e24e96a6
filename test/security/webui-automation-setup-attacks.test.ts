/**
 * Hostile requests to our automation additions (src/webui/automation-setup.ts): new jobs with schedules that would
 * flood, never fire or are not schedules at all, chat ids and channels that try to smuggle control characters or a
 * path, reserved names, wrong-typed and oversize values; heartbeat settings out of range; HEARTBEAT.md writes that
 * are too large, name another path, or meet a planted link or FIFO where the file should be. Every one is refused
 * with a 4xx and leaves jobs.json, config.json, HEARTBEAT.md and the file outside the workspace as they were.
 */
import { execFileSync } from 'node:child_process';
import {
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { startWebUiGateway } from '../channels/websocket/gateway-helpers.js';
import { connect } from '../channels/websocket/helpers.js';
import { HOUR, start } from '../webui-api/automations-helpers.js';

/** Schedules `automation.create` must refuse (each a different way to be wrong). */
const BAD_SCHEDULES: unknown[] = [
  undefined,
  null,
  'every hour',
  ['every', 3_600_000],
  {},
  { kind: 'weekly' },
  { kind: 'EVERY', every_ms: HOUR },
  { kind: 'every' },
  { kind: 'every', every_ms: 0 },
  { kind: 'every', every_ms: -60_000 },
  { kind: 'every', every_ms: 10 },
  { kind: 'every', every_ms: 999 },
  { kind: 'every', every_ms: '60000' },
  { kind: 'every', every_ms: 1.5 },
  { kind: 'every', every_ms: Number.NaN },
  { kind: 'every', every_ms: Number.POSITIVE_INFINITY },
  { kind: 'cron' },
  { kind: 'cron', expr: '' },
  { kind: 'cron', expr: '   ' },
  { kind: 'cron', expr: 'every day' },
  { kind: 'cron', expr: '* * * * * * *' },
  { kind: 'cron', expr: '61 * * * *' },
  { kind: 'cron', expr: '0 0 31 2 *' },
  { kind: 'cron', expr: `0 ${'1,'.repeat(200)}1 * * *` },
  { kind: 'cron', expr: '0 9 * * *', tz: 'Mars/Olympus' },
  { kind: 'cron', expr: '0 9 * * *', tz: '../../etc/localtime' },
  { kind: 'cron', expr: '0 9 * * *', tz: 5 },
  { kind: 'at' },
  { kind: 'at', at_ms: 1000 },
  { kind: 'at', at_ms: Date.now() - HOUR },
  { kind: 'at', at_ms: '2030-01-01T09:00' },
  { kind: 'at', at_ms: -1 },
];

describe('automation.create attacks', () => {
  it('refuses bad schedules, chats, channels, names, presets and messages, and adds nothing', async () => {
    const { request, stored, chatId, get } = await start();
    await get('/api/webui/automations');
    const before = JSON.stringify(stored());
    const good = { message: 'Stretch', schedule: { kind: 'every', every_ms: HOUR }, chat_id: chatId };
    const cases: Record<string, unknown>[] = [
      ...BAD_SCHEDULES.map((schedule) => ({ ...good, schedule })),
      ...['', '   ', 'a\nb', 'a\u0000b', '\u001b[31mx', 'x'.repeat(257), 42, null, ['x'], { id: 'x' }].map(
        (chat_id) => ({ ...good, chat_id }),
      ),
      { message: 'Stretch', schedule: good.schedule },
      ...['../websocket', 'Web Socket', 'telegram/../x', '', 'a'.repeat(41), 'TELEGRAM', 7, 'ws\n'].map((channel) => ({
        ...good,
        channel,
      })),
      ...['dream', 'Dream', 'HEARTBEAT', 'x'.repeat(201), 12, ['n']].map((name) => ({ ...good, name })),
      { ...good, model_preset: 'nope' },
      { ...good, model_preset: 'nope', agent: false },
      { ...good, model_preset: 7 },
      ...['', '   \n\t', 'x'.repeat(20_001), 5, null, ['hi']].map((message) => ({ ...good, message })),
      { ...good, agent: 'yes' },
      { ...good, channel: 'cli', agent: false },
    ];
    for (const payload of cases) {
      const answer = await request('automation.create', payload);
      expect([payload, answer.ok, answer.error?.status]).toEqual([payload, false, 400]);
      expect(answer.error?.message).toBeTruthy();
    }
    expect(cases.length).toBeGreaterThanOrEqual(60);
    expect(JSON.stringify(stored())).toBe(before);
    // The good one goes through (the refusals above were for what each changed).
    expect((await request('automation.create', good)).ok).toBe(true);
  });

  it('answers 503 on a gateway without a cron service (nothing to add the job to)', async () => {
    const run = await startWebUiGateway();
    const client = await connect(run.port, { token: run.token, clientId: 'webui', origin: run.url });
    try {
      await client.next((f) => f.event === 'ready');
      client.send({
        type: 'webui_request',
        request_id: 'r1',
        action: 'automation.create',
        payload: { message: 'x', schedule: { kind: 'every', every_ms: HOUR }, chat_id: 'abc' },
      });
      const answer = await client.next((f) => f.event === 'webui_response');
      expect(answer).toMatchObject({ ok: false, error: { status: 503 } });
    } finally {
      await client.close();
      await run.close();
    }
  });
});

describe('heartbeat attacks', () => {
  it('refuses out-of-range and wrong-typed settings, leaving config.json as it was', async () => {
    const { request, run } = await start();
    const configPath = join(run.dataDir, 'config.json');
    const before = readFileSync(configPath, 'utf8');
    const cases: Record<string, unknown>[] = [
      ...[0, -1, 59, 1.5, '600', 7 * 86_400 + 1, 1e12, null, true, Number.NaN].map((interval_s) => ({ interval_s })),
      ...[-1, 1001, 2.5, '4', false].map((keep_recent_messages) => ({ keep_recent_messages })),
      ...['yes', 1, 'true', null].map((enabled) => ({ enabled })),
      { enabled: true, interval_s: 0 },
    ];
    for (const payload of cases) {
      const answer = await request('automation.heartbeat.update', payload);
      expect([payload, answer.ok, answer.error?.status]).toEqual([payload, false, 400]);
    }
    expect(readFileSync(configPath, 'utf8')).toBe(before);
  });

  it('HEARTBEAT.md: oversize or wrong-typed content, other paths named in the payload, a planted link or FIFO', async () => {
    const { request, get, run } = await start();
    const file = join(run.workspace, 'HEARTBEAT.md');
    writeFileSync(file, '# mine\n');
    const oversize = [
      'x'.repeat(256 * 1024 + 1),
      // Multi-byte characters: under the limit in characters, over it in bytes.
      '日'.repeat(90_000),
    ];
    for (const content of oversize) {
      const answer = await request('automation.heartbeat_file.update', { content });
      expect([answer.ok, answer.error?.status]).toEqual([false, 413]);
    }
    for (const content of [undefined, null, 42, ['x'], { text: 'x' }]) {
      const answer = await request('automation.heartbeat_file.update', { content });
      expect([content, answer.ok, answer.error?.status]).toEqual([content, false, 400]);
    }
    expect(readFileSync(file, 'utf8')).toBe('# mine\n');

    // A path in the payload is not ours to choose: only HEARTBEAT.md is ever written.
    const elsewhere = ['../../config.json', '/etc/passwd', 'AGENTS.md', 'memory/MEMORY.md'];
    for (const path of elsewhere) {
      const answer = await request('automation.heartbeat_file.update', {
        content: 'ok\n',
        path,
        name: path,
        file: path,
      });
      expect(answer.ok).toBe(true);
      expect(existsSync(join(run.workspace, path)) && path.endsWith('.md')).toBe(false);
    }
    expect(readFileSync(file, 'utf8')).toBe('ok\n');
    expect(readFileSync(join(run.dataDir, 'config.json'), 'utf8')).not.toContain('ok\n');

    // The sandboxed shell can plant a link (or a FIFO, or a directory) where HEARTBEAT.md is: never read through;
    // a save replaces the link itself with a plain file, and what it pointed at stays as it was.
    const outside = mkdtempSync(join(tmpdir(), 'nb-outside-'));
    const secret = join(outside, 'secret.txt');
    writeFileSync(secret, 'top secret\n');
    try {
      const plant: [string, () => void][] = [
        ['link to a file outside', () => symlinkSync(secret, file)],
        ['relative link out', () => symlinkSync('../../../../../../../../etc/hostname', file)],
        ['link to a directory outside', () => symlinkSync(outside, file)],
        ['dangling link', () => symlinkSync(join(outside, 'nothing-here'), file)],
        ['FIFO', () => execFileSync('mkfifo', [file])],
      ];
      for (const [what, make] of plant) {
        rmSync(file, { force: true });
        make();
        const read = (await get('/api/webui/automations/heartbeat')) as unknown as {
          status: number;
          body: { file: { content: string; problem: string | null } };
        };
        expect([what, read.status, read.body.file.content]).toEqual([what, 200, '']);
        expect(read.body.file.problem).toMatch(/cannot be read/);
        expect(JSON.stringify(read.body)).not.toContain('top secret');
        const write = await request('automation.heartbeat_file.update', { content: 'mine again\n' });
        expect([what, write.ok]).toEqual([what, true]);
        expect(lstatSync(file).isFile()).toBe(true);
        expect(readFileSync(file, 'utf8')).toBe('mine again\n');
        expect(readFileSync(secret, 'utf8')).toBe('top secret\n');
        expect(existsSync(join(outside, 'nothing-here'))).toBe(false);
      }
      // A directory in its place cannot be replaced by a file: refused, the directory and its contents kept.
      rmSync(file, { force: true });
      mkdirSync(file);
      writeFileSync(join(file, 'keep.txt'), 'kept\n');
      expect((await get('/api/webui/automations/heartbeat')).status).toBe(200);
      const write = await request('automation.heartbeat_file.update', { content: 'x' });
      expect([write.ok, write.error?.status]).toEqual([false, 409]);
      expect(write.error?.message).toMatch(/a directory is in its place/);
      // Nothing half-written is left beside it.
      expect(readdirSync(run.workspace).filter((name) => name.includes('HEARTBEAT'))).toEqual(['HEARTBEAT.md']);
      expect(readFileSync(join(file, 'keep.txt'), 'utf8')).toBe('kept\n');
    } finally {
      rmSync(outside, { recursive: true, force: true });
    }
  });
});
