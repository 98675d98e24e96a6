import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createPathPolicy } from '../../src/security/workspace.js';
import { createApplyPatchTool } from '../../src/tools/filesystem/apply-patch.js';
import { makeContext, makeTempDir, textOf } from './helpers.js';

type PatchArgs = Parameters<ReturnType<typeof createApplyPatchTool>['execute']>[0];

function setup() {
  const workspace = makeTempDir();
  const tool = createApplyPatchTool({ policy: createPathPolicy({ workspace, restrictToWorkspace: true }) });
  const file = (name: string) => path.join(workspace, name);
  const write = (name: string, content: string) => {
    fs.mkdirSync(path.dirname(file(name)), { recursive: true });
    fs.writeFileSync(file(name), content);
  };
  const read = (name: string) => fs.readFileSync(file(name), 'utf8');
  const exists = (name: string) => fs.existsSync(file(name));
  const patch = (edits: PatchArgs['edits'], dryRun?: boolean) =>
    tool.execute({ edits, ...(dryRun === undefined ? {} : { dry_run: dryRun }) }, makeContext());
  return { workspace, tool, file, write, read, exists, patch };
}

describe('apply_patch', () => {
  it('applies replace and add edits across files and summarises each file', async () => {
    const { write, read, patch } = setup();
    write('notes.md', '# Notes\n\nfirst\nsecond\n');
    const result = await patch([
      { path: 'notes.md', action: 'replace', old_text: 'first\n', new_text: 'one\ntwo\nthree\n' },
      { path: 'docs/new.txt', action: 'add', new_text: 'hello\nworld\n' },
    ]);
    expect(result.isError).toBeFalsy();
    expect(read('notes.md')).toBe('# Notes\n\none\ntwo\nthree\nsecond\n');
    expect(read('docs/new.txt')).toBe('hello\nworld\n');
    expect(textOf(result)).toContain('M notes.md (+3 −1)');
    expect(textOf(result)).toContain('A docs/new.txt (+2)');
    expect(textOf(result)).toMatch(/^Applied 2 edits to 2 files/);
  });

  it('applies several edits to the same file in order', async () => {
    const { write, read, patch } = setup();
    write('a.ts', 'const x = 1;\nconst y = 2;\n');
    const result = await patch([
      { path: 'a.ts', action: 'replace', old_text: 'const x = 1;', new_text: 'const x = 10;' },
      { path: 'a.ts', action: 'replace', old_text: 'const x = 10;\nconst y = 2;', new_text: 'const xy = 12;' },
    ]);
    expect(result.isError).toBeFalsy();
    expect(read('a.ts')).toBe('const xy = 12;\n');
    expect(textOf(result)).toMatch(/Applied 2 edits to 1 file:\nM a\.ts/);
  });

  it('lets a later edit change a file added earlier in the same patch', async () => {
    const { read, patch } = setup();
    const result = await patch([
      { path: 'new.txt', action: 'add', new_text: 'alpha\nbeta\n' },
      { path: 'new.txt', action: 'replace', old_text: 'beta', new_text: 'BETA' },
    ]);
    expect(result.isError).toBeFalsy();
    expect(read('new.txt')).toBe('alpha\nBETA\n');
    expect(textOf(result)).toContain('A new.txt (+2)');
  });

  it('rolls back when a late edit fails validation: earlier edits are not written', async () => {
    const { write, read, exists, patch } = setup();
    write('a.txt', 'alpha\n');
    write('b.txt', 'beta\n');
    const result = await patch([
      { path: 'a.txt', action: 'replace', old_text: 'alpha', new_text: 'ALPHA' },
      { path: 'created.txt', action: 'add', new_text: 'new\n' },
      { path: 'b.txt', action: 'replace', old_text: 'missing text', new_text: 'x' },
    ]);
    expect(result.isError).toBe(true);
    expect(textOf(result)).toMatch(/edit 3 of 3 \(b\.txt\): old_text was not found/);
    expect(textOf(result)).toMatch(/No files were changed/);
    expect(read('a.txt')).toBe('alpha\n');
    expect(read('b.txt')).toBe('beta\n');
    expect(exists('created.txt')).toBe(false);
  });

  it('rolls back files already written when a late write fails', async () => {
    const { write, read, exists, patch } = setup();
    write('a.txt', 'alpha\n');
    // A regular file where the last edit needs a directory: validation passes, the write itself fails.
    write('blocker', 'not a directory\n');
    const result = await patch([
      { path: 'a.txt', action: 'replace', old_text: 'alpha', new_text: 'ALPHA' },
      { path: 'fresh/dir/new.txt', action: 'add', new_text: 'new\n' },
      { path: 'blocker/inner.txt', action: 'add', new_text: 'x\n' },
    ]);
    expect(result.isError).toBe(true);
    expect(textOf(result)).toMatch(/could not write blocker\/inner\.txt/);
    expect(textOf(result)).toMatch(/Rolled back the 2 file\(s\) already written/);
    expect(read('a.txt')).toBe('alpha\n');
    expect(exists('fresh/dir/new.txt')).toBe(false);
    expect(exists('fresh')).toBe(false);
    expect(read('blocker')).toBe('not a directory\n');
  });

  it('rejects an ambiguous old_text and lists the candidate lines', async () => {
    const { write, read, patch } = setup();
    write('dup.txt', 'value = 1\nother\nvalue = 1\n');
    const result = await patch([{ path: 'dup.txt', action: 'replace', old_text: 'value = 1', new_text: 'value = 2' }]);
    expect(result.isError).toBe(true);
    expect(textOf(result)).toMatch(/matches 2 locations in dup\.txt \(lines 1, 3\)/);
    expect(read('dup.txt')).toBe('value = 1\nother\nvalue = 1\n');
  });

  it('dry_run reports the changes and writes nothing', async () => {
    const { write, read, exists, patch } = setup();
    write('a.txt', 'alpha\n');
    const result = await patch(
      [
        { path: 'a.txt', action: 'replace', old_text: 'alpha', new_text: 'ALPHA' },
        { path: 'b.txt', action: 'add', new_text: 'b\n' },
      ],
      true,
    );
    expect(result.isError).toBeFalsy();
    expect(textOf(result)).toMatch(/^Dry run, nothing written/);
    expect(textOf(result)).toContain('M a.txt (+1 −1)');
    expect(textOf(result)).toContain('A b.txt (+1)');
    expect(read('a.txt')).toBe('alpha\n');
    expect(exists('b.txt')).toBe(false);
  });

  it('refuses to add a file that already exists', async () => {
    const { write, read, patch } = setup();
    write('a.txt', 'keep me\n');
    const result = await patch([{ path: 'a.txt', action: 'add', new_text: 'replaced\n' }]);
    expect(result.isError).toBe(true);
    expect(textOf(result)).toMatch(/already exists/);
    expect(read('a.txt')).toBe('keep me\n');
  });

  it('refuses to add the same new file twice in one patch', async () => {
    const { exists, patch } = setup();
    const result = await patch([
      { path: 'n.txt', action: 'add', new_text: '1\n' },
      { path: 'n.txt', action: 'add', new_text: '2\n' },
    ]);
    expect(result.isError).toBe(true);
    expect(exists('n.txt')).toBe(false);
  });

  it('rejects the delete action at the schema level', () => {
    const { tool } = setup();
    const parsed = tool.parameters.safeParse({ edits: [{ path: 'a.txt', action: 'delete' }] });
    expect(parsed.success).toBe(false);
    expect(JSON.stringify(parsed.error?.issues)).toMatch(/deleting files is not supported/);
  });

  it('limits a patch to 20 edits', () => {
    const { tool } = setup();
    const edits = Array.from({ length: 21 }, (_, i) => ({ path: `f${i}.txt`, action: 'add' as const, new_text: '' }));
    expect(tool.parameters.safeParse({ edits }).success).toBe(false);
    expect(tool.parameters.safeParse({ edits: [] }).success).toBe(false);
  });

  it('uses the edit_file matching cascade and keeps CRLF line endings and the BOM', async () => {
    const { write, read, patch } = setup();
    write('win.py', '\uFEFFdef f():\r\n    if x:\r\n        return 1\r\n');
    const result = await patch([
      { path: 'win.py', action: 'replace', old_text: 'if x:\n    return 1', new_text: 'if x:\n    return 2' },
    ]);
    expect(result.isError).toBeFalsy();
    expect(textOf(result)).toMatch(/matched ignoring indentation/);
    expect(read('win.py')).toBe('\uFEFFdef f():\r\n    if x:\r\n        return 2\r\n');
  });

  it('requires old_text for replace and an existing file', async () => {
    const { patch } = setup();
    const noOld = await patch([{ path: 'a.txt', action: 'replace', new_text: 'x' }]);
    expect(textOf(noOld)).toMatch(/old_text is required/);
    const missing = await patch([{ path: 'nope.txt', action: 'replace', old_text: 'a', new_text: 'b' }]);
    expect(textOf(missing)).toMatch(/file not found: nope\.txt/);
  });

  it('refuses a no-op replacement', async () => {
    const { write, patch } = setup();
    write('a.txt', 'same\n');
    const result = await patch([{ path: 'a.txt', action: 'replace', old_text: 'same', new_text: 'same' }]);
    expect(result.isError).toBe(true);
    expect(textOf(result)).toMatch(/would change nothing/);
  });

  it('refuses paths outside the workspace before writing anything', async () => {
    const { write, read, patch } = setup();
    write('a.txt', 'alpha\n');
    const result = await patch([
      { path: 'a.txt', action: 'replace', old_text: 'alpha', new_text: 'ALPHA' },
      { path: '../escape.txt', action: 'add', new_text: 'x' },
    ]);
    expect(result.isError).toBe(true);
    expect(textOf(result)).toMatch(/outside the workspace/);
    expect(read('a.txt')).toBe('alpha\n');
  });

  it('keeps the execute bit of a patched script', async () => {
    const { write, file, patch } = setup();
    write('run.sh', 'echo hi\n');
    fs.chmodSync(file('run.sh'), 0o755);
    await patch([{ path: 'run.sh', action: 'replace', old_text: 'hi', new_text: 'hello' }]);
    expect(fs.statSync(file('run.sh')).mode & 0o777).toBe(0o755);
  });
});
