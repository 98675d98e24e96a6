import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createPathPolicy } from '../../src/security/workspace.js';
import { createWriteFileTool } from '../../src/tools/filesystem/write-file.js';
import { makeContext, makeTempDir, textOf } from './helpers.js';

function setup(readOnlyDirs?: string[]) {
  const workspace = makeTempDir();
  const policy = createPathPolicy({
    workspace,
    restrictToWorkspace: true,
    ...(readOnlyDirs ? { readOnlyDirs: readOnlyDirs.map((dir) => path.join(workspace, dir)) } : {}),
  });
  return { workspace, tool: createWriteFileTool({ policy }) };
}

describe('write_file', () => {
  it('creates parent directories and reports bytes and lines', async () => {
    const { workspace, tool } = setup();
    const result = await tool.execute({ path: 'a/b/c.md', content: 'héllo\nworld\n' }, makeContext());
    expect(result.isError).toBeFalsy();
    expect(textOf(result)).toBe('Created a/b/c.md: wrote 13 bytes (2 lines).');
    expect(fs.readFileSync(path.join(workspace, 'a/b/c.md'), 'utf8')).toBe('héllo\nworld\n');
  });

  it('overwrites atomically, keeps the file mode and leaves no temp files', async () => {
    const { workspace, tool } = setup();
    const script = path.join(workspace, 'run.sh');
    fs.writeFileSync(script, 'old');
    fs.chmodSync(script, 0o755);
    const inodeBefore = fs.statSync(script).ino;
    const result = await tool.execute({ path: 'run.sh', content: '#!/bin/sh\necho new\n' }, makeContext());
    expect(textOf(result)).toMatch(/^Overwrote run.sh/);
    expect(fs.readFileSync(script, 'utf8')).toBe('#!/bin/sh\necho new\n');
    expect(fs.statSync(script).mode & 0o777).toBe(0o755);
    expect(fs.statSync(script).ino).not.toBe(inodeBefore); // replaced by rename, not written in place
    expect(fs.readdirSync(workspace)).toEqual(['run.sh']);
  });

  it('refuses paths outside the workspace and in read-only directories', async () => {
    const { workspace, tool } = setup(['media']);
    const outside = await tool.execute({ path: '../escape.txt', content: 'x' }, makeContext());
    expect(outside.isError).toBe(true);
    expect(textOf(outside)).toMatch(/outside the workspace/);
    expect(fs.existsSync(path.join(workspace, '..', 'escape.txt'))).toBe(false);
    const media = await tool.execute({ path: 'media/photo.jpg', content: 'x' }, makeContext());
    expect(media.isError).toBe(true);
    expect(textOf(media)).toMatch(/read-only/);
  });

  it('refuses to replace a directory', async () => {
    const { workspace, tool } = setup();
    fs.mkdirSync(path.join(workspace, 'docs'));
    const result = await tool.execute({ path: 'docs', content: 'x' }, makeContext());
    expect(result.isError).toBe(true);
    expect(fs.statSync(path.join(workspace, 'docs')).isDirectory()).toBe(true);
  });
});
