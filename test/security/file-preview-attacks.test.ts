/**
 * `GET /api/sessions/<key>/file-preview?path=…` against a real gateway: a file the agent wrote is shown in every
 * spelling a chat gives it; nothing outside the workspace is read, whatever the spelling (traversal, absolute paths,
 * `file://` URLs, percent-encoded once or twice, `:line` suffixes, symlinks to files and directories outside, /proc),
 * and FIFOs, directories and binaries are refused with nanobot's status codes. The probe form answers `available`.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWebUiGateway, type WebUiGateway } from '../channels/websocket/gateway-helpers.js';

const SECRET = 'TOP-SECRET-7f3a';
let run: WebUiGateway;
const KEY = encodeURIComponent('websocket:chat-1');

beforeAll(async () => {
  run = await startWebUiGateway([]);
  writeFileSync(join(run.home, 'secret.txt'), `${SECRET}\n`);
  writeFileSync(join(run.dataDir, 'secret.md'), `${SECRET}\n`);
  writeFileSync(join(run.workspace, 'notes.md'), '# Notes\nhello\n');
  mkdirSync(join(run.workspace, 'sub dir'));
  writeFileSync(join(run.workspace, 'sub dir', 'code.ts'), 'export const x = 1;\n');
  writeFileSync(join(run.workspace, 'blob.bin'), Buffer.from([1, 2, 0, 3]));
  writeFileSync(join(run.workspace, 'big.txt'), 'a'.repeat(400 * 1024));
  symlinkSync(join(run.home, 'secret.txt'), join(run.workspace, 'link-out'));
  symlinkSync('../../secret.txt', join(run.workspace, 'rel-link-out'));
  symlinkSync(run.home, join(run.workspace, 'dir-out'));
  symlinkSync('notes.md', join(run.workspace, 'inner-link'));
  execFileSync('mkfifo', [join(run.workspace, 'pipe')]);
});
afterAll(async () => {
  await run?.close();
});

async function preview(path: string, extra = '', key = KEY) {
  const res = await fetch(`${run.url}/api/sessions/${key}/file-preview?path=${encodeURIComponent(path)}${extra}`, {
    headers: { authorization: `Bearer ${run.token}` },
  });
  const text = await res.text();
  return { status: res.status, text, body: JSON.parse(text) as Record<string, unknown> };
}

describe('file-preview', () => {
  it('shows a workspace file in each spelling a chat gives it, in nanobot’s shape', async () => {
    const ws = run.workspace;
    const first = await preview('notes.md');
    expect(first).toMatchObject({ status: 200 });
    expect(first.body).toEqual({
      path: join(ws, 'notes.md'),
      display_path: 'notes.md',
      project_path: ws,
      language: 'markdown',
      content: '# Notes\nhello\n',
      size: 14,
      truncated: false,
    });
    for (const spelling of [
      join(ws, 'notes.md'),
      `file://${join(ws, 'notes.md')}`,
      'notes.md:12',
      'notes.md:12:3',
      './notes.md',
      'sub dir/../notes.md',
      'inner-link',
      'notes%2Emd',
      'notes.md?raw=1',
      'notes.md#L2',
    ])
      expect([spelling, (await preview(spelling)).body.content]).toEqual([spelling, '# Notes\nhello\n']);
    expect((await preview('sub%20dir/code.ts')).body).toMatchObject({
      display_path: 'sub dir/code.ts',
      language: 'typescript',
    });
    const big = await preview('big.txt');
    expect(big.body).toMatchObject({ truncated: true, size: 400 * 1024 });
    expect((big.body.content as string).length).toBe(384 * 1024);
    expect((await preview('notes.md', '&probe=1')).body).toEqual({ available: true });
  });

  it('reads nothing outside the workspace, in any spelling', async () => {
    const outside = [
      '../secret.md',
      '../../secret.txt',
      'sub dir/../../secret.md',
      '%2e%2e/secret.md',
      '%252e%252e/secret.md',
      '..%2fsecret.md',
      '..%252fsecret.md',
      '../secret.md:3',
      '../secret.md?x=1',
      '../secret.md#x',
      join(run.dataDir, 'secret.md'),
      join(run.home, 'secret.txt'),
      `${run.workspace}/../secret.md`,
      `file://${join(run.home, 'secret.txt')}`,
      `file://localhost${join(run.home, 'secret.txt')}`,
      `file://${run.workspace}/%2e%2e/secret.md`,
      join(run.dataDir, 'config.json'),
      '../config.json',
      '/etc/passwd',
      'file:///etc/passwd',
      '/proc/self/environ',
      '/proc/self/root/etc/passwd',
      `/proc/self/cwd/../secret.md`,
      'link-out',
      'rel-link-out',
      'dir-out/secret.txt',
      'dir-out/.nanobot/secret.md',
      'dir-out/.nanobot/config.json',
      `${run.workspace}/link-out`,
      '~/secret.txt',
      '//etc/passwd',
      '\\..\\secret.md',
      '..\\secret.md',
      'notes.md\u0000../../secret.md',
      'notes.md%00',
      '%',
      '',
      '   ',
      'x'.repeat(5000),
    ];
    let blocked = 0;
    for (const spelling of outside) {
      for (const extra of ['', '&probe=1']) {
        const answer = await preview(spelling, extra);
        const refused = extra ? answer.body.available === false : [400, 403, 404].includes(answer.status);
        expect([spelling, extra, refused]).toEqual([spelling, extra, true]);
        expect(answer.text).not.toContain(SECRET);
        expect(answer.text).not.toContain('test-key');
        expect(answer.text).not.toContain('root:');
        if (refused) blocked += 1;
      }
    }
    expect(blocked).toBe(outside.length * 2);
    expect((await preview('../secret.md')).body).toEqual({ error: 'file is outside the current workspace' });
    expect((await preview('link-out')).status).toBe(403);
  });

  it('refuses what is not a previewable file with nanobot’s statuses; guards the route', async () => {
    expect((await preview('blob.bin')).status).toBe(415);
    expect((await preview('blob.bin', '&probe=1')).body).toEqual({ available: false });
    expect((await preview('pipe')).status).toBe(404);
    expect((await preview('sub dir')).status).toBe(404);
    expect((await preview('missing.md')).status).toBe(404);
    expect((await preview('', '')).status).toBe(400);
    expect((await preview('notes.md', '', encodeURIComponent('telegram:1'))).status).toBe(404);
    expect((await preview('notes.md', '', encodeURIComponent('websocket:../x'))).status).toBe(400);
    const url = `${run.url}/api/sessions/${KEY}/file-preview?path=notes.md`;
    expect((await fetch(url)).status).toBe(401);
    expect((await fetch(url, { method: 'POST', headers: { authorization: `Bearer ${run.token}` } })).status).toBe(405);
    const cross = await fetch(url, {
      headers: { authorization: `Bearer ${run.token}`, origin: 'http://evil.example' },
    });
    expect(cross.status).toBe(403);
  });
});
