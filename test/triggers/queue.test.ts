import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { queueTrigger, type Trigger, TriggerWatcher, triggersDir } from '../../src/triggers/queue.js';

async function workspace() {
  return mkdtemp(join(tmpdir(), 'nb-trg-'));
}

describe('local triggers', () => {
  it('delivers queued triggers in order and removes each once it is handled', async () => {
    const ws = await workspace();
    await queueTrigger(ws, 'backup', 'backup finished', new Date(1000));
    await queueTrigger(ws, 'deploy', 'deploy done', new Date(2000));
    const seen: Trigger[] = [];
    const watcher = new TriggerWatcher({ workspace: ws, deliver: async (t) => void seen.push(t) });
    await watcher.drain();
    expect(seen.map((t) => [t.name, t.message])).toEqual([
      ['backup', 'backup finished'],
      ['deploy', 'deploy done'],
    ]);
    expect(readdirSync(triggersDir(ws))).toEqual([]);
  });

  it('keeps a trigger whose delivery failed, and delivers it on the next pass', async () => {
    const ws = await workspace();
    await queueTrigger(ws, 'job', 'hello');
    let attempts = 0;
    const watcher = new TriggerWatcher({
      workspace: ws,
      deliver: async () => {
        attempts++;
        if (attempts === 1) throw new Error('provider down');
      },
    });
    await watcher.drain();
    expect(readdirSync(triggersDir(ws))).toHaveLength(1);
    await watcher.drain();
    expect(attempts).toBe(2);
    expect(readdirSync(triggersDir(ws))).toEqual([]);
  });

  it('sets aside a file that is not valid JSON instead of losing or looping on it', async () => {
    const ws = await workspace();
    await queueTrigger(ws, 'ok', 'fine');
    writeFileSync(join(triggersDir(ws), '0-bad.json'), '{not json');
    const seen: string[] = [];
    await new TriggerWatcher({ workspace: ws, deliver: async (t) => void seen.push(t.name) }).drain();
    expect(seen).toEqual(['ok']);
    expect(existsSync(join(triggersDir(ws), '0-bad.json.invalid'))).toBe(true);
  });

  it('sets aside valid JSON that is not a trigger, and says which file and which field is wrong', async () => {
    const ws = await workspace();
    await queueTrigger(ws, 'ok', 'fine');
    const bad = {
      '0-array.json': '[1,2]',
      '1-number.json': '{"name":"x","message":7,"createdAt":""}',
      '2-empty.json': '',
    };
    for (const [file, text] of Object.entries(bad)) writeFileSync(join(triggersDir(ws), file), text);
    const warnings: string[] = [];
    const log = { debug() {}, info() {}, warn: (m: string) => void warnings.push(m), error() {} };
    const seen: string[] = [];
    await new TriggerWatcher({ workspace: ws, log, deliver: async (t) => void seen.push(t.name) }).drain();
    expect(seen).toEqual(['ok']);
    for (const file of Object.keys(bad)) expect(existsSync(join(triggersDir(ws), `${file}.invalid`))).toBe(true);
    expect(warnings).toEqual([
      expect.stringMatching(
        /^trigger 0-array\.json has the wrong shape: .*expected object.*renamed to 0-array\.json\.invalid$/,
      ),
      expect.stringMatching(/^trigger 1-number\.json has the wrong shape: message: .*expected string/),
      expect.stringMatching(/^trigger 2-empty\.json is not valid JSON: it is empty/),
    ]);
  });

  it('rejects an invalid name or an empty message', async () => {
    const ws = await workspace();
    await expect(queueTrigger(ws, '../escape', 'x')).rejects.toThrow(/Invalid trigger name/);
    await expect(queueTrigger(ws, 'ok', '  ')).rejects.toThrow(/empty/);
  });
});
