/**
 * Hostile requests to the WebUI's memory API (src/webui/memory.ts), through a real gateway: commit ids shaped as git
 * options, refs, revision expressions and traversals (isomorphic-git runs no git binary, but nothing but hex must
 * reach it), wrong-typed and oversized restore payloads, an oversized or pattern-shaped history query, and memory
 * files, history.jsonl and .git planted as links out of the workspace (the sandboxed shell can do that).
 */
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryGit } from '../../src/memory/git.js';
import { startWebUiGateway, type WebUiGateway } from '../channels/websocket/gateway-helpers.js';
import { type ApiClient, apiClient } from '../webui-api/api-helpers.js';
import { DREAMT_MEMORY, type SeededMemory, seedMemory } from '../webui-api/memory-helpers.js';
import { rawRequest } from './http-helpers.js';

let run: WebUiGateway;
let api: ApiClient;
let seeded: SeededMemory;
let outside: string;
const SECRET = 'OUTSIDE-SECRET-do-not-show';

beforeAll(async () => {
  run = await startWebUiGateway();
  api = await apiClient(run);
  seeded = await seedMemory(run.workspace);
  outside = mkdtempSync(join(tmpdir(), 'nb-memory-outside-'));
  writeFileSync(join(outside, 'secret.md'), `${SECRET}\n`);
});
afterAll(async () => {
  await api.close();
  await run.close();
});

const status = (answer: Record<string, unknown>) => (answer.error as { status?: number } | undefined)?.status;
const memoryText = () => readFileSync(join(run.workspace, 'memory', 'MEMORY.md'), 'utf8');

const HOSTILE_SHAS = [
  '--output=/tmp/nb-memory-x',
  '--output',
  '-p',
  '-',
  '--',
  '../',
  '../../etc/passwd',
  '..',
  '.',
  'HEAD',
  'HEAD~1',
  'HEAD^',
  'main',
  'refs/heads/main',
  '@{-1}',
  ':/Berlin',
  'abc',
  'a'.repeat(41),
  'f'.repeat(65),
  'abcd;touch /tmp/nb-memory-x',
  'abcd$(id)',
  'abcd`id`',
  'abcd\nHEAD',
  'abcd\u0000',
  'abcd%00',
  'ghij',
  '0x1234',
  'abcd efgh',
  '/etc/passwd',
  'C:\\Windows',
  '%2e%2e%2f',
];

describe('commit ids', () => {
  it.each(HOSTILE_SHAS)('GET webui/memory/log/%j is refused, never shown', async (sha) => {
    // Sent raw, dots encoded too: fetch would resolve `..` away before it reached the gateway.
    const path = `/api/webui/memory/log/${encodeURIComponent(sha).replaceAll('.', '%2E')}`;
    const res = await rawRequest(run.port, { path, headers: { authorization: `Bearer ${run.token}` } });
    // `.` and `..` are URL dot segments: the gateway resolves them as any HTTP server does (to webui/memory/log
    // and webui/memory), so they never arrive as a commit id either.
    if (sha === '.' || sha === '..') expect(res.body).not.toContain('"diff"');
    else expect([400, 404]).toContain(res.status);
    expect(res.body).not.toContain('+- Lives in Berlin');
  });

  it.each(HOSTILE_SHAS)('memory.restore %j is a 400 and changes nothing', async (sha) => {
    const answer = await api.request('memory.restore', { sha });
    expect(answer.ok).toBe(false);
    expect(status(answer)).toBe(400);
    expect((answer.error as { message: string }).message).toMatch(/hex digits/);
    expect(memoryText()).toBe(DREAMT_MEMORY);
  });

  it.each([
    [{ sha: 1234 }],
    [{ sha: ['abcd'] }],
    [{ sha: { toString: 'abcd' } }],
    [{ sha: null }],
    [{ sha: true }],
    [{ sha: 'a'.repeat(100_000) }],
    [{}],
    [null],
    ['abcd'],
    [['abcd']],
  ])('memory.restore with payload %j is a 400', async (payload) => {
    const answer = await api.request('memory.restore', payload);
    expect(answer.ok).toBe(false);
    expect(status(answer)).toBe(400);
    expect(memoryText()).toBe(DREAMT_MEMORY);
  });

  it('no option ever reached a git that writes files', () => {
    expect(existsSync('/tmp/nb-memory-x')).toBe(false);
    expect(existsSync(join(run.workspace, '--output=', 'tmp'))).toBe(false);
  });
});

describe('history search', () => {
  it('refuses an oversized query with what the limit is', async () => {
    for (const q of ['x'.repeat(201), 'x'.repeat(10_000), '(a+)+$'.repeat(200)]) {
      const res = await api.get(`/api/webui/memory/history?q=${encodeURIComponent(q)}`);
      expect(res.status).toBe(400);
      expect(String(res.body.error)).toMatch(/at most 200/);
    }
  });

  it.each(['.*', '(a+)+$', '[', '\\', '%', '*', '^User', 'Berlin|Pi', '\u0000', '<script>alert(1)</script>'])(
    'treats %j as plain text, never as a pattern',
    async (q) => {
      const res = await api.get(`/api/webui/memory/history?q=${encodeURIComponent(q)}`);
      expect(res.status).toBe(200);
      expect(res.body.matched).toBe(0);
    },
  );
});

