import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createPathPolicy } from '../../src/security/workspace.js';
import { createListDirTool } from '../../src/tools/filesystem/list-dir.js';
import { makeContext, makeTempDir, textOf } from './helpers.js';

function setup() {
  const workspace = makeTempDir();
  const tool = createListDirTool({ policy: createPathPolicy({ workspace, restrictToWorkspace: true }) });
  const touch = (name: string) => {
    fs.mkdirSync(path.dirname(path.join(workspace, name)), { recursive: true });
    fs.writeFileSync(path.join(workspace, name), '');
  };
  return { workspace, tool, touch };
}

describe('list_dir', () => {
  it('lists sorted entries with directories marked by a slash', async () => {
    const { tool, touch } = setup();
    touch('b.txt');
    touch('a.md');
    touch('src/index.ts');
    const result = await tool.execute({ path: '.' }, makeContext());
    expect(result.content).toBe('a.md\nb.txt\nsrc/');
  });

  it('recurses, skipping .git and node_modules contents', async () => {
    const { tool, touch } = setup();
    touch('src/lib/util.ts');
    touch('.git/HEAD');
    touch('node_modules/zod/index.js');
    touch('README.md');
    const text = textOf(await tool.execute({ path: '.', recursive: true }, makeContext()));
    expect(text.split('\n')).toEqual(['.git/', 'README.md', 'node_modules/', 'src/', 'src/lib/', 'src/lib/util.ts']);
  });

  it('says how many entries were omitted beyond max_entries', async () => {
    const { tool, touch } = setup();
    for (let i = 0; i < 12; i++) touch(`f${String(i).padStart(2, '0')}.txt`);
    const text = textOf(await tool.execute({ path: '.', max_entries: 5 }, makeContext()));
    expect(text.split('\n').slice(0, 5)).toEqual(['f00.txt', 'f01.txt', 'f02.txt', 'f03.txt', 'f04.txt']);
    expect(text).toMatch(/7 more entries omitted/);
  });

  it('reports empty directories, files and missing paths clearly', async () => {
    const { workspace, tool, touch } = setup();
    fs.mkdirSync(path.join(workspace, 'empty'));
    touch('file.txt');
    expect(textOf(await tool.execute({ path: 'empty' }, makeContext()))).toBe('(empty directory: empty)');
    expect(textOf(await tool.execute({ path: 'file.txt' }, makeContext()))).toMatch(/not a directory/);
    expect(textOf(await tool.execute({ path: 'missing' }, makeContext()))).toMatch(/Directory not found/);
  });

  it('does not follow a symlink out of the workspace when recursing', async () => {
    const { workspace, tool } = setup();
    const outside = makeTempDir();
    fs.writeFileSync(path.join(outside, 'secret.txt'), 's');
    fs.symlinkSync(outside, path.join(workspace, 'link'));
    const text = textOf(await tool.execute({ path: '.', recursive: true }, makeContext()));
    expect(text).not.toContain('secret.txt');
    const direct = await tool.execute({ path: 'link' }, makeContext());
    expect(direct.isError).toBe(true);
  });
});
