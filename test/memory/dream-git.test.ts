import fs from 'node:fs';
import path from 'node:path';
import git from 'isomorphic-git';
import { describe, expect, it } from 'vitest';
import { unifiedDiff } from '../../src/memory/dream-line-diff.js';
import { isTrackedMemoryPath, MemoryGit } from '../../src/memory/git.js';
import { makeWorkspace, ORIGINAL_MEMORY, read } from './dream-helpers.js';

describe('MemoryGit', () => {
  it('tracks only the memory files and commits nothing when nothing changed', async () => {
    const workspace = makeWorkspace();
    fs.writeFileSync(path.join(workspace, 'AGENTS.md'), 'agents');
    const memory = new MemoryGit(workspace);
    await memory.init();
    await memory.init();

    const log = await memory.log();
    expect(log.map((c) => c.message)).toEqual(['memory: baseline']);
    expect(await memory.commitChanges('nothing')).toBeUndefined();
    const detail = await memory.show(log[0]?.sha ?? '');
    expect(detail.changes.map((c) => c.path)).toEqual(['SOUL.md', 'USER.md', 'memory/MEMORY.md']);
    expect(isTrackedMemoryPath('memory/history.jsonl')).toBe(false);
    expect(isTrackedMemoryPath('skills/a/SKILL.md')).toBe(true);
    expect(isTrackedMemoryPath('skills/../SKILL.md')).toBe(false);
  });

  it('keeps git status quiet: everything but the tracked files is ignored in a repo it created', async () => {
    const workspace = makeWorkspace();
    await new MemoryGit(workspace).init();
    const ignored = async (filepath: string) => git.isIgnored({ fs, dir: workspace, filepath });
    for (const file of ['AGENTS.md', 'memory/history.jsonl', 'skills/a/notes.md', 'sessions/x.jsonl']) {
      expect(await ignored(file)).toBe(true);
    }
    for (const file of ['SOUL.md', 'USER.md', 'memory/MEMORY.md', 'memory/.dream_cursor', 'skills/a/SKILL.md']) {
      expect(await ignored(file)).toBe(false);
    }
  });

  it('restores a deleted file and removes a file the commit created; refuses the first commit', async () => {
    const workspace = makeWorkspace();
    const memory = new MemoryGit(workspace);
    await memory.init();
    fs.rmSync(path.join(workspace, 'memory/MEMORY.md'));
    fs.mkdirSync(path.join(workspace, 'skills/new'), { recursive: true });
    fs.writeFileSync(path.join(workspace, 'skills/new/SKILL.md'), 'skill');
    const sha = (await memory.commitChanges('dream: changes')) ?? '';
    expect(sha).toMatch(/^[0-9a-f]{40}$/);

    const { restored } = await memory.restore(sha);
    expect(restored).toEqual(['memory/MEMORY.md', 'skills/new/SKILL.md']);
    expect(read(workspace, 'memory/MEMORY.md')).toBe(ORIGINAL_MEMORY);
    expect(fs.existsSync(path.join(workspace, 'skills/new/SKILL.md'))).toBe(false);
    expect(await memory.pendingChanges()).toEqual([]);

    const first = (await memory.log()).at(-1)?.sha ?? '';
    await expect(memory.restore(first)).rejects.toThrow(/first commit/);
    await expect(memory.show('abcdef12')).rejects.toThrow(/No memory commit/);
  });
});

describe('unifiedDiff', () => {
  it('renders separate hunks with context and git line numbers', () => {
    const before = `${Array.from({ length: 20 }, (_, i) => `line ${i + 1}`).join('\n')}\n`;
    const after = before.replace('line 2\n', 'line two\n').replace('line 18\n', '');
    expect(unifiedDiff('f.md', before, after)).toBe(
      [
        '--- a/f.md',
        '+++ b/f.md',
        '@@ -1,5 +1,5 @@',
        ' line 1',
        '-line 2',
        '+line two',
        ' line 3',
        ' line 4',
        ' line 5',
        '@@ -15,6 +15,5 @@',
        ' line 15',
        ' line 16',
        ' line 17',
        '-line 18',
        ' line 19',
        ' line 20',
      ].join('\n'),
    );
    expect(unifiedDiff('f.md', undefined, 'a\n')).toBe('--- /dev/null\n+++ b/f.md\n@@ -0,0 +1,1 @@\n+a');
    expect(unifiedDiff('f.md', 'same\n', 'same\n')).toBe('');
  });
});

describe('MemoryGit across instances', () => {
  it('serialises two instances of one workspace (Dream, the WebUI, a command): one never sees the other half-done', async () => {
    const workspace = makeWorkspace();
    const dream = new MemoryGit(workspace);
    const webui = new MemoryGit(path.join(workspace, '.'));
    const init = dream.init();
    // Asked while the first instance is still creating the repository: it waits for the baseline.
    const log = await webui.log();
    await init;
    expect(log.map((c) => c.message)).toEqual(['memory: baseline']);
  });
});
