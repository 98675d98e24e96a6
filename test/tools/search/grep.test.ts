import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createPathPolicy } from '../../../src/security/workspace.js';
import { createGrepTool } from '../../../src/tools/search/grep.js';
import { makeContext, makeTempDir, textOf } from '../helpers.js';

type GrepArgs = Parameters<ReturnType<typeof createGrepTool>['execute']>[0];

function setup(files: Record<string, string | Buffer> = {}) {
  const workspace = makeTempDir();
  for (const [name, content] of Object.entries(files)) {
    const file = path.join(workspace, name);
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, content);
  }
  const tool = createGrepTool({ policy: createPathPolicy({ workspace, restrictToWorkspace: true }) });
  const grep = async (args: Partial<GrepArgs> & { pattern: string }) => {
    const result = await tool.execute(args, makeContext());
    return { result, text: textOf(result) };
  };
  return { workspace, tool, grep };
}

describe('grep output modes', () => {
  const files = {
    'src/a.ts': 'import x from "y";\nconst needle = 1;\nexport default needle;\n',
    'src/b.py': 'needle = 2\n',
    'docs/readme.md': 'no match here\n',
    'z.txt': 'needle\nneedle\nneedle\n',
  };

  it('lists matching files, sorted, by default', async () => {
    const { grep } = setup(files);
    const { result, text } = await grep({ pattern: 'needle' });
    expect(result.isError).toBeFalsy();
    expect(text).toBe('src/a.ts\nsrc/b.py\nz.txt');
  });

  it('shows matching lines as path:line: text in content mode', async () => {
    const { grep } = setup(files);
    const { text } = await grep({ pattern: 'needle', output_mode: 'content', path: 'src' });
    expect(text).toBe('src/a.ts:2: const needle = 1;\nsrc/a.ts:3: export default needle;\nsrc/b.py:1: needle = 2');
  });

  it('counts matching lines per file', async () => {
    const { grep } = setup(files);
    const { text } = await grep({ pattern: 'needle', output_mode: 'count' });
    expect(text).toBe('src/a.ts:2\nsrc/b.py:1\nz.txt:3');
  });

  it('adds context lines as path-line- text and merges overlapping context', async () => {
    const { grep } = setup({ 'f.txt': 'l1\nl2\nhit3\nl4\nhit5\nl6\nl7\nl8\nl9\nhit10\n' });
    const { text } = await grep({ pattern: 'hit', output_mode: 'content', context_before: 1, context_after: 1 });
    expect(text).toBe(
      [
        'f.txt-2- l2',
        'f.txt:3: hit3',
        'f.txt-4- l4',
        'f.txt:5: hit5',
        'f.txt-6- l6',
        '--',
        'f.txt-9- l9',
        'f.txt:10: hit10',
      ].join('\n'),
    );
  });

  it('separates files with -- when context is shown', async () => {
    const { grep } = setup({ 'a.txt': 'x\nhit\n', 'b.txt': 'hit\ny\n' });
    const { text } = await grep({ pattern: 'hit', output_mode: 'content', context_after: 1 });
    expect(text).toBe('a.txt:2: hit\n--\nb.txt:1: hit\nb.txt-2- y');
  });

  it('stops when the turn is aborted', async () => {
    const { tool } = setup(files);
    const controller = new AbortController();
    controller.abort();
    const result = await tool.execute({ pattern: 'needle' }, makeContext({ signal: controller.signal }));
    expect(result.isError).toBe(true);
    expect(textOf(result)).toMatch(/aborted/);
  });

  it('pages with head_limit and offset and says how to get the next page', async () => {
    const many = Object.fromEntries(
      Array.from({ length: 12 }, (_, i) => [`f${String(i).padStart(2, '0')}.txt`, 'hit\n']),
    );
    const { grep } = setup(many);
    const first = await grep({ pattern: 'hit', head_limit: 5 });
    expect(first.text.split('\n').slice(0, 5)).toEqual(['f00.txt', 'f01.txt', 'f02.txt', 'f03.txt', 'f04.txt']);
    expect(first.text).toMatch(/Use offset=5/);
    const second = await grep({ pattern: 'hit', head_limit: 5, offset: 10 });
    expect(second.text).toMatch(/^f10\.txt\nf11\.txt\n\n\(Showing files 11–12; no more\.\)$/);
  });

  it('pages content mode by matching line', async () => {
    const { grep } = setup({ 'z.txt': 'hit1\nhit2\nhit3\nhit4\n' });
    const { text } = await grep({ pattern: 'hit', output_mode: 'content', head_limit: 2, offset: 1 });
    expect(text).toMatch(/^z\.txt:2: hit2\nz\.txt:3: hit3\n\n\(Showing matching lines 2–3; more exist\. Use offset=3/);
  });

  it('supports case_insensitive, fixed_strings and a leading (?i)', async () => {
    const { grep } = setup({ 'a.txt': 'Hello World\n', 'b.txt': 'price: $5.00 (approx)\n' });
    expect((await grep({ pattern: 'hello' })).text).toMatch(/^No matches/);
    expect((await grep({ pattern: 'hello', case_insensitive: true })).text).toBe('a.txt');
    expect((await grep({ pattern: '(?i)WORLD' })).text).toBe('a.txt');
    expect((await grep({ pattern: '$5.00 (', fixed_strings: true })).text).toBe('b.txt');
  });

  it('reports an invalid regex clearly', async () => {
    const { grep } = setup({ 'a.txt': 'x\n' });
    const { result, text } = await grep({ pattern: 'foo(' });
    expect(result.isError).toBe(true);
    expect(text).toMatch(/invalid regular expression "foo\(".*fixed_strings/s);
  });

  it('filters by glob and by type', async () => {
    const { grep } = setup(files);
    expect((await grep({ pattern: 'needle', glob: '*.py' })).text).toBe('src/b.py');
    expect((await grep({ pattern: 'needle', glob: 'src/**/*.ts' })).text).toBe('src/a.ts');
    expect((await grep({ pattern: 'needle', type: 'ts' })).text).toBe('src/a.ts');
    expect((await grep({ pattern: 'needle', type: 'python' })).text).toBe('src/b.py');
  });

  it('searches a single file given as path', async () => {
    const { grep } = setup(files);
    expect((await grep({ pattern: 'needle', path: 'z.txt', output_mode: 'count' })).text).toBe('z.txt:3');
  });

  it('keeps CRLF out of matched text and anchors $ at the line end', async () => {
    const { grep } = setup({ 'w.txt': 'alpha\r\nbeta\r\n' });
    expect((await grep({ pattern: 'alpha$', output_mode: 'content' })).text).toBe('w.txt:1: alpha');
  });
});

describe('grep skipping', () => {
  it('honours .gitignore, nested .gitignore files and negations', async () => {
    const { grep } = setup({
      '.gitignore': 'build/\n*.log\n',
      'build/out.js': 'needle\n',
      'app.log': 'needle\n',
      'keep.txt': 'needle\n',
      'pkg/.gitignore': 'secret.txt\n!important.log\n',
      'pkg/secret.txt': 'needle\n',
      'pkg/important.log': 'needle\n',
      'pkg/visible.txt': 'needle\n',
    });
    expect((await grep({ pattern: 'needle' })).text).toBe('keep.txt\npkg/important.log\npkg/visible.txt');
  });

  it('honours the workspace .gitignore when searching a subdirectory', async () => {
    const { grep } = setup({ '.gitignore': 'src/gen/\n', 'src/gen/x.ts': 'needle\n', 'src/y.ts': 'needle\n' });
    expect((await grep({ pattern: 'needle', path: 'src' })).text).toBe('src/y.ts');
  });

  it('skips .git and node_modules', async () => {
    const { grep } = setup({ '.git/config': 'needle\n', 'node_modules/m/index.js': 'needle\n', 'a.js': 'needle\n' });
    expect((await grep({ pattern: 'needle' })).text).toBe('a.js');
  });

  it('skips binary files and files over 2 MB', async () => {
    const binary = Buffer.concat([Buffer.from('needle'), Buffer.from([0, 1, 2]), Buffer.from('needle')]);
    const { grep } = setup({
      'bin.dat': binary,
      'big.txt': `needle\n${'x'.repeat(2 * 1024 * 1024)}`,
      'small.txt': 'needle\n',
    });
    const { text } = await grep({ pattern: 'needle' });
    expect(text).toMatch(/^small\.txt\n\(1 file\(s\) over 2 MB skipped\)$/);
  });

  it('does not follow symlinks while walking', async () => {
    const outside = makeTempDir('nanobot-outside-');
    fs.writeFileSync(path.join(outside, 'secret.txt'), 'needle\n');
    const { workspace, grep } = setup({ 'a.txt': 'needle\n' });
    fs.symlinkSync(outside, path.join(workspace, 'linkdir'));
    fs.symlinkSync(path.join(outside, 'secret.txt'), path.join(workspace, 'link.txt'));
    expect((await grep({ pattern: 'needle' })).text).toBe('a.txt');
  });

  it('clips very long lines around the match', async () => {
    const { grep } = setup({ 'min.js': `${'a'.repeat(5000)}needle${'b'.repeat(5000)}\n` });
    const { text } = await grep({ pattern: 'needle', output_mode: 'content' });
    expect(text).toContain('needle');
    expect(text.length).toBeLessThan(500);
  });

  it('stops early in files_with_matches mode once the page is full', async () => {
    const many = Object.fromEntries(
      Array.from({ length: 300 }, (_, i) => [`d/f${String(i).padStart(3, '0')}.txt`, 'hit\n']),
    );
    const { grep } = setup(many);
    const { text } = await grep({ pattern: 'hit', head_limit: 3 });
    expect(text).toMatch(/^d\/f000\.txt\nd\/f001\.txt\nd\/f002\.txt\n\n\(Showing files 1–3; more exist/);
  });
});
