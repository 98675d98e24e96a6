import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createPathPolicy } from '../../src/security/workspace.js';
import { createEditFileTool } from '../../src/tools/filesystem/edit-file.js';
import { makeContext, makeTempDir, textOf } from './helpers.js';

function setup() {
  const workspace = makeTempDir();
  const tool = createEditFileTool({ policy: createPathPolicy({ workspace, restrictToWorkspace: true }) });
  const file = path.join(workspace, 'file.txt');
  const write = (content: string) => fs.writeFileSync(file, content);
  const read = () => fs.readFileSync(file, 'utf8');
  const edit = (args: Partial<Parameters<typeof tool.execute>[0]>) =>
    tool.execute({ path: 'file.txt', old_text: '', new_text: '', ...args }, makeContext());
  return { workspace, file, write, read, edit };
}

describe('edit_file matching', () => {
  it('replaces a unique exact match and shows the edited lines', async () => {
    const { write, read, edit } = setup();
    write('alpha\nbeta\ngamma\n');
    const result = await edit({ old_text: 'beta', new_text: 'BETA' });
    expect(result.isError).toBeFalsy();
    expect(read()).toBe('alpha\nBETA\ngamma\n');
    expect(textOf(result)).toMatch(/^Edited file.txt: replaced 1 occurrence at line 2\./);
    expect(textOf(result)).toContain('2| BETA');
  });

  it('falls back to an indentation-insensitive match and re-indents the replacement', async () => {
    const { write, read, edit } = setup();
    write('def f():\n    if x:\n        return 1\n    return 2\n');
    const result = await edit({ old_text: 'if x:\n    return 1', new_text: 'if x:\n    log(x)\n    return 1' });
    expect(result.isError).toBeFalsy();
    expect(textOf(result)).toMatch(/ignoring indentation/);
    expect(read()).toBe('def f():\n    if x:\n        log(x)\n        return 1\n    return 2\n');
  });

  it('tolerates trailing whitespace differences', async () => {
    const { write, read, edit } = setup();
    write('key = 1   \nother = 2\n');
    await edit({ old_text: 'key = 1\nother = 2', new_text: 'key = 10\nother = 2' });
    expect(read()).toBe('key = 10\nother = 2\n');
  });

  it('matches straight quotes against curly ones and keeps the file’s curly quotes', async () => {
    const { write, read, edit } = setup();
    write('She said \u201Chello\u201D and left.\n');
    const result = await edit({ old_text: 'She said "hello"', new_text: 'She said "goodbye"' });
    expect(result.isError).toBeFalsy();
    expect(read()).toBe('She said \u201Cgoodbye\u201D and left.\n');
  });

  it('keeps curly apostrophes too', async () => {
    const { write, read, edit } = setup();
    write('It\u2019s fine.\n');
    await edit({ old_text: "It's fine.", new_text: "It's great, isn't it?" });
    expect(read()).toBe('It\u2019s great, isn\u2019t it?\n');
  });

  it('keeps CRLF line endings', async () => {
    const { write, read, edit } = setup();
    write('one\r\ntwo\r\nthree\r\n');
    await edit({ old_text: 'two\nthree', new_text: 'TWO\nTHREE\nFOUR' });
    expect(read()).toBe('one\r\nTWO\r\nTHREE\r\nFOUR\r\n');
  });
});

