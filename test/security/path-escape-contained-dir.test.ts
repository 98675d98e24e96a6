import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createPathPolicy, withContainedDirectory } from '../../src/security/workspace.js';
import { makeTempDir } from '../tools/helpers.js';

function setup(readOnlyDirs?: string[]) {
  const root = makeTempDir('nanobot-contained-');
  const workspace = path.join(root, 'ws');
  const outside = path.join(root, 'outside');
  fs.mkdirSync(workspace);
  fs.mkdirSync(outside);
  const policy = createPathPolicy({ workspace, restrictToWorkspace: true, ...(readOnlyDirs ? { readOnlyDirs } : {}) });
  return { workspace, outside, policy };
}

describe('withContainedDirectory', () => {
  it('creates missing directories one by one and reports them, outermost first', async () => {
    const { workspace, policy } = setup();
    const target = path.join(workspace, 'a', 'b', 'c');
    const seen = await withContainedDirectory(policy, target, async (dir) => {
      fs.writeFileSync(path.join(dir.anchor, 'file.txt'), 'x');
      return dir;
    });
    expect(seen.realPath).toBe(target);
    expect(seen.created).toEqual([path.join(workspace, 'a'), path.join(workspace, 'a', 'b'), target]);
    expect(fs.readFileSync(path.join(target, 'file.txt'), 'utf8')).toBe('x');
  });

  it('refuses a directory that became a symlink to the outside after the policy check', async () => {
    const { workspace, outside, policy } = setup();
    const checked = policy.resolve('sub/deeper', 'write');
    expect(checked.ok).toBe(true);
    fs.symlinkSync(outside, path.join(workspace, 'sub')); // the swap, after the check
    const attempt = withContainedDirectory(policy, path.join(workspace, 'sub', 'deeper'), async () => 'ran');
    await expect(attempt).rejects.toThrow(/resolved to .*outside at write time/);
    expect(fs.readdirSync(outside)).toEqual([]);
  });

  it('refuses a read-only directory inside the workspace', async () => {
    const { workspace, policy } = setup(['media']);
    fs.mkdirSync(path.join(workspace, 'media'));
    await expect(withContainedDirectory(policy, path.join(workspace, 'media'), async () => 'ran')).rejects.toThrow(
      /refusing to write/,
    );
  });

  it('fails when a path component is a regular file', async () => {
    const { workspace, policy } = setup();
    fs.writeFileSync(path.join(workspace, 'file'), '');
    await expect(
      withContainedDirectory(policy, path.join(workspace, 'file', 'sub'), async () => 'ran'),
    ).rejects.toThrow(/ENOTDIR/);
  });
});
