import { readFileSync, writeFileSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { JsonlSessionStore, workspaceId } from '../../src/session/jsonl-store.js';
import { createLogger } from '../../src/util/log.js';

async function store() {
  const dir = await mkdtemp(join(tmpdir(), 'nb-sess-'));
  const warnings: string[] = [];
  return {
    dir,
    warnings,
    sessions: new JsonlSessionStore(
      dir,
      createLogger('warn', (l) => warnings.push(l)),
    ),
  };
}

describe('JsonlSessionStore', () => {
  it('writes nanobot’s format: a metadata line, then one message per line', async () => {
    const { sessions } = await store();
    const s = await sessions.load('telegram:42');
    s.messages.push({ role: 'user', content: 'hi', timestamp: '2026-01-01T00:00:00.000Z' });
    s.metadata.last_channel = 'telegram:42';
    await sessions.save(s);
    const path = sessions.pathFor('telegram:42');
    expect(path.endsWith(`${Buffer.from('telegram:42').toString('base64url')}.jsonl`)).toBe(true);
    const lines = readFileSync(path, 'utf8').trim().split('\n');
    const meta = JSON.parse(lines[0] ?? '{}');
    expect(meta).toMatchObject({ _type: 'metadata', key: 'telegram:42', last_consolidated: 0 });
    expect(meta.metadata).toEqual({ last_channel: 'telegram:42' });
    expect(JSON.parse(lines[1] ?? '{}')).toEqual({
      role: 'user',
      content: 'hi',
      timestamp: '2026-01-01T00:00:00.000Z',
    });
  });

  it('drops a torn last line with a warning instead of failing', async () => {
    const { sessions, warnings } = await store();
    const s = await sessions.load('cli:direct');
    s.messages.push({ role: 'user', content: 'one' }, { role: 'assistant', content: 'two' });
    await sessions.save(s);
    const path = sessions.pathFor('cli:direct');
    writeFileSync(path, `${readFileSync(path, 'utf8')}{"role":"user","content":"thr`);
    const loaded = await sessions.load('cli:direct');
    expect(loaded.messages.map((m) => m.content)).toEqual(['one', 'two']);
    expect(warnings.join('\n')).toMatch(/torn last line/);
  });

  it('skips a corrupt middle line and keeps the rest', async () => {
    const { sessions, warnings } = await store();
    const path = sessions.pathFor('k');
    const meta = JSON.stringify({
      _type: 'metadata',
      key: 'k',
      created_at: 'a',
      updated_at: 'b',
      metadata: {},
      last_consolidated: 1,
    });
    writeFileSync(path, `${meta}\n{"role":"user","content":"a"}\nnot json\n{"role":"assistant","content":"b"}\n`);
    const loaded = await sessions.load('k');
    expect(loaded.messages.map((m) => m.content)).toEqual(['a', 'b']);
    expect(loaded.lastConsolidated).toBe(1);
    expect(warnings.join('\n')).toMatch(/corrupt line 3/);
  });

  it('leaves no temp files behind after saving', async () => {
    const { sessions, dir } = await store();
    await sessions.save(await sessions.load('a'));
    const { readdirSync } = await import('node:fs');
    expect(readdirSync(dir)).toEqual([`${Buffer.from('a').toString('base64url')}.jsonl`]);
  });

  it('gives each workspace a stable id', async () => {
    const ws = await mkdtemp(join(tmpdir(), 'nb-ws-'));
    const first = await workspaceId(ws);
    expect(first).toMatch(/^[0-9a-f]{16}$/);
    expect(await workspaceId(ws)).toBe(first);
  });
});
