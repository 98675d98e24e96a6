/**
 * nanobot's own workspace state against links, FIFOs and dangling links planted where it reads and writes: each
 * module is called directly, and nothing outside the workspace (a canary tree) may be read, created, changed or
 * deleted. Also: memory files and their directory are private (0600 / 0700).
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { syncWorkspaceTemplates } from '../../src/config/onboard.js';
import { readCronStore, updateCronStore } from '../../src/cron/store.js';
import { readActiveTasks } from '../../src/heartbeat/tasks.js';
import { loadDreamPrompt } from '../../src/memory/dream-prompt.js';
import { MemoryGit } from '../../src/memory/git.js';
import { HistoryStore } from '../../src/memory/history.js';
import { sessionsDirFor } from '../../src/session/location.js';
import { installSkill } from '../../src/skills/install.js';
import { SkillsLoader } from '../../src/skills/loader.js';
import { ResultSpill } from '../../src/tools/result-spill.js';
import { queueTrigger, TriggerWatcher } from '../../src/triggers/queue.js';

let base: string;
let ws: string;
let canary: string;
const SECRET = 'CANARY-SECRET-91c4';

function snapshot(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (d: string): void => {
    for (const name of fs.readdirSync(d).sort()) {
      const p = path.join(d, name);
      const s = fs.lstatSync(p);
      out[p] = s.isDirectory() ? 'dir' : `${s.mode} ${s.mtimeMs} ${s.isFile() ? fs.readFileSync(p, 'utf8') : ''}`;
      if (s.isDirectory()) walk(p);
    }
  };
  walk(dir);
  return out;
}

const link = (target: string, at: string): void => {
  fs.mkdirSync(path.dirname(path.join(ws, at)), { recursive: true });
  fs.rmSync(path.join(ws, at), { recursive: true, force: true });
  fs.symlinkSync(target, path.join(ws, at));
};

beforeEach(() => {
  base = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'wsstate-')));
  ws = path.join(base, 'ws');
  canary = path.join(base, 'canary');
  fs.mkdirSync(ws);
  fs.mkdirSync(path.join(canary, 'dir'), { recursive: true });
  fs.writeFileSync(path.join(canary, 'secret.md'), `## Active Tasks\n- leak ${SECRET}\n`);
  fs.writeFileSync(path.join(canary, 'dir', 'a.json'), JSON.stringify({ name: 'x', message: SECRET, createdAt: '' }));
  fs.mkdirSync(path.join(canary, 'dir', 'evil'));
  fs.writeFileSync(path.join(canary, 'dir', 'evil', 'SKILL.md'), `---\nname: evil\ndescription: ${SECRET}\n---\n`);
});
afterEach(() => fs.rmSync(base, { recursive: true, force: true }));

describe('memory files are private', () => {
  it('history.jsonl, its cursors and memory/ are 0600 / 0700, from onboarding and from appends', async () => {
    await syncWorkspaceTemplates(ws);
    const history = new HistoryStore(ws);
    await history.append('first');
    await history.writeDreamCursor(1);
    for (const f of ['memory/history.jsonl', 'memory/.cursor', 'memory/.dream_cursor', 'memory/MEMORY.md']) {
      expect([f, fs.statSync(path.join(ws, f)).mode & 0o777]).toEqual([f, 0o600]);
    }
    expect(fs.statSync(path.join(ws, 'memory')).mode & 0o777).toBe(0o700);
    const fresh = path.join(base, 'fresh');
    await new HistoryStore(fresh).append('x');
    expect(fs.statSync(path.join(fresh, 'memory')).mode & 0o777).toBe(0o700);
    expect(fs.statSync(path.join(fresh, 'memory', 'history.jsonl')).mode & 0o777).toBe(0o600);
  });
});

describe('links planted in the workspace lead nowhere outside', () => {
  it('history: a memory/ link, history/cursor links and a FIFO are refused; nothing outside changes', async () => {
    const before = snapshot(canary);
    link(path.join(canary, 'dir'), 'memory');
    const history = new HistoryStore(ws);
    await expect(history.append('x')).rejects.toThrow(/outside the workspace/);
    expect(history.readAll()).toEqual([]);
    fs.rmSync(path.join(ws, 'memory'));
    link(path.join(canary, 'secret.md'), 'memory/history.jsonl');
    link(path.join(canary, 'missing-cursor'), 'memory/.cursor');
    await expect(history.append('x')).rejects.toThrow(/outside the workspace/);
    await expect(history.trim(0)).rejects.toThrow(/outside the workspace/);
    fs.rmSync(path.join(ws, 'memory/history.jsonl'));
    execFileSync('mkfifo', [path.join(ws, 'memory/history.jsonl')]);
    expect(history.readAll()).toEqual([]);
    await expect(history.append('x')).rejects.toThrow(/FIFO/);
    expect(snapshot(canary)).toEqual(before);
  });

  it('heartbeat, dream prompt, skills: a link out is never read', async () => {
    link(path.join(canary, 'secret.md'), 'HEARTBEAT.md');
    expect(() => readActiveTasks(ws)).toThrow(/outside the workspace/);
    link('../canary/secret.md', 'prompts/dream.md');
    expect(await loadDreamPrompt(ws)).not.toContain(SECRET);
    link(path.join(canary, 'dir', 'evil'), 'skills/evil');
    const loader = new SkillsLoader({ workspace: ws });
    const skills = loader.list();
    expect(skills.map((s) => [s.name, s.status])).toEqual([['evil', 'invalid']]);
    expect(JSON.stringify(skills)).not.toContain(SECRET);
    expect(loader.systemPromptSections().join('')).not.toContain(SECRET);
    link(path.join(canary, 'dir'), 'skills');
    expect(loader.list()).toEqual([]);
  });

  it('cron store: a cron/ link or a jobs.json link is refused (no lock dir, no jobs.json outside)', async () => {
    const before = snapshot(canary);
    link(path.join(canary, 'dir'), 'cron');
    const store = path.join(ws, 'cron', 'jobs.json');
    await expect(readCronStore(store)).rejects.toThrow(/outside the workspace/);
    await expect(updateCronStore(store, () => undefined)).rejects.toThrow(/outside the workspace/);
    fs.rmSync(path.join(ws, 'cron'));
    link(path.join(canary, 'dir', 'a.json'), 'cron/jobs.json');
    await expect(readCronStore(store)).rejects.toThrow(/outside the workspace/);
    expect(snapshot(canary)).toEqual(before);
  });

  it('triggers: a triggers/ link is never run; a trigger file that is a link is moved aside, not run or deleted', async () => {
    const before = snapshot(canary);
    link(path.join(canary, 'dir'), 'triggers');
    const delivered: string[] = [];
    const warnings: string[] = [];
    const log = { debug() {}, info() {}, warn: (m: string) => warnings.push(m), error() {} };
    const watcher = new TriggerWatcher({ workspace: ws, deliver: async (t) => void delivered.push(t.message), log });
    await watcher.drain();
    await expect(queueTrigger(ws, 'n', 'hello')).rejects.toThrow(/Cannot queue the trigger/);
    fs.rmSync(path.join(ws, 'triggers'));
    link(path.join(canary, 'dir', 'a.json'), 'triggers/1-a.json');
    await queueTrigger(ws, 'ok', 'real one');
    await watcher.drain();
    expect(delivered).toEqual(['real one']);
    expect(fs.readdirSync(path.join(ws, 'triggers'))).toEqual(['1-a.json.refused']);
    expect(warnings.join('\n')).toMatch(/triggers: refusing .*outside the workspace/);
    expect(snapshot(canary)).toEqual(before);
  });

  it('tool-result spill: a tool-results link is refused and the prune never deletes outside', async () => {
    const old = new Date(Date.now() - 30 * 24 * 3600 * 1000);
    fs.utimesSync(path.join(canary, 'dir', 'a.json'), old, old);
    const before = snapshot(canary);
    link(path.join(canary, 'dir'), '.nanobot/tool-results');
    const spill = new ResultSpill({ dir: path.join(ws, '.nanobot', 'tool-results'), relativeTo: ws });
    expect(await spill.spill('x'.repeat(5000), 'exec')).toBeUndefined();
    fs.rmSync(path.join(ws, '.nanobot/tool-results'));
    fs.mkdirSync(path.join(ws, '.nanobot/tool-results'));
    fs.symlinkSync(path.join(canary, 'dir', 'a.json'), path.join(ws, '.nanobot/tool-results/old.txt'));
    expect(await spill.spill('y'.repeat(5000), 'exec')).toContain('.nanobot/tool-results/');
    expect(snapshot(canary)).toEqual(before);
  });

  it('memory git: a .git link out is refused; tracked files that are links are not versioned', async () => {
    const before = snapshot(canary);
    link(path.join(canary, 'dir'), '.git');
    fs.writeFileSync(path.join(ws, 'USER.md'), 'a real file to commit');
    const git = new MemoryGit(ws);
    await expect(git.init()).rejects.toThrow(/outside the workspace/);
    await expect(git.commitChanges('x')).rejects.toThrow(/outside the workspace/);
    fs.rmSync(path.join(ws, '.git'));
    link(path.join(canary, 'secret.md'), 'SOUL.md');
    await git.init();
    const blobs = JSON.stringify(await git.log(5));
    expect(blobs).not.toContain(SECRET);
    expect(await git.pendingChanges()).toEqual([]);
    expect(snapshot(canary)).toEqual(before);
  });

  it('onboarding, workspace id and skill install never write through a planted link', async () => {
    const before = snapshot(canary);
    link(path.join(canary, 'new-soul.md'), 'SOUL.md'); // dangling: copyFile would have created it outside
    link(path.join(canary, 'dir'), 'memory');
    await expect(syncWorkspaceTemplates(ws)).rejects.toThrow(/outside the workspace/);
    fs.rmSync(path.join(ws, 'memory'));
    await syncWorkspaceTemplates(ws);
    expect(fs.lstatSync(path.join(ws, 'SOUL.md')).isSymbolicLink()).toBe(true);
    link(path.join(canary, 'dir'), '.nanobot');
    await expect(sessionsDirFor(path.join(base, 'data'), ws)).rejects.toThrow(/outside the workspace/);
    const source = path.join(base, 'src-skill');
    fs.mkdirSync(source);
    fs.writeFileSync(path.join(source, 'SKILL.md'), '---\nname: tea\ndescription: tea things\n---\nBrew.\n');
    link(path.join(canary, 'dir'), 'skills');
    await expect(installSkill(source, { workspace: ws })).rejects.toThrow(/outside the workspace/);
    expect(snapshot(canary)).toEqual(before);
  });
});
