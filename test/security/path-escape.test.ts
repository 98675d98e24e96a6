/**
 * Path-escape corpus: every way out of the workspace we know of, tried against the real file tools with
 * restrictToWorkspace=true. Each attempt must be refused and leave everything outside the workspace
 * byte-for-byte as it was (snapshotted before, compared after).
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createPathPolicy, type PathPolicy } from '../../src/security/workspace.js';
import { createApplyPatchTool } from '../../src/tools/filesystem/apply-patch.js';
import { createEditFileTool } from '../../src/tools/filesystem/edit-file.js';
import { createListDirTool } from '../../src/tools/filesystem/list-dir.js';
import { createReadFileTool } from '../../src/tools/filesystem/read-file.js';
import { createWriteFileTool } from '../../src/tools/filesystem/write-file.js';
import { createFindFilesTool } from '../../src/tools/search/find-files.js';
import { createGrepTool } from '../../src/tools/search/grep.js';
import type { ToolResult } from '../../src/tools/types.js';
import { makeContext, makeTempDir, textOf } from '../tools/helpers.js';

const SECRET = 'top secret';

interface Sandbox {
  root: string;
  workspace: string;
  outside: string;
  home: string;
  evil: string;
  policy: PathPolicy;
}

function makeSandbox(): Sandbox {
  const root = makeTempDir('nanobot-escape-');
  const workspace = path.join(root, 'ws');
  const outside = path.join(root, 'outside');
  const home = path.join(root, 'home');
  const evil = path.join(root, 'ws-evil');
  for (const dir of [workspace, outside, path.join(outside, 'sub'), home, evil]) fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(outside, 'secret.txt'), SECRET);
  fs.writeFileSync(path.join(outside, 'sub', 'deep.txt'), SECRET);
  fs.writeFileSync(path.join(home, 'home-secret.txt'), SECRET);
  fs.writeFileSync(path.join(evil, 'evil.txt'), SECRET);
  fs.writeFileSync(path.join(workspace, 'inside.txt'), 'inside\n');
  fs.symlinkSync(path.join(outside, 'secret.txt'), path.join(workspace, 'link-file'));
  fs.symlinkSync(outside, path.join(workspace, 'link-dir'));
  const policy = createPathPolicy({ workspace, restrictToWorkspace: true, homeDir: home });
  return { root, workspace, outside, home, evil, policy };
}

/** Every path under `root` except the workspace, with file contents and link targets. */
function snapshotOutside(box: Sandbox): Record<string, string> {
  const out: Record<string, string> = {};
  const visit = (dir: string): void => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, entry.name);
      if (full === box.workspace) continue;
      const key = path.relative(box.root, full);
      if (entry.isSymbolicLink()) out[key] = `-> ${fs.readlinkSync(full)}`;
      else if (entry.isDirectory()) {
        out[`${key}/`] = 'dir';
        visit(full);
      } else out[key] = fs.readFileSync(full, 'utf8');
    }
  };
  visit(box.root);
  return out;
}

type ToolName = 'read_file' | 'write_file' | 'edit_file' | 'list_dir' | 'apply_patch' | 'grep' | 'find_files';

function runTool(policy: PathPolicy, tool: ToolName, target: string): Promise<ToolResult[]> {
  const ctx = makeContext();
  const run = {
    read_file: () => [createReadFileTool({ policy }).execute({ path: target }, ctx)],
    write_file: () => [createWriteFileTool({ policy }).execute({ path: target, content: 'pwned' }, ctx)],
    edit_file: () => {
      const edit = createEditFileTool({ policy });
      return [
        edit.execute({ path: target, old_text: SECRET, new_text: 'pwned' }, ctx),
        edit.execute({ path: path.join(target, 'created.txt'), old_text: '', new_text: 'pwned' }, ctx),
      ];
    },
    list_dir: () => [createListDirTool({ policy }).execute({ path: target, recursive: true }, ctx)],
    apply_patch: () => {
      const patch = createApplyPatchTool({ policy });
      return [
        patch.execute({ edits: [{ path: target, action: 'replace', old_text: SECRET, new_text: 'pwned' }] }, ctx),
        patch.execute({ edits: [{ path: path.join(target, 'added.txt'), action: 'add', new_text: 'pwned' }] }, ctx),
      ];
    },
    grep: () => [createGrepTool({ policy }).execute({ pattern: 'secret', path: target, output_mode: 'content' }, ctx)],
    find_files: () => [createFindFilesTool({ policy }).execute({ path: target }, ctx)],
  } satisfies Record<ToolName, () => Promise<ToolResult>[]>;
  return Promise.all(run[tool]());
}

const ALL_TOOLS: ToolName[] = ['read_file', 'write_file', 'edit_file', 'list_dir', 'apply_patch', 'grep', 'find_files'];

/** Each case: the paths to try (some need the sandbox to name them). */
const ESCAPES: Array<{ name: string; targets: (box: Sandbox) => string[] }> = [
  { name: '../ escape to a sibling directory', targets: () => ['../outside/secret.txt', '../outside'] },
  { name: '../ escape hidden behind a subdirectory', targets: () => ['nested/../../outside/secret.txt'] },
  { name: '~ (the home directory)', targets: () => ['~'] },
  { name: '~/… (a file in the home directory)', targets: () => ['~/home-secret.txt'] },
  { name: 'absolute path outside', targets: (box) => [path.join(box.outside, 'secret.txt'), box.outside] },
  { name: 'symlink to a file outside', targets: () => ['link-file'] },
  { name: 'symlink to a directory outside', targets: () => ['link-dir', 'link-dir/secret.txt', 'link-dir/sub'] },
  {
    name: 'prefix-sibling directory (ws-evil next to ws)',
    targets: (box) => ['../ws-evil/evil.txt', path.join(box.evil, 'evil.txt'), box.evil],
  },
  { name: '/dev/* device files', targets: () => ['/dev/zero', '/dev/null', '/dev/stdin', '/dev'] },
  { name: '/proc/self/environ', targets: () => ['/proc/self/environ', '/proc/self/../self/environ'] },
];

