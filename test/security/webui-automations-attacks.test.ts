/**
 * Hostile automation requests: ids that try to reach another job, a file or an object's prototype, wrong-typed and
 * oversize values, schedules that would flood, actions spelled to reach inherited members, and the read route without
 * the token or from another origin. Each is refused with a 4xx and leaves jobs.json and triggers.json as they were.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { start } from '../webui-api/automations-helpers.js';

const IDS: unknown[] = [
  '../cron/jobs',
  '../../config.json',
  '/etc/passwd',
  'web1/../dream',
  'web1\u0000',
  ' web1x',
  'WEB1',
  '%77eb1',
  'web1%00',
  '__proto__',
  'constructor',
  'toString',
  'hasOwnProperty',
  'trg_ABCDEFGH/../../x',
  'trg_abcdefgh',
  '*',
  'x'.repeat(100_000),
  ['web1'],
  { id: 'web1' },
  true,
  null,
  0,
];

describe('automation API attacks', () => {
  it('refuses ids that are not a job of this store, and every wrong-typed or oversize value', async () => {
    const { request, stored, get, run } = await start();
    await get('/api/webui/automations');
    const jobsBefore = JSON.stringify(stored());
    const triggersPath = join(run.workspace, 'triggers', 'triggers.json');
    const triggersBefore = readFileSync(triggersPath, 'utf8');
    let attempts = 0;
    let blocked = 0;
    const refused = async (action: string, payload: unknown) => {
      attempts += 1;
      const answer = await request(action, payload);
      const status = answer.error?.status ?? 200;
      if (!answer.ok && status >= 400 && status < 500) blocked += 1;
      return [action, JSON.stringify(payload).slice(0, 80), answer.ok, status >= 400 && status < 500];
    };
    for (const verb of ['enable', 'disable', 'delete', 'run', 'update'])
      for (const id of IDS) {
        const row = await refused(`automation.${verb}`, { id, values: { name: 'pwned' } });
        expect(row).toEqual([row[0], row[1], false, true]);
      }
    const values: unknown[] = [
      { name: 'x'.repeat(201) },
      { message: 'x'.repeat(20_001) },
      { name: { toString: 'x' } },
      { message: ['a'] },
      { schedule: { kind: 'every', every_ms: 1 } },
      { schedule: { kind: 'every', every_ms: Number.MAX_SAFE_INTEGER * 2 } },
      { schedule: { kind: 'every', every_ms: true } },
      { schedule: { kind: 'every', every_ms: null } },
      { schedule: { kind: 'cron', expr: '* * * * * * *' } },
      { schedule: { kind: 'cron', expr: `${'1,'.repeat(500)}1 * * * *` } },
      { schedule: { kind: 'cron', expr: '0 9 * * *', tz: '../../etc/localtime' } },
      { schedule: { kind: 'cron', expr: '0 9 * * *', tz: 'x'.repeat(101) } },
      { schedule: { kind: 'cron', expr: '0 0 31 2 *' } },
      { schedule: { kind: 'at', at_ms: -1 } },
      { schedule: { kind: 'at', at_ms: 1 } },
      { schedule: { kind: 'at', at_ms: '2099-01-01' } },
      { schedule: { kind: '__proto__' } },
      { schedule: [] },
      { schedule: null },
    ];
    for (const value of values) {
      const row = await refused('automation.update', { id: 'web1', values: value });
      expect(row).toEqual([row[0], row[1], false, true]);
    }
    for (const action of ['automation.__proto__', 'automation.constructor', 'automation.toString', 'automation.']) {
      const row = await refused(action, { id: 'web1' });
      expect(row).toEqual([row[0], row[1], false, true]);
    }
    expect(JSON.stringify(stored())).toBe(jobsBefore);
    expect(readFileSync(triggersPath, 'utf8')).toBe(triggersBefore);
    expect(blocked).toBe(attempts);
    expect(attempts).toBeGreaterThanOrEqual(130);
  });

  it('serves the list only with the token and only to its own origin', async () => {
    const { run } = await start();
    const url = `${run.url}/api/webui/automations`;
    expect((await fetch(url)).status).toBe(401);
    expect((await fetch(url, { headers: { authorization: 'Bearer wrong' } })).status).toBe(401);
    const cross = await fetch(url, {
      headers: { authorization: `Bearer ${run.token}`, origin: 'http://evil.example' },
    });
    expect(cross.status).toBe(403);
    const post = await fetch(url, { method: 'POST', headers: { authorization: `Bearer ${run.token}` } });
    expect(post.status).toBe(405);
    for (const path of ['/api/webui/automations/enable', '/api/webui/automations/x'])
      expect([
        path,
        (await fetch(`${run.url}${path}`, { headers: { authorization: `Bearer ${run.token}` } })).status,
      ]).not.toEqual([path, 200]);
  });
});
