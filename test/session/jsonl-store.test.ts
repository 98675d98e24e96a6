import { cpSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { JsonlSessionStore } from '../../src/session/jsonl-store.js';
import { sessionsDirFor } from '../../src/session/location.js';
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

  it('writes session files readable by the owner only', async () => {
    const { sessions } = await store();
    await sessions.save(await sessions.load('a'));
    expect(statSync(sessions.pathFor('a')).mode & 0o777).toBe(0o600);
  });

  it('keeps typed lines it does not use (nanobot’s provider_state) when rewriting', async () => {
    const { sessions } = await store();
    const path = sessions.pathFor('k');
    const meta = JSON.stringify({
      _type: 'metadata',
      key: 'k',
      created_at: 'a',
      updated_at: 'b',
      metadata: {},
      last_consolidated: 0,
    });
    const state = JSON.stringify({ _type: 'provider_state', state: { response_id: 'r1' } });
    writeFileSync(path, `${meta}\n${state}\n{"role":"user","content":"a"}\n`);
    const session = await sessions.load('k');
    session.messages.push({ role: 'assistant', content: 'b' });
    await sessions.save(session);
    const lines = readFileSync(path, 'utf8').trim().split('\n');
    expect(lines[1]).toBe(state);
    expect(lines).toHaveLength(4);
  });
});

describe('session location', () => {
  async function dirs() {
    const base = await mkdtemp(join(tmpdir(), 'nb-loc-'));
    return { data: join(base, 'data'), ws: join(base, 'ws'), base };
  }

  it('uses a 32-hex workspace id, a private folder and a .workspace marker, like nanobot', async () => {
    const { data, ws } = await dirs();
    const dir = await sessionsDirFor(data, ws);
    const id = readFileSync(join(ws, '.nanobot', 'workspace-id'), 'utf8').trim();
    expect(id).toMatch(/^[0-9a-f]{32}$/);
    expect(dir).toBe(join(data, 'sessions', id));
    expect(readFileSync(join(dir, '.workspace'), 'utf8').trim()).toBe(ws);
    expect(statSync(join(data, 'sessions')).mode & 0o777).toBe(0o700);
    expect(await sessionsDirFor(data, ws)).toBe(dir);
  });

  it('finds the sessions again when the workspace id file was deleted', async () => {
    const { data, ws } = await dirs();
    const dir = await sessionsDirFor(data, ws);
    rmSync(join(ws, '.nanobot'), { recursive: true });
    expect(await sessionsDirFor(data, ws)).toBe(dir);
  });

  it('gives a copied workspace its own sessions', async () => {
    const { data, ws, base } = await dirs();
    const original = await sessionsDirFor(data, ws);
    const copy = join(base, 'ws-copy');
    cpSync(ws, copy, { recursive: true });
    const copied = await sessionsDirFor(data, copy);
    expect(copied).not.toBe(original);
    expect(await sessionsDirFor(data, ws)).toBe(original);
  });

  it('refuses to keep sessions inside the workspace', async () => {
    const { ws } = await dirs();
    await expect(sessionsDirFor(join(ws, 'inner'), ws)).rejects.toThrow(/inside the workspace/);
  });
});
