/**
 * The files issue 17 added under the workspace (cron/action.jsonl, cron.lock, triggers/triggers.json, triggers/.lock,
 * triggers/inbox|processing|failed) are where the sandboxed shell can plant links. Each spelling of a link out of
 * the workspace is refused, and nothing outside is read, written or created.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { appendAction, readActionLog } from '../../src/cron/action-log.js';
import { CronService } from '../../src/cron/service.js';
import { LocalTriggerStore } from '../../src/triggers/local-store.js';
import { makeTempDir } from '../tools/helpers.js';

function world() {
  const root = makeTempDir('nb-link-');
  const workspace = path.join(root, 'ws');
  const outside = path.join(root, 'outside');
  fs.mkdirSync(workspace, { recursive: true });
  fs.mkdirSync(outside, { recursive: true });
  const secret = path.join(outside, 'secret.txt');
  fs.writeFileSync(secret, 'do not touch\n');
  const snapshot = () =>
    fs
      .readdirSync(outside)
      .sort()
      .map((name) => `${name}:${fs.readFileSync(path.join(outside, name), 'utf8')}`);
  return { workspace, outside, secret, snapshot };
}

const bound = { sessionKey: 'telegram:1', originChannel: 'telegram', originChatId: '1', message: 'hi' };

describe('links planted where cron and triggers write', () => {
  const cronPlants: Array<[string, (w: ReturnType<typeof world>) => void]> = [
    [
      'cron/action.jsonl → a file outside',
      (w) => {
        fs.mkdirSync(path.join(w.workspace, 'cron'));
        fs.symlinkSync(w.secret, path.join(w.workspace, 'cron', 'action.jsonl'));
      },
    ],
    [
      'cron/action.jsonl → a missing file outside',
      (w) => {
        fs.mkdirSync(path.join(w.workspace, 'cron'));
        fs.symlinkSync(path.join(w.outside, 'new.txt'), path.join(w.workspace, 'cron', 'action.jsonl'));
      },
    ],
    ['cron → a directory outside', (w) => fs.symlinkSync(w.outside, path.join(w.workspace, 'cron'))],
    ['cron.lock → a file outside', (w) => fs.symlinkSync(w.secret, path.join(w.workspace, 'cron.lock'))],
    [
      'cron.lock → a missing file outside',
      (w) => fs.symlinkSync(path.join(w.outside, 'lock'), path.join(w.workspace, 'cron.lock')),
    ],
  ];
  it.each(cronPlants)('cron: %s is refused and nothing outside changes', async (_label, plant) => {
    const w = world();
    plant(w);
    const before = w.snapshot();
    const service = new CronService({ workspace: w.workspace, onRun: async () => ({ status: 'ok' }) });
    await expect(
      service.add({ name: 'x', schedule: { kind: 'every', everyMs: 60_000 }, payload: bound }),
    ).rejects.toThrow();
    await expect(appendAction(w.workspace, 'del', 'abcd1234')).rejects.toThrow();
    expect(readActionLog(w.workspace).actions).toEqual([]);
    expect(w.snapshot()).toEqual(before);
  });

  const triggerPlants: Array<[string, (w: ReturnType<typeof world>) => void]> = [
    ['triggers → a directory outside', (w) => fs.symlinkSync(w.outside, path.join(w.workspace, 'triggers'))],
    [
      'triggers/triggers.json → a file outside',
      (w) => {
        fs.mkdirSync(path.join(w.workspace, 'triggers'));
        fs.symlinkSync(w.secret, path.join(w.workspace, 'triggers', 'triggers.json'));
      },
    ],
    [
      'triggers/.lock → a file outside',
      (w) => {
        fs.mkdirSync(path.join(w.workspace, 'triggers'));
        fs.symlinkSync(w.secret, path.join(w.workspace, 'triggers', '.lock'));
      },
    ],
  ];
  it.each(triggerPlants)('triggers: %s is refused and nothing outside changes', async (_label, plant) => {
    const w = world();
    plant(w);
    const before = w.snapshot();
    const store = new LocalTriggerStore(w.workspace);
    await expect(
      store.create({ name: 'x', channel: 'telegram', chatId: '1', sessionKey: 'telegram:1' }),
    ).rejects.toThrow();
    await expect(store.list()).rejects.toThrow();
    expect(w.snapshot()).toEqual(before);
  });

  it('triggers: an inbox that is a link out is never read, moved or emptied', async () => {
    const w = world();
    const store = new LocalTriggerStore(w.workspace);
    const trigger = await store.create({ name: 'x', channel: 'telegram', chatId: '1', sessionKey: 'telegram:1' });
    fs.writeFileSync(
      path.join(w.outside, '1-tdl_000000000000.json'),
      JSON.stringify({ version: 1, delivery: { id: 'tdl_000000000000', triggerId: trigger.id, content: 'planted' } }),
    );
    fs.rmSync(path.join(w.workspace, 'triggers', 'inbox'), { recursive: true, force: true });
    fs.symlinkSync(w.outside, path.join(w.workspace, 'triggers', 'inbox'));
    const before = w.snapshot();
    await expect(store.claim()).rejects.toThrow();
    await expect(store.enqueue(trigger.id, 'hello')).rejects.toThrow();
    expect(w.snapshot()).toEqual(before);
  });
});
