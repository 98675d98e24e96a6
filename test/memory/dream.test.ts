import fs from 'node:fs';
import path from 'node:path';
import git from 'isomorphic-git';
import { describe, expect, it } from 'vitest';
import { AgentRunner } from '../../src/agent/runner.js';
import { Dream, type DreamOptions } from '../../src/memory/dream.js';
import { dreamCommand, dreamLogCommand, dreamRestoreCommand } from '../../src/memory/dream-commands.js';
import { HistoryStore } from '../../src/memory/history.js';
import type { ChatMessage } from '../../src/providers/types.js';
import { call, FakeProvider, type Scripted } from '../helpers/fake-provider.js';
import { makeWorkspace, ORIGINAL_MEMORY, read, writeHistory } from './dream-helpers.js';

const ADDED_FACT = '- garden-bot: new project (2026-05-01)';

function setup(script: Scripted[], options: Partial<DreamOptions> = {}, workspace = makeWorkspace()) {
  const history = new HistoryStore(workspace).asDreamSource();
  const dream = new Dream({ workspace, history, runner: (spec) => new AgentRunner(spec), ...options });
  const provider = new FakeProvider(script);
  const runOptions = { provider, model: 'fake-model', maxTokens: 1000 };
  return { workspace, history, dream, provider, runOptions };
}

const editMemory = () =>
  call('edit_file', {
    path: 'memory/MEMORY.md',
    old_text: '- nanobot-ts: TypeScript port',
    new_text: `- nanobot-ts: TypeScript port\n${ADDED_FACT}`,
  });

const blobAt = async (workspace: string, oid: string, filepath: string) =>
  Buffer.from((await git.readBlob({ fs, dir: workspace, oid, filepath })).blob).toString('utf8');

const toolResults = (messages: ChatMessage[] | undefined) =>
  (messages ?? []).filter((m) => m.role === 'tool').map((m) => String(m.content));

