import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createPathPolicy, isPathInside, realpathNearest } from '../../src/security/workspace.js';
import { makeTempDir } from '../tools/helpers.js';

function setup(restrictToWorkspace = true) {
  const root = makeTempDir();
  const workspace = path.join(root, 'ws');
  const outside = path.join(root, 'outside');
  const home = path.join(root, 'home');
  for (const dir of [workspace, outside, home]) fs.mkdirSync(dir);
  fs.writeFileSync(path.join(outside, 'secret.txt'), 'top secret');
  const policy = createPathPolicy({ workspace, restrictToWorkspace, homeDir: home });
  return { root, workspace, outside, home, policy };
}

describe('isPathInside', () => {
  it('does not treat a sibling with the same prefix as inside', () => {
    expect(isPathInside('/ws-evil/file', '/ws')).toBe(false);
    expect(isPathInside('/ws/file', '/ws')).toBe(true);
    expect(isPathInside('/ws', '/ws')).toBe(true);
    expect(isPathInside('/', '/ws')).toBe(false);
  });
});

describe('createPathPolicy (restricted)', () => {
  it('resolves relative paths against the workspace', () => {
    const { workspace, policy } = setup();
    expect(policy.resolve('notes/today.md', 'write')).toEqual({
      ok: true,
      path: path.join(workspace, 'notes/today.md'),
    });
  });

  it('blocks ../ escapes and says it is a hard boundary', () => {
    const { policy } = setup();
    const result = policy.resolve('../outside/secret.txt', 'read');
    expect(result.ok).toBe(false);
    if (!result.ok) {
      expect(result.error).toMatch(/outside the workspace/);
      expect(result.error).toMatch(/hard boundary/);
    }
  });

  it('blocks a sibling directory whose name starts with the workspace name', () => {
    const { root, policy } = setup();
    fs.mkdirSync(path.join(root, 'ws-evil'));
    expect(policy.resolve(path.join(root, 'ws-evil', 'x.txt'), 'write').ok).toBe(false);
  });

  it('blocks a symlink inside the workspace that points outside (read and write)', () => {
    const { workspace, outside, policy } = setup();
    fs.symlinkSync(outside, path.join(workspace, 'link'));
    const read = policy.resolve('link/secret.txt', 'read');
    expect(read.ok).toBe(false);
    if (!read.ok) expect(read.error).toContain(path.join(outside, 'secret.txt'));
    expect(policy.resolve('link/new-file.txt', 'write').ok).toBe(false);
  });

  it('blocks a dangling symlink whose target would be created outside', () => {
    const { workspace, outside, policy } = setup();
    fs.symlinkSync(path.join(outside, 'not-yet.txt'), path.join(workspace, 'dangling'));
    expect(realpathNearest(path.join(workspace, 'dangling'))).toBe(path.join(outside, 'not-yet.txt'));
    expect(policy.resolve('dangling', 'write').ok).toBe(false);
  });

  it('allows a symlink that stays inside the workspace and returns the real target', () => {
    const { workspace, policy } = setup();
    fs.mkdirSync(path.join(workspace, 'real'));
    fs.symlinkSync(path.join(workspace, 'real'), path.join(workspace, 'alias'));
    expect(policy.resolve('alias/file.md', 'write')).toEqual({ ok: true, path: path.join(workspace, 'real/file.md') });
  });

  it('expands ~ and blocks home paths outside the workspace', () => {
    const { policy } = setup();
    expect(policy.resolve('~/.ssh/id_rsa', 'read').ok).toBe(false);
    expect(policy.resolve('~', 'read').ok).toBe(false);
  });

  it('blocks device files even when they would otherwise be allowed', () => {
    const { workspace } = setup();
    const open = createPathPolicy({ workspace, restrictToWorkspace: false });
    for (const device of ['/dev/zero', '/dev/random', '/proc/self/environ']) {
      const result = open.resolve(device, 'read');
      expect(result.ok, device).toBe(false);
    }
  });

  it('treats readOnlyDirs as readable but not writable', () => {
    const { workspace, home } = setup();
    const media = path.join(workspace, 'media');
    fs.mkdirSync(media);
    const policy = createPathPolicy({ workspace, restrictToWorkspace: true, readOnlyDirs: [media], homeDir: home });
    expect(policy.resolve('media/photo.png', 'read').ok).toBe(true);
    const write = policy.resolve('media/photo.png', 'write');
    expect(write.ok).toBe(false);
    if (!write.ok) expect(write.error).toMatch(/read-only/);
  });

  it('lets extraReadDirs be read but not written', () => {
    const { workspace, outside, home } = setup();
    const policy = createPathPolicy({ workspace, restrictToWorkspace: true, extraReadDirs: [outside], homeDir: home });
    expect(policy.resolve(path.join(outside, 'secret.txt'), 'read').ok).toBe(true);
    expect(policy.resolve(path.join(outside, 'secret.txt'), 'write').ok).toBe(false);
  });

  it('rejects empty paths', () => {
    const { policy } = setup();
    expect(policy.resolve('  ', 'read').ok).toBe(false);
  });
});

describe('createPathPolicy (unrestricted)', () => {
  it('allows paths outside the workspace and expands ~', () => {
    const { outside, home, policy } = setup(false);
    expect(policy.resolve(path.join(outside, 'secret.txt'), 'read')).toEqual({
      ok: true,
      path: path.join(outside, 'secret.txt'),
    });
    expect(policy.resolve('~/notes.md', 'write')).toEqual({ ok: true, path: path.join(home, 'notes.md') });
  });
});
