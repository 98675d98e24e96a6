import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createPathPolicy } from '../../../src/security/workspace.js';
import { createFindFilesTool } from '../../../src/tools/search/find-files.js';
import { makeContext, makeTempDir, textOf } from '../helpers.js';

type FindArgs = Parameters<ReturnType<typeof createFindFilesTool>['execute']>[0];

const tree = {
  'README.md': '',
  'src/index.ts': '',
  'src/util/strings.ts': '',
  'src/util/strings.test.ts': '',
  'src/App.tsx': '',
  'scripts/build.mjs': '',
  'docs/guide.md': '',
  'notes/Meeting Notes.txt': '',
};

function setup(files: Record<string, string> = tree) {
  const workspace = makeTempDir();
  for (const [name, content] of Object.entries(files)) {
    const file = path.join(workspace, name);
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, content);
  }
  const tool = createFindFilesTool({ policy: createPathPolicy({ workspace, restrictToWorkspace: true }) });
  const find = async (args: FindArgs = {}) => {
    const result = await tool.execute(args, makeContext());
    return { result, text: textOf(result) };
  };
  return { workspace, find };
}

describe('find_files', () => {
  it('lists every file, workspace-relative and sorted by path', async () => {
    const { find } = setup();
    const { result, text } = await find();
    expect(result.isError).toBeFalsy();
    expect(text.split('\n')).toEqual([
      'README.md',
      'docs/guide.md',
      'notes/Meeting Notes.txt',
      'scripts/build.mjs',
      'src/App.tsx',
      'src/index.ts',
      'src/util/strings.test.ts',
      'src/util/strings.ts',
    ]);
  });

  it('matches a glob on the name, or on the path when it has a slash', async () => {
    const { find } = setup();
    expect((await find({ glob: '*.md' })).text).toBe('README.md\ndocs/guide.md');
    expect((await find({ glob: 'src/**/*.test.ts' })).text).toBe('src/util/strings.test.ts');
    expect((await find({ glob: '*.{ts,tsx}', path: 'src' })).text.split('\n')).toHaveLength(4);
  });

  it('matches query case-insensitively against the name', async () => {
    const { find } = setup();
    expect((await find({ query: 'meeting' })).text).toBe('notes/Meeting Notes.txt');
    expect((await find({ query: 'STRINGS test' })).text).toBe('src/util/strings.test.ts');
    expect((await find({ query: 'util/' })).text).toBe('src/util/strings.test.ts\nsrc/util/strings.ts');
  });

  it('filters by file type, or lists directories with type "dir"', async () => {
    const { find } = setup();
    expect((await find({ type: 'ts' })).text.split('\n')).toEqual([
      'src/App.tsx',
      'src/index.ts',
      'src/util/strings.test.ts',
      'src/util/strings.ts',
    ]);
    expect((await find({ type: 'dir' })).text).toBe('docs/\nnotes/\nscripts/\nsrc/\nsrc/util/');
    expect((await find({ type: 'dir', query: 'ut' })).text).toBe('src/util/');
  });

  it('sorts by modification time, newest first', async () => {
    const { workspace, find } = setup({ 'old.txt': '', 'mid.txt': '', 'new.txt': '' });
    const at = (name: string, seconds: number) => fs.utimesSync(path.join(workspace, name), seconds, seconds);
    at('old.txt', 1_000_000);
    at('mid.txt', 2_000_000);
    at('new.txt', 3_000_000);
    expect((await find({ sort: 'mtime' })).text).toBe('new.txt\nmid.txt\nold.txt');
    expect((await find({ sort: 'name' })).text).toBe('mid.txt\nnew.txt\nold.txt');
  });

  it('pages with head_limit and offset', async () => {
    const { find } = setup();
    const first = await find({ head_limit: 3 });
    expect(first.text).toMatch(
      /^README\.md\ndocs\/guide\.md\nnotes\/Meeting Notes\.txt\n\n\(Showing files 1–3; more exist\. Use offset=3/,
    );
    const last = await find({ head_limit: 3, offset: 6 });
    expect(last.text).toBe('src/util/strings.test.ts\nsrc/util/strings.ts\n\n(Showing files 7–8; no more.)');
  });

  it('honours .gitignore and skips .git and node_modules', async () => {
    const { find } = setup({
      '.gitignore': 'dist/\n*.tmp\n',
      'dist/bundle.js': '',
      'x.tmp': '',
      '.git/HEAD': '',
      'node_modules/lib/index.js': '',
      'src/keep.js': '',
      'src/.gitignore': 'local.js\n',
      'src/local.js': '',
    });
    expect((await find({ glob: '*.js' })).text).toBe('src/keep.js');
    expect((await find({ type: 'dir' })).text).toBe('src/');
  });

  it('accepts a single file as path', async () => {
    const { find } = setup();
    expect((await find({ path: 'src/index.ts' })).text).toBe('src/index.ts');
    expect((await find({ path: 'src/index.ts', type: 'md' })).text).toBe('No files found.');
  });

  it('reports when nothing matches and refuses paths outside the workspace', async () => {
    const { find } = setup();
    expect((await find({ query: 'nothing-like-this' })).text).toBe('No files found.');
    const outside = await find({ path: '..' });
    expect(outside.result.isError).toBe(true);
    expect(outside.text).toMatch(/outside the workspace/);
  });
});
