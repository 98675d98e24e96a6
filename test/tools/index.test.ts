import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createDefaultTools, ToolRegistry } from '../../src/tools/index.js';
import { makeContext, makeTempDir, textOf } from './helpers.js';

describe('createDefaultTools', () => {
  it('provides the file tools and exec, all sharing one workspace policy', async () => {
    const workspace = makeTempDir();
    const tools = createDefaultTools({ workspace, restrictToWorkspace: true, exec: {} });
    const registry = new ToolRegistry();
    for (const tool of tools) registry.register(tool);
    expect(registry.names()).toEqual([
      'apply_patch',
      'edit_file',
      'exec',
      'find_files',
      'grep',
      'list_dir',
      'read_file',
      'write_file',
    ]);
    expect(registry.isConcurrencySafe('read_file')).toBe(true);
    expect(registry.isConcurrencySafe('list_dir')).toBe(true);
    expect(registry.isConcurrencySafe('exec')).toBe(false);

    const call = (name: string, args: object) =>
      registry.execute(
        { id: name, type: 'function', function: { name, arguments: JSON.stringify(args) } },
        makeContext(),
      );
    await call('write_file', { path: 'hello.txt', content: 'hi\n' });
    expect(fs.readFileSync(path.join(workspace, 'hello.txt'), 'utf8')).toBe('hi\n');
    expect(textOf(await call('exec', { command: 'cat hello.txt' }))).toBe('hi\nExit code: 0');
    const outside = await call('read_file', { path: '/etc/hostname' });
    expect(outside.isError).toBe(true);
  });

  it('leaves exec out when it is disabled and passes exec options through', async () => {
    const workspace = makeTempDir();
    expect(
      createDefaultTools({ workspace, restrictToWorkspace: true, exec: { enable: false } }).map((tool) => tool.name),
    ).not.toContain('exec');
    expect(
      createDefaultTools({ workspace, restrictToWorkspace: true, fileTools: false, exec: {} }).map((tool) => tool.name),
    ).toEqual(['exec']);
    const tools = createDefaultTools({ workspace, restrictToWorkspace: false, exec: { denyPatterns: ['\\bcurl\\b'] } });
    const exec = tools.find((tool) => tool.name === 'exec');
    const result = await exec?.execute({ command: 'curl example.com' }, makeContext());
    expect(result?.isError).toBe(true);
    expect(result && textOf(result)).toMatch(/deny pattern/);
  });
});
