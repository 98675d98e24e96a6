/**
 * apply_patch's rollback never removes a directory outside the workspace (red team F9). A write fails late, so the
 * rollback removes the file and the directories the patch created; a sandboxed command swaps a created directory's
 * parent for a symlink to a host directory between the rollback's check and its removal. Removal goes through the
 * opened, verified directory, so the host's empty directory of the same name survives.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createPathPolicy, type PathPolicy } from '../../src/security/workspace.js';
import { createApplyPatchTool } from '../../src/tools/filesystem/apply-patch.js';
import { makeContext, makeTempDir, textOf } from '../tools/helpers.js';

/** A policy that, on the nth check of `target`, swaps `parent` for a symlink to `host` right after answering. */
function swappingPolicy(
  inner: PathPolicy,
  target: string,
  nth: number,
  swap: () => void,
): PathPolicy & { calls: string[] } {
  let seen = 0;
  const calls: string[] = [];
  return {
    ...inner,
    calls,
    resolve(input, access) {
      const verdict = inner.resolve(input, access);
      calls.push(`${access} ${input}`);
      if (input === target && ++seen === nth) swap();
      return verdict;
    },
  };
}

describe('apply_patch rollback with a swapped parent', () => {
  for (const depth of [['made'], ['made', 'deeper'], ['made', 'a', 'b']]) {
    it(`leaves the host's empty ${depth.join('/')} alone`, async () => {
      const workspace = makeTempDir();
      const host = makeTempDir('nanobot-host-');
      fs.mkdirSync(path.join(host, ...depth.slice(1)), { recursive: true });
      fs.writeFileSync(path.join(workspace, 'blocker'), 'not a directory\n');
      const createdDir = path.join(workspace, ...depth);
      const swap = () => {
        // The sandboxed command: move the workspace's new directory away, link its name to the host.
        fs.renameSync(path.join(workspace, depth[0] as string), path.join(workspace, 'moved'));
        fs.symlinkSync(host, path.join(workspace, depth[0] as string));
      };
      const base = createPathPolicy({ workspace, restrictToWorkspace: true });
      // Check 1 of the directory is the write; check 2 is the rollback's removal of the file.
      const policy = swappingPolicy(base, createdDir, 2, swap);
      const tool = createApplyPatchTool({ policy });
      const result = await tool.execute(
        {
          edits: [
            { path: `${depth.join('/')}/new.txt`, action: 'add', new_text: 'new\n' },
            { path: 'blocker/inner.txt', action: 'add', new_text: 'x\n' },
          ],
        },
        makeContext(),
      );
      expect(result.isError, textOf(result)).toBe(true);
      expect(fs.readlinkSync(path.join(workspace, depth[0] as string)), policy.calls.join('\n')).toBe(host);
      // Every host directory is still there.
      for (let i = 1; i <= depth.length; i++) {
        expect(fs.existsSync(path.join(host, ...depth.slice(1, i)))).toBe(true);
      }
    });
  }
});