describe('Dream', () => {
  it('commits an edit to MEMORY.md with a message from the real diff and advances the cursor', async () => {
    const { workspace, dream, provider, runOptions } = setup([
      { toolCalls: [editMemory()] },
      { content: 'Added garden-bot to MEMORY.md.' },
    ]);
    const report = await dream.run(runOptions);

    expect(report.stopReason).toBe('completed');
    expect(report.entriesProcessed).toBe(2);
    expect(report.cursorAfter).toBe(2);
    expect(report.filesChanged).toEqual(['memory/MEMORY.md']);
    expect(report.tokensUsed).toBe(30);
    expect(read(workspace, 'memory/MEMORY.md')).toContain(ADDED_FACT);
    expect(read(workspace, 'memory/.dream_cursor').trim()).toBe('2');

    // The model saw the files and the history, with the restricted tools only.
    const request = provider.requests[0];
    expect(request?.tools?.map((t) => t.function.name)).toEqual(['edit_file', 'read_file', 'write_file']);
    expect(String(request?.messages[1]?.content)).toContain('User started a project called garden-bot.');
    expect(String(request?.messages[1]?.content)).toContain('- nanobot-ts: TypeScript port');

    const [head, baseline] = await git.log({ fs, dir: workspace });
    expect(head?.oid).toBe(report.sha);
    expect(head?.commit.message).toMatch(/^dream: MEMORY\.md \+1\n/);
    expect(head?.commit.message).toContain(`+ ${ADDED_FACT}`);
    expect(head?.commit.author.name).toBe('nanobot');
    expect(baseline?.commit.message.trim()).toBe('memory: baseline');
    expect(await blobAt(workspace, head?.oid ?? '', 'memory/MEMORY.md')).toContain(ADDED_FACT);
    expect((await blobAt(workspace, head?.oid ?? '', 'memory/.dream_cursor')).trim()).toBe('2');
    // history.jsonl is never versioned.
    expect(await git.listFiles({ fs, dir: workspace, ref: 'HEAD' })).not.toContain('memory/history.jsonl');

    const shown = await dreamLogCommand(dream.git, report.sha?.slice(0, 8));
    expect(shown).toContain('--- a/memory/MEMORY.md');
    expect(shown).toContain(`+${ADDED_FACT}`);
    expect(shown).toContain('@@ -2,3 +2,4 @@');
  });

  it('/dream-restore <sha> brings the old file back and records the restore as a commit', async () => {
    const { workspace, dream, runOptions } = setup([{ toolCalls: [editMemory()] }, { content: 'done' }]);
    const report = await dream.run(runOptions);
    const sha = report.sha ?? '';

    const candidates = await dreamRestoreCommand(dream.git);
    expect(candidates).toContain(sha.slice(0, 8));

    const reply = await dreamRestoreCommand(dream.git, sha.slice(0, 8));
    expect(reply).toContain('Restored memory/MEMORY.md');
    expect(read(workspace, 'memory/MEMORY.md')).toBe(ORIGINAL_MEMORY);
    // The cursor stays: undone edits must not be re-applied by the next Dream.
    expect(read(workspace, 'memory/.dream_cursor').trim()).toBe('2');

    const [head] = await git.log({ fs, dir: workspace, depth: 1 });
    expect(head?.commit.message).toContain(`as before ${sha.slice(0, 8)}`);
    expect(await blobAt(workspace, head?.oid ?? '', 'memory/MEMORY.md')).toBe(ORIGINAL_MEMORY);
    expect(await dreamRestoreCommand(dream.git, 'zzzz')).toMatch(/not a commit id/);
  });

  it('refuses to shrink MEMORY.md from 10 KB to 171 bytes and leaves the file unchanged', async () => {
    const workspace = makeWorkspace();
    const big = `# Memory\n${'- a durable fact worth keeping around for later\n'.repeat(210)}`;
    fs.writeFileSync(path.join(workspace, 'memory/MEMORY.md'), big);
    const truncated = `# Memory\n${'x'.repeat(161)}\n`;
    expect(Buffer.byteLength(truncated)).toBe(171);
    const { dream, provider, runOptions } = setup(
      [
        { toolCalls: [call('write_file', { path: 'memory/MEMORY.md', content: truncated })] },
        { toolCalls: [call('edit_file', { path: 'memory/MEMORY.md', old_text: big, new_text: truncated })] },
        { content: 'gave up' },
      ],
      {},
      workspace,
    );
    const report = await dream.run(runOptions);

    expect(read(workspace, 'memory/MEMORY.md')).toBe(big);
    expect(report.filesChanged).toEqual([]);
    const results = toolResults(provider.requests[2]?.messages);
    expect(results).toHaveLength(2);
    for (const result of results) {
      expect(result).toMatch(/Refused: this would shrink memory\/MEMORY\.md from \d+ to 171 bytes/);
      expect(result).toContain('confirm_shrink: true');
    }
  });

  it('allows the same shrink with confirm_shrink: true', async () => {
    const workspace = makeWorkspace();
    const big = `# Memory\n${'- duplicated line\n'.repeat(600)}`;
    fs.writeFileSync(path.join(workspace, 'memory/MEMORY.md'), big);
    const compact = '# Memory\n- duplicated line\n';
    const { dream, runOptions } = setup(
      [
        {
          toolCalls: [call('write_file', { path: 'memory/MEMORY.md', content: compact, confirm_shrink: true })],
        },
        { content: 'Deduplicated.' },
      ],
      {},
      workspace,
    );
    const report = await dream.run(runOptions);
    expect(read(workspace, 'memory/MEMORY.md')).toBe(compact);
    expect(report.filesChanged).toEqual(['memory/MEMORY.md']);
    expect((await dream.git.log(1))[0]?.message).toMatch(/^dream: MEMORY\.md -599/);
  });

  it('cannot modify history.jsonl, the cursor or files outside its set (nanobot test 28)', async () => {
    const workspace = makeWorkspace();
    const historyBefore = read(workspace, 'memory/history.jsonl');
    const attempts = [
      call('write_file', { path: 'memory/history.jsonl', content: '' }),
      call('edit_file', { path: 'memory/history.jsonl', old_text: 'Berlin', new_text: 'Paris' }),
      call('write_file', { path: 'memory/.dream_cursor', content: '999' }),
      call('write_file', { path: 'AGENTS.md', content: 'obey' }),
      call('write_file', { path: 'MEMORY.md', content: 'wrong place' }),
      call('write_file', { path: '.git/config', content: '' }),
      call('write_file', { path: 'skills/x/notes.md', content: 'no' }),
      call('write_file', { path: '../escape.md', content: 'no' }),
    ];
    const { dream, provider, runOptions } = setup(
      [
        { toolCalls: attempts },
        { toolCalls: [call('write_file', { path: 'skills/weather/SKILL.md', content: '---\nname: weather\n---\n' })] },
        { content: 'done' },
      ],
      {},
      workspace,
    );
    const report = await dream.run(runOptions);

    const results = toolResults(provider.requests[1]?.messages);
    expect(results).toHaveLength(attempts.length);
    for (const result of results) expect(result).toMatch(/^Error/);
    expect(results[0]).toContain('Dream may only write');
    expect(read(workspace, 'memory/history.jsonl')).toBe(historyBefore);
    expect(fs.existsSync(path.join(workspace, 'AGENTS.md'))).toBe(false);
    expect(fs.existsSync(path.join(workspace, 'MEMORY.md'))).toBe(false);
    expect(fs.existsSync(path.join(workspace, 'skills/x/notes.md'))).toBe(false);
    expect(fs.existsSync(path.join(workspace, '..', 'escape.md'))).toBe(false);
    // The cursor holds what the completed run set, not what the model wrote.
    expect(read(workspace, 'memory/.dream_cursor').trim()).toBe('2');
    // A skill is an allowed target and is versioned.
    expect(report.filesChanged).toEqual(['skills/weather/SKILL.md']);
    expect(await git.listFiles({ fs, dir: workspace, ref: 'HEAD' })).toContain('skills/weather/SKILL.md');
  });

  it('does not advance the cursor when the provider fails', async () => {
    const { workspace, dream, runOptions } = setup([
      { toolCalls: [editMemory()] },
      { finishReason: 'error', error: { kind: 'server', message: 'upstream exploded', retryable: false } },
    ]);
    const report = await dream.run(runOptions);

    expect(report.stopReason).toBe('error');
    expect(report.cursorAfter).toBe(0);
    expect(report.summary).toContain('upstream exploded');
    expect(fs.existsSync(path.join(workspace, 'memory/.dream_cursor'))).toBe(false);
    // The edit it did make is committed, so it can be reviewed and undone.
    expect(report.filesChanged).toEqual(['memory/MEMORY.md']);
    expect((await dream.git.log(1))[0]?.message).toMatch(/^dream: MEMORY\.md \+1 \(incomplete: error\)/);
  });

  it('stops at the token budget without advancing the cursor', async () => {
    const usage = { promptTokens: 90, completionTokens: 20 };
    const { dream, runOptions, provider } = setup(
      [
        { toolCalls: [call('read_file', { path: 'USER.md' })], usage },
        { toolCalls: [call('read_file', { path: 'SOUL.md' })], usage },
        { content: 'never reached', usage },
      ],
      { maxTotalTokens: 200 },
    );
    const report = await dream.run(runOptions);
    expect(report.stopReason).toBe('token_cap');
    expect(report.tokensUsed).toBe(220);
    expect(report.cursorAfter).toBe(0);
    expect(provider.requests).toHaveLength(2);
  });

  it('makes no LLM call when there is no new history', async () => {
    const { dream, provider, runOptions, workspace } = setup([{ content: 'unused' }]);
    writeHistory(workspace, []);
    const reply = await dreamCommand(dream, runOptions);
    expect(reply).toBe('No new history since the last Dream.');
    expect(provider.requests).toHaveLength(0);
  });

  it('picks up only entries after the cursor and uses prompts/dream.md when present', async () => {
    const workspace = makeWorkspace();
    fs.writeFileSync(path.join(workspace, 'memory/.dream_cursor'), '1\n');
    fs.mkdirSync(path.join(workspace, 'prompts'));
    fs.writeFileSync(path.join(workspace, 'prompts/dream.md'), 'Custom dream rules.');
    const { dream, provider, runOptions } = setup([{ content: 'Nothing worth keeping.' }], {}, workspace);
    const report = await dream.run(runOptions);

    expect(report.entriesProcessed).toBe(1);
    expect(report.cursorAfter).toBe(2);
    expect(provider.requests[0]?.messages[0]?.content).toBe('Custom dream rules.');
    const input = String(provider.requests[0]?.messages[1]?.content);
    expect(input).not.toContain('moved to Berlin');
    expect(input).toContain('garden-bot');
    // Only the cursor moved: committed with a message saying no memory changed.
    expect(report.filesChanged).toEqual([]);
    expect((await dream.git.log(1))[0]?.message).toMatch(/^dream: no memory changes/);
  });

  it('commits edits made outside Dream separately before its own commit', async () => {
    const workspace = makeWorkspace();
    const first = setup([{ content: 'nothing' }], {}, workspace);
    await first.dream.run(first.runOptions);
    fs.writeFileSync(path.join(workspace, 'USER.md'), '# User\n- Name: Ada\n');
    writeHistory(workspace, [{ cursor: 3, timestamp: '2026-05-02 10:00', content: 'garden-bot shipped' }]);
    const second = setup([{ toolCalls: [editMemory()] }, { content: 'done' }], {}, workspace);
    const report = await second.dream.run(second.runOptions);

    expect(report.filesChanged).toEqual(['memory/MEMORY.md']);
    const log = await dreamLogCommand(second.dream.git);
    expect(log).toMatch(/dream: MEMORY\.md \+1[\s\S]*memory: edits made outside Dream[\s\S]*memory: baseline/);
  });
});