describe('oversized files', () => {
  it('a MEMORY.md of several MB is cut at 256 KiB and marked, never sent whole', async () => {
    const path = join(run.workspace, 'memory', 'MEMORY.md');
    const before = readFileSync(path, 'utf8');
    writeFileSync(path, 'x'.repeat(3 * 1024 * 1024));
    try {
      const res = await api.get('/api/webui/memory');
      const file = (res.body.files as { path: string; content: string; size: number; truncated: boolean }[]).find(
        (entry) => entry.path === 'memory/MEMORY.md',
      );
      expect(file).toMatchObject({ size: 3 * 1024 * 1024, truncated: true });
      expect(file?.content.length).toBe(256 * 1024);
    } finally {
      writeFileSync(path, before);
    }
  });
});

describe('links out of the workspace', () => {
  it.each(['memory/MEMORY.md', 'SOUL.md', 'USER.md'])(
    'a %s linked to a file outside is refused, not read',
    async (file) => {
      const path = join(run.workspace, file);
      const before = readFileSync(path, 'utf8');
      rmSync(path);
      symlinkSync(join(outside, 'secret.md'), path);
      try {
        const res = await api.get('/api/webui/memory');
        expect(res.status).toBe(200);
        expect(JSON.stringify(res.body)).not.toContain(SECRET);
        const shown = (res.body.files as { path: string; exists: boolean; error: string | null }[]).find(
          (entry) => entry.path === file,
        );
        expect(shown?.exists).toBe(false);
        expect(shown?.error).toMatch(/outside|link/i);
      } finally {
        rmSync(path);
        writeFileSync(path, before);
      }
    },
  );

  it('a memory/ directory linked outside is refused for every file in it', async () => {
    const other = mkdtempSync(join(tmpdir(), 'nb-memory-dir-'));
    writeFileSync(join(other, 'MEMORY.md'), `${SECRET}\n`);
    writeFileSync(join(other, 'history.jsonl'), `${JSON.stringify({ cursor: 9, timestamp: '', content: SECRET })}\n`);
    const memoryDir = join(run.workspace, 'memory');
    const moved = join(run.workspace, 'memory-real');
    rmSync(moved, { recursive: true, force: true });
    renameSync(memoryDir, moved);
    symlinkSync(other, memoryDir);
    try {
      for (const route of ['/api/webui/memory', '/api/webui/memory/history', '/api/webui/memory/history?q=OUTSIDE']) {
        const res = await api.get(route);
        expect(res.status).toBe(200);
        expect(JSON.stringify(res.body)).not.toContain(SECRET);
      }
    } finally {
      rmSync(memoryDir);
      renameSync(moved, memoryDir);
    }
  });

  it('a history.jsonl linked outside is not read', async () => {
    const path = join(run.workspace, 'memory', 'history.jsonl');
    const before = readFileSync(path, 'utf8');
    writeFileSync(join(outside, 'history.jsonl'), `${JSON.stringify({ cursor: 9, timestamp: '', content: SECRET })}\n`);
    rmSync(path);
    symlinkSync(join(outside, 'history.jsonl'), path);
    try {
      const res = await api.get(`/api/webui/memory/history?q=${encodeURIComponent('OUTSIDE')}`);
      expect(res.status).toBe(200);
      expect(JSON.stringify(res.body)).not.toContain(SECRET);
    } finally {
      rmSync(path);
      writeFileSync(path, before);
    }
  });

  it('a .git linked to a repository outside shows none of its commits and restores nothing from it', async () => {
    const foreign = mkdtempSync(join(tmpdir(), 'nb-memory-repo-'));
    mkdirSync(join(foreign, 'memory'), { recursive: true });
    writeFileSync(join(foreign, 'memory', 'MEMORY.md'), `${SECRET}\n`);
    const foreignGit = new MemoryGit(foreign);
    await foreignGit.init();
    writeFileSync(join(foreign, 'memory', 'MEMORY.md'), 'changed\n');
    const foreignSha = (await foreignGit.commitChanges('foreign change')) ?? '';
    const gitDir = join(run.workspace, '.git');
    const moved = join(run.workspace, 'git-real');
    renameSync(gitDir, moved);
    symlinkSync(join(foreign, '.git'), gitDir);
    try {
      const log = await api.get('/api/webui/memory/log');
      expect(JSON.stringify(log.body)).not.toContain('foreign change');
      const shown = await api.get(`/api/webui/memory/log/${foreignSha}`);
      expect(shown.status).not.toBe(200);
      expect(JSON.stringify(shown.body)).not.toContain(SECRET);
      const answer = await api.request('memory.restore', { sha: foreignSha });
      expect(answer.ok).toBe(false);
      expect(memoryText()).toBe(DREAMT_MEMORY);
    } finally {
      rmSync(gitDir);
      renameSync(moved, gitDir);
    }
    expect((await api.get(`/api/webui/memory/log/${seeded.dream}`)).status).toBe(200);
  });

  it('restoring over a MEMORY.md replaced by a link writes the workspace file, never the link’s target', async () => {
    const path = join(run.workspace, 'memory', 'MEMORY.md');
    const target = join(outside, 'target.md');
    writeFileSync(target, `${SECRET}\n`);
    rmSync(path);
    symlinkSync(target, path);
    try {
      const answer = await api.request('memory.restore', { sha: seeded.dream });
      // Either refused, or the link itself was replaced by the restored file: the target stays as it was.
      expect(readFileSync(target, 'utf8')).toBe(`${SECRET}\n`);
      expect(JSON.stringify(answer)).not.toContain(SECRET);
    } finally {
      rmSync(path, { force: true });
      writeFileSync(path, DREAMT_MEMORY);
    }
  });
});