describe('edit_file with several matches', () => {
  const repeated = 'x = 1\ny = 2\nx = 1\nz = 3\nx = 1\n';

  it('refuses an ambiguous edit and lists the candidate lines', async () => {
    const { write, read, edit } = setup();
    write(repeated);
    const result = await edit({ old_text: 'x = 1', new_text: 'x = 9' });
    expect(result.isError).toBe(true);
    expect(textOf(result)).toMatch(/matches 3 locations \(lines 1, 3, 5\)/);
    expect(textOf(result)).toMatch(/replace_all, occurrence or line_hint/);
    expect(read()).toBe(repeated);
  });

  it('uses line_hint to pick the nearest occurrence', async () => {
    const { write, read, edit } = setup();
    write(repeated);
    const result = await edit({ old_text: 'x = 1', new_text: 'x = 9', line_hint: 4 });
    expect(textOf(result)).toMatch(/at line 3/);
    expect(read()).toBe('x = 1\ny = 2\nx = 9\nz = 3\nx = 1\n');
  });

  it('replaces the Nth occurrence, or all of them', async () => {
    const { write, read, edit } = setup();
    write(repeated);
    await edit({ old_text: 'x = 1', new_text: 'x = 9', occurrence: 3 });
    expect(read()).toBe('x = 1\ny = 2\nx = 1\nz = 3\nx = 9\n');
    write(repeated);
    const all = await edit({ old_text: 'x = 1', new_text: 'x = 0', replace_all: true });
    expect(textOf(all)).toMatch(/replaced 3 occurrences at lines 1, 3, 5/);
    expect(read()).toBe('x = 0\ny = 2\nx = 0\nz = 3\nx = 0\n');
  });

  it('checks expected_replacements before changing anything', async () => {
    const { write, read, edit } = setup();
    write(repeated);
    const wrong = await edit({ old_text: 'x = 1', new_text: 'x = 9', expected_replacements: 2 });
    expect(wrong.isError).toBe(true);
    expect(textOf(wrong)).toMatch(/expected 2 occurrence\(s\) of old_text but found 3/);
    expect(read()).toBe(repeated);
    const right = await edit({ old_text: 'x = 1', new_text: 'x = 9', expected_replacements: 3 });
    expect(right.isError).toBeFalsy();
    expect(read()).not.toContain('x = 1');
  });

  it('reports an occurrence that does not exist', async () => {
    const { write, edit } = setup();
    write(repeated);
    expect(textOf(await edit({ old_text: 'x = 1', new_text: 'x = 9', occurrence: 7 }))).toMatch(/occurs 3 time/);
  });
});

describe('edit_file errors and creation', () => {
  it('rejects a no-op edit', async () => {
    const { write, read, edit } = setup();
    write('same\n');
    const result = await edit({ old_text: 'same', new_text: 'same' });
    expect(result.isError).toBe(true);
    expect(textOf(result)).toMatch(/identical/);
    expect(read()).toBe('same\n');
  });

  it('rejects a fuzzy match whose replacement equals the file text', async () => {
    const { write, edit } = setup();
    write('    indented\n');
    const result = await edit({ old_text: 'indented  ', new_text: 'indented' });
    expect(result.isError).toBe(true);
    expect(textOf(result)).toMatch(/unchanged/);
  });

  it('shows the most similar region when old_text is not found', async () => {
    const { write, edit } = setup();
    write('function greet(name) {\n  return "Hello, " + name + "!";\n}\n\nfunction other() {}\n');
    const result = await edit({ old_text: 'function greet(nme) {\n  return "Hello " + name;', new_text: 'x' });
    expect(result.isError).toBe(true);
    const text = textOf(result);
    expect(text).toMatch(/old_text was not found in file.txt/);
    expect(text).toMatch(/most similar text \(lines 1–2/);
    expect(text).toContain('1| function greet(name) {');
  });

  it('creates a missing file when old_text is empty, and refuses to clobber a non-empty one', async () => {
    const { workspace, write, read, edit } = setup();
    const created = await edit({ path: 'new/dir/hello.md', old_text: '', new_text: '# Hi\n' });
    expect(created.isError).toBeFalsy();
    expect(fs.readFileSync(path.join(workspace, 'new/dir/hello.md'), 'utf8')).toBe('# Hi\n');
    write('keep me\n');
    const clobber = await edit({ old_text: '', new_text: 'gone' });
    expect(clobber.isError).toBe(true);
    expect(textOf(clobber)).toMatch(/already exists and is not empty/);
    expect(read()).toBe('keep me\n');
  });

  it('says how to create a file that does not exist', async () => {
    const { edit } = setup();
    const result = await edit({ path: 'missing.txt', old_text: 'a', new_text: 'b' });
    expect(textOf(result)).toMatch(/File not found: missing.txt.*old_text ""/);
  });

  it('refuses files outside the workspace', async () => {
    const { edit } = setup();
    const result = await edit({ path: '/etc/hosts', old_text: 'localhost', new_text: 'x' });
    expect(result.isError).toBe(true);
    expect(textOf(result)).toMatch(/outside the workspace/);
  });
});
