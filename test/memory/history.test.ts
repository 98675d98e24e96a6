import { execFile } from 'node:child_process';
import { appendFileSync, readFileSync, writeFileSync } from 'node:fs';
import { mkdir, mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { build } from 'esbuild';
import { describe, expect, it } from 'vitest';
import { formatHistoryTimestamp, HistoryStore } from '../../src/memory/history.js';
import type { Logger } from '../../src/util/log.js';

const run = promisify(execFile);

async function workspace(): Promise<string> {
  return mkdtemp(join(tmpdir(), 'nb-history-'));
}

function recordingLog(): Logger & { warnings: string[] } {
  const warnings: string[] = [];
  return { warnings, debug() {}, info() {}, warn: (m) => warnings.push(m), error() {} };
}

const fixedClock = () => new Date('2026-03-04T05:06:07Z');

describe('HistoryStore', () => {
  it('writes nanobot-format lines with increasing cursors and records the last one in .cursor', async () => {
    const dir = await workspace();
    const store = new HistoryStore(dir, { now: fixedClock });
    await store.append('first', 'cli:direct');
    await store.append('second');
    const lines = readFileSync(store.path, 'utf8').trim().split('\n');
    expect(lines.map((line) => JSON.parse(line))).toEqual([
      { cursor: 1, timestamp: '2026-03-04 05:06', content: 'first', session_key: 'cli:direct' },
      { cursor: 2, timestamp: '2026-03-04 05:06', content: 'second' },
    ]);
    expect(readFileSync(store.cursorPath, 'utf8').trim()).toBe('2');
  });

  it('formats timestamps in the agent timezone', () => {
    expect(formatHistoryTimestamp(new Date('2026-03-04T23:30:00Z'), 'Asia/Shanghai')).toBe('2026-03-05 07:30');
    expect(formatHistoryTimestamp(new Date('2026-03-04T23:30:00Z'), 'UTC')).toBe('2026-03-04 23:30');
  });

  it('hands out unique, monotonic cursors to two stores appending concurrently', async () => {
    const dir = await workspace();
    const a = new HistoryStore(dir);
    const b = new HistoryStore(dir);
    await Promise.all(Array.from({ length: 20 }, (_, i) => (i % 2 ? a : b).append(`entry ${i}`)));
    const cursors = a.readAll().map((entry) => entry.cursor);
    expect(cursors).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
  });

  it('hands out unique cursors to two processes appending at the same time (file lock)', async () => {
    const dir = await workspace();
    const bundle = join(dir, 'history-bundle.cjs');
    await build({
      entryPoints: [join(import.meta.dirname, '../../src/memory/history.ts')],
      bundle: true,
      platform: 'node',
      format: 'cjs',
      outfile: bundle,
      logLevel: 'silent',
    });
    // Both children start appending at the same instant, so their appends interleave.
    const script = `const { HistoryStore } = require(${JSON.stringify(bundle)});
      const [dir, name, startAt] = process.argv.slice(1);
      setTimeout(async () => { const s = new HistoryStore(dir);
        for (let i = 0; i < 25; i++) await s.append(name + ' ' + i); }, Number(startAt) - Date.now());`;
    const startAt = String(Date.now() + 400);
    await Promise.all([
      run(process.execPath, ['-e', script, dir, 'p1', startAt]),
      run(process.execPath, ['-e', script, dir, 'p2', startAt]),
    ]);
    const entries = new HistoryStore(dir).readAll();
    expect(entries).toHaveLength(50);
    expect(entries.map((entry) => entry.cursor)).toEqual(Array.from({ length: 50 }, (_, i) => i + 1));
  });

  it('continues from the file when .cursor is missing or behind', async () => {
    const dir = await workspace();
    const store = new HistoryStore(dir);
    await store.append('a');
    await store.append('b');
    writeFileSync(store.cursorPath, '1\n');
    expect((await store.append('c')).cursor).toBe(3);
  });

  it('repairs a torn last line before appending, so the new entry is not glued onto it', async () => {
    const dir = await workspace();
    const log = recordingLog();
    const store = new HistoryStore(dir, { log });
    await store.append('whole entry');
    appendFileSync(store.path, '{"cursor":2,"timestamp":"2026-01-01 00:00","content":"half wri');
    const next = await store.append('after the crash');
    expect(next.cursor).toBe(2);
    const text = readFileSync(store.path, 'utf8');
    expect(text.endsWith('\n')).toBe(true);
    expect(text).not.toContain('half wri');
    expect(store.readAll().map((entry) => entry.content)).toEqual(['whole entry', 'after the crash']);
    expect(log.warnings.some((w) => w.includes('torn'))).toBe(true);
  });

  it('keeps a complete last entry that only lacks its newline', async () => {
    const dir = await workspace();
    const store = new HistoryStore(dir);
    await mkdir(store.dir, { recursive: true });
    writeFileSync(store.path, '{"cursor":7,"timestamp":"2026-01-01 00:00","content":"no newline"}');
    expect((await store.append('next')).cursor).toBe(8);
    expect(store.readAll().map((entry) => entry.content)).toEqual(['no newline', 'next']);
  });

  it('skips corrupt lines with one warning per load', async () => {
    const dir = await workspace();
    const log = recordingLog();
    const store = new HistoryStore(dir, { log });
    await mkdir(store.dir, { recursive: true });
    writeFileSync(
      store.path,
      [
        '{"cursor":1,"timestamp":"2026-01-01 00:00","content":"ok 1"}',
        'not json',
        '{"cursor":"x","content":"bad cursor"}',
        '{"cursor":2,"timestamp":"2026-01-01 00:01","content":"ok 2"}',
        '',
      ].join('\n'),
    );
    expect(store.readAll().map((entry) => entry.content)).toEqual(['ok 1', 'ok 2']);
    store.readAll();
    expect(log.warnings).toHaveLength(1);
    expect(log.warnings[0]).toContain('2 corrupt');
  });

  it('entriesAfter keeps the newest entries within the entry and token limits, oldest first', async () => {
    const dir = await workspace();
    const store = new HistoryStore(dir);
    for (let i = 1; i <= 10; i++) await store.append(`entry ${i} ${'x'.repeat(300)}`);
    expect(store.entriesAfter(7).map((e) => e.cursor)).toEqual([8, 9, 10]);
    expect(store.entriesAfter(0, { maxEntries: 4 }).map((e) => e.cursor)).toEqual([7, 8, 9, 10]);
    expect(store.entriesAfter(0, { maxTokens: 250 }).map((e) => e.cursor)).toEqual([9, 10]);
  });

  it('trim keeps the newest entries and every entry Dream has not processed', async () => {
    const dir = await workspace();
    const store = new HistoryStore(dir);
    for (let i = 1; i <= 12; i++) await store.append(`entry ${i}`);
    await store.writeDreamCursor(4);
    expect(await store.trim(3)).toBe(4);
    expect(store.readAll().map((e) => e.cursor)).toEqual([5, 6, 7, 8, 9, 10, 11, 12]);
    await store.writeDreamCursor(12);
    expect(await store.trim(3)).toBe(5);
    expect(store.readAll().map((e) => e.cursor)).toEqual([10, 11, 12]);
    expect((await store.append('after trim')).cursor).toBe(13);
    expect(store.readDreamCursor()).toBe(12);
  });

  it('adapts to the Dream history source (oldest first)', async () => {
    const dir = await workspace();
    const store = new HistoryStore(dir);
    for (let i = 1; i <= 5; i++) await store.append(`entry ${i}`);
    const source = store.asDreamSource();
    expect((await source.entriesAfter(1, 2)).map((e) => e.cursor)).toEqual([2, 3]);
    await source.writeDreamCursor(3);
    expect(await source.readDreamCursor()).toBe(3);
  });
});