describe.each(ESCAPES)('path escape: $name', ({ targets }) => {
  it.each(ALL_TOOLS)('%s refuses it and leaves the outside untouched', async (tool) => {
    const box = makeSandbox();
    const before = snapshotOutside(box);
    for (const target of targets(box)) {
      for (const result of await runTool(box.policy, tool, target)) {
        expect(result.isError, `${tool} ${target}: ${textOf(result)}`).toBe(true);
        expect(textOf(result)).not.toContain(SECRET);
      }
    }
    expect(snapshotOutside(box)).toEqual(before);
  });
});

describe('path escape: $HOME/… is a literal name, never expanded', () => {
  const savedHome = process.env.HOME;
  afterEach(() => {
    process.env.HOME = savedHome;
  });

  it.each(ALL_TOOLS)('%s keeps $HOME inside the workspace', async (tool) => {
    const box = makeSandbox();
    process.env.HOME = box.home;
    const before = snapshotOutside(box);
    for (const result of await runTool(box.policy, tool, '$HOME/home-secret.txt')) {
      expect(textOf(result)).not.toContain(SECRET);
    }
    expect(snapshotOutside(box)).toEqual(before);
    // Whatever was written went to a directory literally named `$HOME` inside the workspace.
    const written = fs.existsSync(path.join(box.workspace, '$HOME'));
    expect(written).toBe(tool === 'write_file' || tool === 'edit_file' || tool === 'apply_patch');
  });
});

describe('path escape: walking the workspace never follows links out', () => {
  it.each(['grep', 'find_files', 'list_dir'] as const)(
    '%s over the whole workspace skips link-dir and link-file',
    async (tool) => {
      const box = makeSandbox();
      const ctx = makeContext();
      const result =
        tool === 'grep'
          ? await createGrepTool({ policy: box.policy }).execute({ pattern: 'secret', output_mode: 'content' }, ctx)
          : tool === 'find_files'
            ? await createFindFilesTool({ policy: box.policy }).execute({ query: 'secret' }, ctx)
            : await createListDirTool({ policy: box.policy }).execute({ path: '.', recursive: true }, ctx);
      expect(textOf(result)).not.toContain(SECRET);
      expect(textOf(result)).not.toMatch(/secret\.txt|deep\.txt/);
    },
  );
});

/**
 * A policy that, right after approving a path under `sub/`, swaps the real directory `sub` for a symlink
 * to the outside: the race a concurrent process (or an earlier exec call) could win between the
 * tool's check and its write.
 */
function racingPolicy(box: Sandbox): PathPolicy {
  const sub = path.join(box.workspace, 'sub');
  fs.mkdirSync(sub);
  fs.writeFileSync(path.join(sub, 'file.txt'), SECRET);
  let swapped = false;
  return {
    workspace: box.policy.workspace,
    restrictToWorkspace: true,
    resolve(input, access) {
      const result = box.policy.resolve(input, access);
      if (!swapped && input.startsWith('sub/')) {
        swapped = true;
        fs.renameSync(sub, path.join(box.workspace, 'sub-moved'));
        fs.symlinkSync(box.outside, sub);
        fs.writeFileSync(path.join(box.outside, 'file.txt'), SECRET);
      }
      return result;
    },
  };
}

type RaceAttempt = (policy: PathPolicy) => Promise<ToolResult>;

const RACES: Record<string, RaceAttempt> = {
  'apply_patch replace': (policy) =>
    createApplyPatchTool({ policy }).execute(
      { edits: [{ path: 'sub/file.txt', action: 'replace', old_text: SECRET, new_text: 'pwned' }] },
      makeContext(),
    ),
  'apply_patch add': (policy) =>
    createApplyPatchTool({ policy }).execute(
      { edits: [{ path: 'sub/new/added.txt', action: 'add', new_text: 'pwned' }] },
      makeContext(),
    ),
  write_file: (policy) =>
    createWriteFileTool({ policy }).execute({ path: 'sub/file.txt', content: 'pwned' }, makeContext()),
  edit_file: (policy) =>
    createEditFileTool({ policy }).execute(
      { path: 'sub/file.txt', old_text: SECRET, new_text: 'pwned' },
      makeContext(),
    ),
};

async function expectRaceRefused(attempt: RaceAttempt): Promise<void> {
  const box = makeSandbox();
  const policy = racingPolicy(box);
  const result = await attempt(policy);
  expect(result.isError, textOf(result)).toBe(true);
  expect(fs.readFileSync(path.join(box.outside, 'file.txt'), 'utf8')).toBe(SECRET);
  expect(fs.existsSync(path.join(box.outside, 'new'))).toBe(false);
  expect(fs.readdirSync(box.outside).sort()).toEqual(['file.txt', 'secret.txt', 'sub']);
}

describe('path escape: directory swapped for a symlink between check and write', () => {
  it.each(Object.keys(RACES))('%s is refused at write time', async (name) => {
    await expectRaceRefused(RACES[name] as RaceAttempt);
  });
});
