/**
 * The automations API against a real gateway running a cron service: `GET /api/webui/automations` and the
 * per-chat route list jobs and local triggers in nanobot's SessionAutomationJob shape, and `automation.*`
 * webui_requests change them through the running service (what lands in jobs.json is checked), `run` answers in the
 * job's chat, and deleting a chat with automations asks first.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { ServerFrame } from '../../src/channels/websocket/frames.js';
import { byId, HOUR, type Job, start } from './automations-helpers.js';

describe('automations API (GET /api/webui/automations, automation.* webui_requests)', () => {
  it('lists every job and trigger with details and origin, and one chat its own, in nanobot’s shapes', async () => {
    const { client, chatId, get } = await start([{ text: 'Hello there' }]);
    client.send({ type: 'message', chat_id: chatId, content: 'plant care please' });
    await client.next((f) => f.event === 'turn_end' && f.chat_id === chatId, 10_000);

    const all = await get('/api/webui/automations');
    expect(all.status).toBe(200);
    expect(all.body.jobs.map((job) => job.id).sort()).toEqual(['dream', 'old1', 'tg1', 'trg_ABCDEFGH', 'web1']);
    expect(byId(all.body.jobs, 'web1')).toEqual({
      id: 'web1',
      name: 'water plants',
      enabled: true,
      protected: false,
      delete_after_run: false,
      created_at_ms: 1,
      updated_at_ms: 2,
      schedule: { kind: 'every', at_ms: null, every_ms: HOUR, expr: null, tz: null },
      payload: { message: 'water plants now', kind: 'agent_turn' },
      state: {
        next_run_at_ms: expect.any(Number),
        last_status: null,
        pending: false,
        last_run_at_ms: null,
        last_error: null,
        run_history: [{ run_at_ms: 1000, status: 'ok', duration_ms: 12, error: null }],
      },
      origin: {
        session_key: `websocket:${chatId}`,
        channel: 'websocket',
        chat_id: chatId,
        title: '',
        preview: 'plant care please',
      },
    });
    expect(byId(all.body.jobs, 'tg1')?.origin).toEqual({ channel: 'telegram', title: '', preview: '' });
    expect(byId(all.body.jobs, 'dream')).toMatchObject({ protected: true, payload: { kind: 'system_event' } });
    // nanobot disables an agent job with no chat to answer in; it stays listed, without an origin.
    expect(byId(all.body.jobs, 'old1')).toMatchObject({ enabled: false, origin: null });
    expect(byId(all.body.jobs, 'trg_ABCDEFGH')).toMatchObject({
      kind: 'local_trigger',
      schedule: { kind: 'local', at_ms: null, every_ms: null, expr: null, tz: null },
      payload: {
        kind: 'local_trigger',
        message: 'nanobot trigger trg_ABCDEFGH "message"',
        command: 'nanobot trigger trg_ABCDEFGH "message"',
      },
      trigger: { id: 'trg_ABCDEFGH', command: 'nanobot trigger trg_ABCDEFGH "message"' },
      origin: { session_key: `websocket:${chatId}`, chat_id: chatId },
    });

    // The chat's own list: its bound job and its trigger, in the short form (no details).
    const own = await get(`/api/sessions/${encodeURIComponent(`websocket:${chatId}`)}/automations`);
    expect(own.body.jobs.map((job) => job.id)).toEqual(['web1', 'trg_ABCDEFGH']);
    expect(Object.keys(own.body.jobs[0] ?? {}).sort()).toEqual([
      'enabled',
      'id',
      'name',
      'payload',
      'schedule',
      'state',
    ]);
    expect(own.body.jobs[0]?.state).toEqual({ next_run_at_ms: expect.any(Number), last_status: null, pending: false });
  });

  it('edits name, message and schedule (every, cron with a timezone, at) through the running service', async () => {
    const { request, stored } = await start();
    const cron = await request('automation.update', {
      id: 'web1',
      values: {
        name: ' morning plants ',
        message: 'Water the ficus',
        schedule: { kind: 'cron', expr: '30 7 * * 1-5', tz: 'Asia/Tokyo' },
      },
    });
    expect(cron.ok).toBe(true);
    const listed = byId(cron.result?.jobs ?? [], 'web1');
    expect(listed).toMatchObject({
      name: 'morning plants',
      payload: { message: 'Water the ficus' },
      schedule: { kind: 'cron', expr: '30 7 * * 1-5', tz: 'Asia/Tokyo', every_ms: null },
      delete_after_run: false,
    });
    const next = listed?.state.next_run_at_ms as number;
    // 07:30 in Tokyo is 22:30 UTC.
    expect(new Date(next).getUTCHours() * 60 + new Date(next).getUTCMinutes()).toBe(22 * 60 + 30);
    const onDisk = byId(stored(), 'web1');
    expect(onDisk).toMatchObject({
      name: 'morning plants',
      schedule: { kind: 'cron', expr: '30 7 * * 1-5', tz: 'Asia/Tokyo', atMs: null, everyMs: null },
      payload: { message: 'Water the ficus', sessionKey: expect.stringMatching(/^websocket:/) },
      state: { nextRunAtMs: next },
    });

    const every = await request('automation.update', {
      id: 'web1',
      values: { schedule: { kind: 'every', every_ms: 90_000 } },
    });
    expect(byId(every.result?.jobs ?? [], 'web1')?.schedule).toEqual({
      kind: 'every',
      at_ms: null,
      every_ms: 90_000,
      expr: null,
      tz: null,
    });

    const at = Date.now() + 2 * HOUR;
    const once = await request('automation.update', { id: 'web1', values: { schedule: { kind: 'at', at_ms: at } } });
    expect(byId(once.result?.jobs ?? [], 'web1')).toMatchObject({
      delete_after_run: true,
      state: { next_run_at_ms: at },
    });
    expect(byId(stored(), 'web1')).toMatchObject({ deleteAfterRun: true, schedule: { kind: 'at', atMs: at } });
    // Sending the unchanged schedule back (the edit form does) changes nothing; no values at all neither.
    const same = await request('automation.update', {
      id: 'web1',
      values: { name: 'x', schedule: { kind: 'at', at_ms: at } },
    });
    expect(byId(same.result?.jobs ?? [], 'web1')).toMatchObject({ name: 'x', state: { next_run_at_ms: at } });
    expect((await request('automation.update', { id: 'web1' })).ok).toBe(true);
  });

  it('disables (no next run), enables (next run from now), deletes, and renames or removes a trigger', async () => {
    const { request, stored, run } = await start();
    const off = await request('automation.disable', { id: 'web1' });
    expect(byId(off.result?.jobs ?? [], 'web1')).toMatchObject({ enabled: false, state: { next_run_at_ms: null } });
    expect(byId(stored(), 'web1')).toMatchObject({ enabled: false, state: { nextRunAtMs: null } });
    const before = Date.now();
    const on = await request('automation.enable', { job_id: 'web1' });
    expect(byId(on.result?.jobs ?? [], 'web1')?.enabled).toBe(true);
    expect(byId(stored(), 'web1')?.state.nextRunAtMs).toBeGreaterThanOrEqual(before + HOUR);

    const gone = await request('automation.delete', { id: 'tg1' });
    expect(byId(gone.result?.jobs ?? [], 'tg1')).toBeUndefined();
    expect(byId(stored(), 'tg1')).toBeUndefined();

    const triggers = () =>
      (JSON.parse(readFileSync(join(run.workspace, 'triggers', 'triggers.json'), 'utf8')) as { triggers: Job[] })
        .triggers;
    await request('automation.disable', { id: 'trg_ABCDEFGH' });
    expect(triggers()[0]).toMatchObject({ enabled: false });
    const renamed = await request('automation.update', { id: 'trg_ABCDEFGH', values: { name: 'ship it' } });
    expect(byId(renamed.result?.jobs ?? [], 'trg_ABCDEFGH')).toMatchObject({ name: 'ship it', enabled: false });
    expect((await request('automation.delete', { id: 'trg_ABCDEFGH' })).ok).toBe(true);
    expect(triggers()).toEqual([]);
  });

  it('runs a job now: its turn answers in the chat it is bound to, and the run is recorded', async () => {
    const { request, client, chatId, stored } = await start([{ text: 'Watered: all 3 plants.' }]);
    const ran = await request('automation.run', { id: 'web1' });
    expect(ran.ok).toBe(true);
    const answer = await client.next(
      (f: ServerFrame) =>
        'chat_id' in f && f.chat_id === chatId && JSON.stringify(f).includes('Watered: all 3 plants.'),
      10_000,
    );
    expect(answer).toMatchObject({ chat_id: chatId });
    for (let i = 0; i < 200 && byId(stored(), 'web1')?.state.lastStatus !== 'ok'; i++)
      await new Promise((r) => setTimeout(r, 25));
    expect(byId(stored(), 'web1')?.state).toMatchObject({ lastStatus: 'ok' });
  });

  it('refuses what nanobot refuses, with its status codes, and changes nothing', async () => {
    const { request, stored, get } = await start();
    await get('/api/webui/automations'); // the service has read (and normalised) the seeded file
    const before = JSON.stringify(stored());
    const cases: [string, unknown, number][] = [
      ['automation.enable', {}, 400],
      ['automation.enable', { id: '' }, 400],
      ['automation.enable', { id: 42 }, 400],
      ['automation.enable', { id: 'nope' }, 404],
      ['automation.update', { id: 'nope', values: {} }, 404],
      ['automation.delete', { id: 'dream' }, 403],
      ['automation.update', { id: 'dream', values: { name: 'x' } }, 403],
      ['automation.run', { id: 'dream' }, 403],
      ['automation.enable', { id: 'old1' }, 409],
      ['automation.run', { id: 'old1' }, 409],
      ['automation.run', { id: 'trg_ABCDEFGH' }, 409],
      ['automation.update', { id: 'trg_ABCDEFGH', values: { message: 'x' } }, 400],
      ['automation.update', { id: 'trg_ABCDEFGH', values: { schedule: { kind: 'every', every_ms: 5000 } } }, 400],
      ['automation.update', { id: 'web1', values: 'name=x' }, 400],
      ['automation.update', { id: 'web1', values: [] }, 400],
      ['automation.update', { id: 'web1', values: { name: '   ' } }, 400],
      ['automation.update', { id: 'web1', values: { name: 7 } }, 400],
      ['automation.update', { id: 'web1', values: { message: '' } }, 400],
      ['automation.update', { id: 'web1', values: { schedule: 'every hour' } }, 400],
      ['automation.update', { id: 'web1', values: { schedule: { kind: 'weekly' } } }, 400],
      ['automation.update', { id: 'web1', values: { schedule: { kind: 'every', every_ms: -5 } } }, 400],
      ['automation.update', { id: 'web1', values: { schedule: { kind: 'every', every_ms: '60000' } } }, 400],
      ['automation.update', { id: 'web1', values: { schedule: { kind: 'every', every_ms: 1.5 } } }, 400],
      ['automation.update', { id: 'web1', values: { schedule: { kind: 'every', every_ms: 10 } } }, 400],
      ['automation.update', { id: 'web1', values: { schedule: { kind: 'cron', expr: '' } } }, 400],
      ['automation.update', { id: 'web1', values: { schedule: { kind: 'cron', expr: 'every day' } } }, 400],
      [
        'automation.update',
        { id: 'web1', values: { schedule: { kind: 'cron', expr: '0 9 * * *', tz: 'Mars/Olympus' } } },
        400,
      ],
      ['automation.update', { id: 'web1', values: { schedule: { kind: 'cron', expr: '0 9 * * *', tz: 5 } } }, 400],
      ['automation.update', { id: 'web1', values: { schedule: { kind: 'at', at_ms: Date.now() - HOUR } } }, 400],
      ['automation.update', { id: 'web1', values: { schedule: { kind: 'at' } } }, 400],
    ];
    for (const [action, payload, status] of cases) {
      const answer = await request(action, payload);
      expect([action, payload, answer.ok, answer.error?.status]).toEqual([action, payload, false, status]);
      expect(answer.error?.message).toBeTruthy();
    }
    await request('automation.disable', { id: 'web1' });
    expect(await request('automation.run', { id: 'web1' })).toMatchObject({
      ok: false,
      error: { status: 409, message: 'automation is disabled' },
    });
    const after = stored().map((job) => (job.id === 'web1' ? { ...job, enabled: true } : job));
    expect(after.map((job) => [job.id, job.name, job.schedule])).toEqual(
      (JSON.parse(before) as Job[]).map((job) => [job.id, job.name, job.schedule]),
    );
  });

  it('deleting a chat with automations asks first, then removes them with the chat', async () => {
    const { request, stored, chatId, get } = await start();
    const key = `websocket:${chatId}`;
    const blocked = await request('session.delete', { key });
    expect(blocked.result).toMatchObject({ deleted: false, blocked_by_automations: true });
    expect((blocked.result as unknown as { automations: Job[] }).automations.map((j) => j.id)).toEqual([
      'web1',
      'trg_ABCDEFGH',
    ]);
    expect(byId(stored(), 'web1')).toBeDefined();
    const done = await request('session.delete', { key, delete_automations: true });
    expect(done.ok).toBe(true);
    expect(byId(stored(), 'web1')).toBeUndefined();
    expect(byId(stored(), 'tg1')).toBeDefined();
    expect((await get(`/api/sessions/${encodeURIComponent(key)}/automations`)).body.jobs).toEqual([]);
  });
});
